"""Slurm as the engine: the batch script of a run or a sweep, checked and submitted.

``harness run NB --slurm "OPTIONS"`` and ``harness batch SWEEP --slurm "OPTIONS"`` do not
schedule anything themselves: they write one sbatch script (a job array for a sweep, one
task per point without a complete run) and hand it to the cluster's own ``sbatch``. Each
job allocates as many nodes as the study has machine roles, ``--exclusive`` (so no two
measurements share a node), and runs ``harness run NB --inventory slurm`` there, which
maps the allocation's hosts onto the study's roles (``harness.slurm.allocation``).

The user's options are Slurm's own vocabulary (``--partition``, ``--account``, ``--time``,
``--qos``, ``--constraint``, ...), passed through untouched; only the few the harness sets
itself are refused. Before anything is submitted or recorded the whole script goes through
``sbatch --test-only``, so a bad option is refused with Slurm's own message.

Why ``exec`` in the script: the harness then is the batch step's main process, and the
SIGTERM that ``scancel`` or a time limit sends (then SIGKILL after the cluster's
KillWait) reaches it directly; it unwinds like Ctrl-C, undoes every change from the run's
journal and marks the run incomplete. On this machine's test cluster (KillWait 30 s) an
scancelled ping-study run was undone well within that (tests/integration/slurm).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import HarnessError, SpecError

#: Options the harness sets itself, from the study and the sweep: given by the user they
#: would break the one-job-per-point, one-node-per-role rule or move the job's log.
OWN_OPTIONS = {"-N": "--nodes", "--nodes": "--nodes", "-a": "--array", "--array": "--array",
               "-o": "--output", "--output": "--output", "-e": "--error", "--error": "--error",
               "--wrap": "--wrap", "-n": "--ntasks", "--ntasks": "--ntasks",
               "-W": "--wait", "--wait": "--wait", "--test-only": "--test-only",
               "--parsable": "--parsable", "-D": "--chdir", "--chdir": "--chdir"}
#: sbatch's short options that take a value (``man sbatch``): in a cluster of short options
#: (``-vN2``) every letter before the first of these is an option of its own.
SHORT_WITH_VALUE = frozenset("AabBCcDdeFGiJLMNnopqStwx")
#: A job's log: one file per job (or array task) in the data folder's slurm/logs.
LOG_PATTERN = {False: "%j.out", True: "%A_%a.out"}
SUBMIT_TIMEOUT = 60


class SlurmError(HarnessError):
    """Slurm refused or failed a request (its own message is quoted)."""


def own_option(arg: str) -> tuple[list[str], str]:
    """Which of :data:`OWN_OPTIONS` ``arg`` sets as sbatch reads it (none: an empty list),
    and how, when not by its very name. sbatch parses with getopt_long, which takes an
    unambiguous beginning of a long option's name as the option (``--outp`` is ``--output``)
    and a cluster of short options as one option each (``-vN2`` is ``-v -N 2``), so both are
    matched, not only the names as written. A beginning of several (``--n``: ``--nodes``,
    ``--ntasks``) names them all: sbatch refuses it as ambiguous or reads one of them."""
    name = arg.split("=", 1)[0]
    if name in OWN_OPTIONS:
        return [OWN_OPTIONS[name]], ""
    if name.startswith("--") and len(name) > 2:
        longs = sorted({full for full in OWN_OPTIONS.values() if full.startswith(name)})
        return longs, (f"as {name}, an abbreviation of {' or '.join(longs)}: sbatch takes any "
                       "unambiguous beginning of an option's name for the option")
    if name.startswith("-") and not name.startswith("--"):
        for at, letter in enumerate(name[1:]):
            short = f"-{letter}"
            if short in OWN_OPTIONS:
                return [OWN_OPTIONS[short]], "" if at == 0 else (
                    f"as {short} inside {name}: sbatch reads a cluster of short options as "
                    "one option each")
            if letter in SHORT_WITH_VALUE or not letter.isalpha():
                break  # the rest is that option's value
    return [], ""


@dataclass(frozen=True)
class SbatchOptions:
    """The user's ``--slurm "..."`` string, split as a shell would, checked for our own."""

    args: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> SbatchOptions:
        try:
            args = tuple(shlex.split(text or ""))
        except ValueError as exc:
            raise SpecError(f"--slurm {text!r} cannot be split into options: {exc}",
                            "quote the whole option string once: --slurm \"--partition=p "
                            "--time=30\"") from None
        for arg in args:
            own, how = own_option(arg)
            if own:
                raise SpecError(f"--slurm sets {' or '.join(own)}{f' ({how})' if how else ''}, "
                                "which the harness sets itself",
                                "leave it out: --nodes is the study's number of machine "
                                "roles, the array has one task per point, and each job's log "
                                "goes to the data folder's slurm/logs")
            if "\n" in arg:
                raise SpecError("--slurm options may not contain a line break",
                                "write them on one line")
        return cls(args)

    def lines(self) -> list[str]:
        """``#SBATCH`` lines, one per option: ``--time 30`` becomes ``--time=30``, a value with
        a blank is double-quoted (sbatch's own parser reads such quotes)."""
        out, words = [], list(self.args)
        while words:
            word = words.pop(0)
            if word.startswith("-") and "=" not in word and words and \
                    not words[0].startswith("-"):
                value = words.pop(0)
                word = f"{word}={value}" if word.startswith("--") else f"{word} {value}"
            name, sep, value = word.partition("=")
            if sep and re.search(r"\s", value):
                if '"' in value:
                    raise SpecError(f"--slurm option {name} has a value with both blanks and "
                                    "double quotes", "simplify the value")
                word = f'{name}="{value}"'
            out.append(f"#SBATCH {word}")
        return out


