"""S2's disk seek cost: 4 KiB O_DIRECT reads, sequential and random, of the file a disk
write point laid out, measured between the write and the read and put on the disk's rows."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import CommandOnlyNode

from harness.errors import HarnessError
from harness.studies.s2 import fs as s2_fs
from harness.studies.s2 import measure as s2_measure
from harness.studies.s2 import study as s2

DATA = Path(__file__).parents[1] / "tools" / "data"  # real fio 3.33 output (test_fio.py says how)
WRITE = (DATA / "fio-3.33-write-2jobs.json").read_text()
READ = (DATA / "fio-3.33-read-2jobs.json").read_text()
SEQ_4K = (DATA / "fio-3.33-read-4k-direct.json").read_text()
RAND_4K = (DATA / "fio-3.33-randread-4k-direct.json").read_text()
SEQ_MS = json.loads(SEQ_4K)["jobs"][0]["read"]["clat_ns"]["mean"] / 1e6
RAND_MS = json.loads(RAND_4K)["jobs"][0]["read"]["clat_ns"]["mean"] / 1e6


class FioServer(CommandOnlyNode):
    """Answers fio with real fio output by its rw (and how the file is named), anything else
    with success; ``failing``: a command holding that text exits 1."""

    def __init__(self, failing: str = ""):
        self.name, self.failing, self.commands = "server", failing, []

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        text = cmd if isinstance(cmd, str) else shlex.join(cmd)
        self.commands.append(text)
        if self.failing and self.failing in text:
            return 1, "", "fio: file:filesetup.c: Invalid argument"
        if not text.startswith("fio "):
            return 0, "", ""
        if "--rw=write" in text:
            return 0, WRITE, ""
        if "--rw=randread" in text:
            return 0, RAND_4K, ""
        return 0, SEQ_4K if "--filename=" in text else READ, ""


def fake_session() -> SimpleNamespace:
    raws: dict[str, str] = {}
    return SimpleNamespace(dry_run=False, raws=raws, scaling=SimpleNamespace(factor=0.023),
                           raw=lambda name, content: raws.__setitem__(name, content))


def test_the_file_a_disk_write_lays_out_is_fios_own_name():
    # fio 3.33, --directory=D --name=disk-nfs-1 --numjobs=1 --group_reporting: D/disk-nfs-1.0.0
    assert s2_fs.laid_out_file("disk-nfs-1") == "disk-nfs-1.0.0"
    assert s2_fs.laid_out_file("a.b", task=2) == "a_b.2.0"  # fio() names the job a_b


def test_the_seek_cost_is_the_random_reads_latency_over_the_sequential():
    session, node = fake_session(), FioServer()
    cost = s2_fs.seek_cost(session, node, "/run/s2/disk-nfs/raw/", "disk-nfs-1.0.0",
                           "disk-nfs-1", 8 << 20)
    assert cost == {"seq_clat_ms": pytest.approx(SEQ_MS), "rand_clat_ms": pytest.approx(RAND_MS),
                    "seek_ms": pytest.approx(RAND_MS - SEQ_MS)}
    assert set(session.raws) == {"fio-disk-nfs-1-seek-read.json",
                                 "fio-disk-nfs-1-seek-randread.json"}
    assert session.raws["fio-disk-nfs-1-seek-randread.json"] == RAND_4K
    drop, seq, rand = node.commands
    assert "drop_caches" in drop  # the page caches first
    for command, rw in ((seq, "read"), (rand, "randread")):
        assert f"--rw={rw} " in command
        for option in ("--filename=/run/s2/disk-nfs/raw/disk-nfs-1.0.0", "--bs=4096",
                       "--size=8388608", "--numjobs=1", "--direct=1", "--time_based",
                       f"--runtime={s2_fs.SEEK_RUN_S:g}s"):
            assert option in command.split(), (option, command)
        assert "--directory" not in command and "fsync" not in command
    warm = FioServer()
    s2_fs.seek_cost(fake_session(), warm, "/d", "f.0.0", "disk-pfs-2", 1 << 20, cold=False)
    assert not [c for c in warm.commands if "drop_caches" in c]


def test_a_failed_seek_read_is_archived_and_says_why():
    session = fake_session()
    with pytest.raises(HarnessError, match="4 KiB O_DIRECT randread .* Invalid argument"):
        s2_fs.seek_cost(session, FioServer(failing="--rw=randread"), "/d", "f.0.0", "p", 1 << 20)
    assert set(session.raws) == {"fio-p-seek-read.json", "fio-p-seek-randread.json"}


def test_measure_disks_puts_the_seek_cost_on_each_disks_rows():
    session, node = fake_session(), FioServer()
    params = s2.Params.resolve(file_mib=8)
    configured = {"nfs": {"disk_dir": "/run/s2/disk-nfs/raw"},
                  "pfs": {"disk_dir": "/run/s2/disk-pfs/raw"}}
    rows = s2_measure.measure_disks(session, node, configured, params, 3)
    assert [(r["fs"], r["rw"]) for r in rows] == [
        ("nfs", "write"), ("nfs", "read"), ("pfs", "write"), ("pfs", "read")]
    for row in rows:
        assert row["kind"] == "disk" and row["repetition"] == 3
        assert row["seek_ms"] == pytest.approx(RAND_MS - SEQ_MS)
        assert (row["seq_clat_ms"], row["rand_clat_ms"]) == (
            pytest.approx(SEQ_MS), pytest.approx(RAND_MS))
    # between the write and the read, which clears the file: the file the write laid out
    fio_or_clear = [c for c in node.commands if c.startswith(("fio ", "find "))]
    nfs = [c for c in fio_or_clear if "disk-nfs" in c]
    assert ["--rw=write" in nfs[0], "--rw=read " in nfs[1], "--rw=randread" in nfs[2],
            "--directory=/run/s2/disk-nfs/raw" in nfs[3] and "--rw=read " in nfs[3],
            nfs[4].startswith("find ")] == [True] * 5
    assert "--filename=/run/s2/disk-nfs/raw/disk-nfs-3.0.0" in nfs[1].split()
    assert {"fio-disk-nfs-3-seek-read.json", "fio-disk-pfs-3-seek-randread.json"} <= set(
        session.raws)


def test_a_users_file_system_without_a_disk_directory_has_no_seek_cost_either():
    session, node = fake_session(), FioServer()
    params = s2.Params.resolve(file_mib=8)
    rows = s2_measure.measure_disks(session, node, {"nfs": {"disk_dir": "/srv/raw/harness-x"},
                                                    "pfs": {"mount": "/gpfs/fs1"}}, params, 1)
    assert {r["fs"] for r in rows} == {"nfs"} and all("seek_ms" in r for r in rows)
    assert not [c for c in node.commands if "disk-pfs" in c]
