"""fio: sequential (and 4 KiB random-read) file-system workloads, as command-line options,
with JSON results.

Study S2 writes and reads large files in big blocks (the paper: a 4 GB file
in 1 MB blocks, sequential; more clients as it goes) on NFS and on a parallel
file system. :class:`FioJob` is one such job, turned into fio's own
command-line options (``fio --name=... --rw=write ...``: no job file to copy
onto a node); :func:`parse_fio_json` reads ``--output-format=json``.

What fio reports, and what is taken from it (fio 3.33, Debian 12; a real
sample is in tests/unit/tools/data/):

* ``jobs``: one object per job -- or, with ``group_reporting``, one per
  reporting group (``groupid``), its numbers summed over the group's
  ``numjobs`` clones. Without group_reporting the clones are summed here
  by ``groupid``, so both read the same.
* per direction (``read``/``write``; a ``randread`` job's reads are under
  ``read``, and :func:`parse_fio_json` names them ``randread`` from the
  job's options): ``io_bytes`` moved, ``runtime`` in
  milliseconds, ``iops``, and ``clat_ns`` (completion latency: from the
  I/O's submission to its completion, in ns, with its sample count ``N``).
* ``runtime`` counts the time the job did I/O; for a write with
  ``end_fsync`` it includes the final fsync (fio's ``end_fsync``: "fsync
  the file contents when a write stage has completed"), so the data is on
  the server's storage before the clock stops -- what a network file
  system study must time, or it measures the client's page cache.

Throughput is given in MB/s with **1 MB = 10^6 bytes** (fio's own ``bw``
field is in KiB/s): bytes moved over the group's longest runtime.

A read job reads the files a write job of the same ``name`` and
``directory`` laid out (``NAME.J.0``, one per clone). fio lays out a file
that is missing before reading it, which is a write: run the write first.
A ``randread`` job reads ``block_size`` blocks at random offsets of its
file(s) (study S2: the disk's seek cost, 4 KiB with ``direct``, over an
existing file given as ``filename``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..errors import CommandFailed, HarnessError, SpecError
from ..nodes import Node
from .registry import Tool

FIO = Tool("fio", "fio --version", "fio")

RW = ("write", "read", "randread")  # the access patterns a job may have
#: the directions fio's JSON reports per job, and the pattern that a direction's numbers
#: are named after when the job's ``rw`` is a random one
DIRECTIONS = ("write", "read")
RANDOM = {"read": "randread"}
IOENGINES = ("psync", "sync", "libaio", "io_uring", "posixaio")
MAX_JOBS = 256  # fio's own limit per job section is higher; a study never needs more clients
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
# An absolute path without characters fio's option parser splits on (':' separates
# several files in --filename, ',' several values) or that a shell would read.
PATH = re.compile(r"^/[A-Za-z0-9_./@+-]*\Z")  # what a directory or file name may be
_PATH = PATH


@dataclass(frozen=True)
class FioJob:
    """One fio job: ``numjobs`` clones, each moving ``size`` bytes, sequentially (``write``,
    ``read``) or in blocks at random offsets (``randread``).

    Exactly one of ``directory`` (fio makes ``NAME.J.0`` in it per clone) and
    ``filename`` (every clone uses that one file) is given. ``runtime_s``
    makes the job time-based: it loops over its file until the time is up.
    ``fsync`` (writes): fsync after every ``fsync`` blocks; ``end_fsync``
    (writes, default on): one fsync at the end, inside the timed run.
    ``direct``: O_DIRECT, bypassing the client's page cache.
    """

    name: str
    rw: str
    block_size: int  # bytes
    size: int  # bytes per clone
    directory: str | None = None
    filename: str | None = None
    numjobs: int = 1
    direct: bool = False
    runtime_s: float | None = None
    ioengine: str = "psync"
    fsync: int = 0
    end_fsync: bool = True
    group_reporting: bool = True

    def check(self) -> None:
        """SpecError naming every problem, before anything runs."""
        problems = []
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            problems.append(f"name {self.name!r} is not 1-64 letters, digits, '_', '.', '-'")
        if self.rw not in RW:
            problems.append(f"rw {self.rw!r} is not one of {', '.join(RW)}")
        for what, value in (("block_size", self.block_size), ("size", self.size),
                            ("numjobs", self.numjobs)):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                problems.append(f"{what} {value!r} is not a whole number > 0")
        if isinstance(self.numjobs, int) and self.numjobs > MAX_JOBS:
            problems.append(f"numjobs {self.numjobs} is more than {MAX_JOBS}")
        if (isinstance(self.size, int) and isinstance(self.block_size, int)
                and 0 < self.size < self.block_size):
            problems.append(f"size {self.size} is smaller than one block ({self.block_size})")
        if (self.directory is None) == (self.filename is None):
            problems.append("give exactly one of directory and filename")
        for what, path in (("directory", self.directory), ("filename", self.filename)):
            if path is not None and (not isinstance(path, str) or not _PATH.match(path)
                                     or "/../" in f"{path}/"):
                problems.append(f"{what} {path!r} is not an absolute path of letters, digits "
                                "and _ . / @ + - (no '..')")
        if self.runtime_s is not None and not (isinstance(self.runtime_s, (int, float))
                                               and 0 < self.runtime_s <= 86400):
            problems.append(f"runtime_s {self.runtime_s!r} is not in (0, 86400] seconds")
        if self.ioengine not in IOENGINES:
            problems.append(f"ioengine {self.ioengine!r} is not one of {', '.join(IOENGINES)}")
        if not isinstance(self.fsync, int) or isinstance(self.fsync, bool) or self.fsync < 0:
            problems.append(f"fsync {self.fsync!r} is not a whole number >= 0")
        if self.rw != "write" and self.fsync:
            problems.append("fsync applies to writes only")
        if problems:
            raise SpecError(f"fio job {self.name!r}: " + "; ".join(problems),
                            "sizes are bytes (e.g. 1048576 for 1 MiB), rw 'write', 'read' or "
                            "'randread', "
                            "paths absolute on the node")

    def argv(self) -> list[str]:
        """``fio`` and its options for this job, JSON output (checked first)."""
        self.check()
        argv = ["fio", f"--name={self.name}"]
        if self.directory is not None:
            argv.append(f"--directory={self.directory}")
        else:
            argv.append(f"--filename={self.filename}")
        argv += [f"--rw={self.rw}", f"--bs={self.block_size}", f"--size={self.size}",
                 f"--numjobs={self.numjobs}", f"--direct={int(self.direct)}",
                 f"--ioengine={self.ioengine}"]
        if self.rw == "write":
            if self.fsync:
                argv.append(f"--fsync={self.fsync}")
            if self.end_fsync:
                argv.append("--end_fsync=1")
        if self.runtime_s is not None:
            argv += ["--time_based", f"--runtime={self.runtime_s:g}s"]
        if self.group_reporting:
            argv.append("--group_reporting")
        argv.append("--output-format=json")
        return argv


@dataclass(frozen=True)
class FioResult:
    """One reporting group of one fio run, in one direction (units in the names); ``rw``
    is ``write``, ``read`` or, for a random-read job's reads, ``randread``.

    ``mb_per_s``: ``bytes`` / ``runtime_s`` in MB/s, 1 MB = 10^6 bytes.
    ``clat_mean_us``: mean completion latency over all the group's I/Os.
    """

    name: str
    rw: str
    numjobs: int
    bytes: int
    runtime_s: float
    mb_per_s: float
    iops: float
    clat_mean_us: float | None


def _json_part(text: str) -> dict:
    """fio's JSON document; fio may print warnings ("fio: ...") before it."""
    start = text.find("{")
    if start < 0:
        raise HarnessError(f"fio printed no JSON result: {text.strip()[-300:]!r}",
                           "run the same fio command on the node to see its error")
    try:
        return json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise HarnessError(f"fio's JSON output is not readable ({exc}): "
                           f"{text[start:start + 200]!r}") from None