@dataclass(frozen=True)
class JobScript:
    """One sbatch script: a run, or a sweep's points as the tasks of one array.

    ``tasks`` holds each task's arguments for ``harness run`` (the notebook's ``-p`` pairs);
    one task is a plain job, more are an array whose task i runs ``tasks[i]``.
    """

    name: str
    notebook: Path
    nodes: int
    options: SbatchOptions
    tasks: tuple[tuple[str, ...], ...]
    data: Path
    template: str  # the inventory template's YAML text
    share_machine: bool = False
    python: str = field(default_factory=lambda: sys.executable)

    @property
    def array(self) -> bool:
        return len(self.tasks) > 1

    @property
    def log_dir(self) -> Path:
        return self.data / "slurm" / "logs"

    def text(self) -> str:
        lines = ["#!/bin/bash",
                 f"#SBATCH --job-name={shlex.quote(self.name)}",
                 f"#SBATCH --nodes={self.nodes}",
                 "#SBATCH --exclusive",
                 f"#SBATCH --output={self.log_dir / LOG_PATTERN[self.array]}"]
        if self.array:
            lines.append(f"#SBATCH --array=0-{len(self.tasks) - 1}")
        lines += self.options.lines()
        lines += ["# written by `harness` (harness/slurm/sbatch.py): one job per run, one node per "
                  "role of the study",
                  "set -eu",
                  f"export HARNESS_DATA={shlex.quote(str(self.data))}"]
        if self.share_machine:
            lines.append("export HARNESS_SHARE_MACHINE=1")
        lines.append("export HARNESS_SLURM_SCRIPT=\"$0\"  # archived with the run")
        run = [shlex.quote(self.python), "-m", "harness", "run", shlex.quote(str(self.notebook)),
               "--inventory", "slurm", "--inventory-template", "-", "-q"]
        if self.array:
            lines.append('case "$SLURM_ARRAY_TASK_ID" in')
            for i, task in enumerate(self.tasks):
                lines.append(f"  {i}) set -- {' '.join(shlex.quote(a) for a in task)} ;;")
            lines.append('  *) echo "harness: no point for array task $SLURM_ARRAY_TASK_ID" >&2; '
                         "exit 2 ;;")
            lines.append("esac")
        else:
            lines.append(f"set -- {' '.join(shlex.quote(a) for a in self.tasks[0])}")
        # exec: the harness is the batch step's main process and gets scancel's SIGTERM
        lines.append(f'exec {" ".join(run)} "$@" <<\'HARNESS_INVENTORY_TEMPLATE\'')
        lines.append(self.template.rstrip("\n"))
        lines.append("HARNESS_INVENTORY_TEMPLATE")
        return "\n".join(lines) + "\n"