def parse_fio_json(text: str) -> list[FioResult]:
    """Each reporting group's result per direction that moved data, in group order."""
    data = _json_part(text)
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise HarnessError("fio's JSON output has no jobs", "was the job given any work?")
    groups: dict[int, list[dict]] = {}
    for job in jobs:
        if job.get("error"):
            raise HarnessError(f"fio job {job.get('jobname')!r} failed with error "
                               f"{job['error']} (an errno)",
                               "check the path, its free space and permissions on the node")
        groups.setdefault(int(job.get("groupid", 0)), []).append(job)
    results = []
    for _gid, members in sorted(groups.items()):
        # group_reporting: one entry per group, its clones counted in numjobs; without it
        # one entry per clone
        clones = len(members) if len(members) > 1 else \
            int(members[0].get("job options", {}).get("numjobs", 1))
        pattern = str(members[0].get("job options", {}).get(
            "rw", data.get("global options", {}).get("rw", "")))
        for direction in DIRECTIONS:
            stats = [m[direction] for m in members
                     if m.get(direction, {}).get("io_bytes", 0) > 0]
            if not stats:
                continue
            moved = sum(int(s["io_bytes"]) for s in stats)
            runtime = max(float(s["runtime"]) for s in stats) / 1000.0  # ms -> s
            samples = sum(int(s.get("clat_ns", {}).get("N", 0)) for s in stats)
            clat = (sum(float(s["clat_ns"]["mean"]) * int(s["clat_ns"]["N"]) for s in stats
                        if s.get("clat_ns", {}).get("N")) / samples / 1000.0) if samples else None
            results.append(FioResult(
                name=str(members[0].get("jobname", "")),
                rw=RANDOM[direction] if RANDOM.get(direction) == pattern else direction,
                numjobs=clones,
                bytes=moved, runtime_s=runtime,
                mb_per_s=moved / runtime / 1e6 if runtime > 0 else float("nan"),
                iops=sum(float(s.get("iops", 0.0)) for s in stats), clat_mean_us=clat))
    if not results:
        raise HarnessError("fio moved no data in any job", "is the file empty, or size 0?")
    return results


def run_fio(node: Node, job: FioJob, timeout: float | None = None) -> list[FioResult]:
    """Run ``job`` on ``node`` and return its results (SpecError before anything runs).

    ``timeout`` defaults to the job's runtime plus 5 minutes, or 30 minutes
    for a size-bound job (a 4 GB file at 10 MB/s takes 7 minutes).
    """
    argv = job.argv()
    if timeout is None:
        timeout = (job.runtime_s + 300.0) if job.runtime_s else 1800.0
    res = node.run(argv, timeout=timeout, check=False, track=True)
    if not res.ok:
        try:
            parse_fio_json(res.stdout)
        except HarnessError as exc:
            raise HarnessError(f"on {node.name}: {exc.message}: {res.stderr.strip()[-300:]}",
                               exc.hint) from None
        raise CommandFailed(res)
    return parse_fio_json(res.stdout)