def check_data_folder(data: Path) -> Path:
    """The data folder a job archives into, refused unless it is there and writable.

    Each job writes its run folder, its log and its inventory into it from whichever node
    Slurm picks, so it must be a folder every node sees (the cluster's shared file system):
    the harness cannot see from the submit host whether the nodes share it, but it can
    refuse one that does not exist -- creating it here would make a folder only this host
    has, and the jobs would then fail (Slurm cannot open their logs) or archive on a node's
    own disk -- or that this user cannot write."""
    import os

    where = "HARNESS_DATA" if os.environ.get("HARNESS_DATA") else "the data folder"
    if not data.is_dir():
        raise SpecError(f"{where} {data} does not exist (or is not a folder), and a Slurm job "
                        "archives its run there",
                        "create it on a file system every node of the cluster mounts (e.g. "
                        "mkdir -p /shared/you/harness-data) and set HARNESS_DATA to it")
    if not os.access(data, os.W_OK | os.X_OK):
        raise SpecError(f"{where} {data} is not writable by this user, and a Slurm job "
                        "archives its run, its log and its inventory there",
                        "give HARNESS_DATA a folder on the shared file system that you may "
                        "write (check its owner and mode: ls -ld)")
    return data


def point_arguments(point: dict) -> tuple[str, ...]:
    """A point's parameters as ``-p NAME VALUE`` words (values as YAML, read back by run)."""
    import yaml

    words: list[str] = []
    for name, value in point.items():
        if name == "inventory":
            continue
        text = yaml.safe_dump(value, default_flow_style=True).strip()
        if text.endswith("\n..."):
            text = text[:-4].strip()
        words += ["-p", name, text.removesuffix("...").strip()]
    return tuple(words)


def _sbatch(script: str, *extra: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["sbatch", *extra], input=script, capture_output=True, text=True,
                              timeout=SUBMIT_TIMEOUT)
    except FileNotFoundError:
        raise SlurmError("sbatch is not on PATH: this machine is not a Slurm submit host",
                         "run on a login node of your cluster (or install slurm-wlm and point "
                         "SLURM_CONF at its slurm.conf)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"sbatch did not answer in {SUBMIT_TIMEOUT} s",
                         "check that slurmctld is up: scontrol ping") from None


def test_only(script: str) -> str:
    """``sbatch --test-only``: Slurm checks the options and says where it would run the job;
    nothing is submitted. Its refusal is raised with its own words."""
    result = _sbatch(script, "--test-only")
    if result.returncode != 0:
        raise SlurmError(f"Slurm refused the job: {result.stderr.strip() or result.stdout.strip()}",
                         "fix the --slurm options (they are sbatch's own); `--dry-run` prints "
                         "the whole script")
    return (result.stderr or result.stdout).strip()


def submit(script: str) -> str:
    """Submit ``script``; its job id (an array's id for an array)."""
    result = _sbatch(script, "--parsable")
    if result.returncode != 0:
        raise SlurmError(f"sbatch failed: {result.stderr.strip() or result.stdout.strip()}",
                         "fix what Slurm names and submit again")
    return result.stdout.strip().split(";")[0]


def job_in_allocation() -> dict:
    """This process's Slurm job, from the environment slurmd gives a batch script or salloc."""
    env = os.environ
    job = env.get("SLURM_ARRAY_JOB_ID") or env.get("SLURM_JOB_ID")
    info = {"job_id": env.get("SLURM_JOB_ID"), "node_list": env.get("SLURM_JOB_NODELIST"),
            "cluster": env.get("SLURM_CLUSTER_NAME"), "partition": env.get("SLURM_JOB_PARTITION")}
    if env.get("SLURM_ARRAY_TASK_ID") is not None:
        info.update(array_job_id=job, array_task_id=int(env["SLURM_ARRAY_TASK_ID"]))
    script = env.get("HARNESS_SLURM_SCRIPT")
    if script and Path(script).is_file():
        info["script"] = Path(script).read_text(errors="replace")
    return {k: v for k, v in info.items() if v is not None}
