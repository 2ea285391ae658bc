"""fio jobs as options, and fio 3.33's real JSON output read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CommandOnlyNode

from harness.errors import CommandFailed, HarnessError, SpecError
from harness.tools.fio import FioJob, parse_fio_json, run_fio

DATA = Path(__file__).parent / "data"
# Captured on Debian 12 (fio 3.33) in a tmp dir:
#   fio --name=seq --directory=D --rw=write --bs=1048576 --size=4194304 --numjobs=2 --direct=0
#       --ioengine=psync --end_fsync=1 --group_reporting --output-format=json
# then the same with --rw=read (no --end_fsync); and two jobs a, b in two groups (--new_group).
WRITE = (DATA / "fio-3.33-write-2jobs.json").read_text()
READ = (DATA / "fio-3.33-read-2jobs.json").read_text()
TWO_GROUPS = (DATA / "fio-3.33-two-groups.json").read_text()
# and 4 KiB O_DIRECT reads of the 8 MiB file a write job (disk-nfs-1) laid out, sequential
# and random, each for 1 s:
#   fio --name=disk-nfs-1-seek-RW --filename=D/disk-nfs-1.0.0 --rw=RW --bs=4096
#       --size=8388608 --numjobs=1 --direct=1 --ioengine=psync --time_based --runtime=1s
#       --group_reporting --output-format=json      (RW: read, randread)
SEQ_4K = (DATA / "fio-3.33-read-4k-direct.json").read_text()
RAND_4K = (DATA / "fio-3.33-randread-4k-direct.json").read_text()


def job(**kw) -> FioJob:
    base = dict(name="seq", rw="write", block_size=1 << 20, size=4 << 20, directory="/mnt/nfs",
                numjobs=2)
    return FioJob(**{**base, **kw})


def test_argv_of_a_sequential_write():
    assert job().argv() == [
        "fio", "--name=seq", "--directory=/mnt/nfs", "--rw=write", "--bs=1048576",
        "--size=4194304", "--numjobs=2", "--direct=0", "--ioengine=psync", "--end_fsync=1",
        "--group_reporting", "--output-format=json"]


def test_argv_of_a_timed_direct_read_of_one_file():
    argv = job(rw="read", directory=None, filename="/mnt/g/big", direct=True, runtime_s=30,
               group_reporting=False, fsync=0).argv()
    assert "--filename=/mnt/g/big" in argv and "--direct=1" in argv
    assert argv[-3:] == ["--time_based", "--runtime=30s", "--output-format=json"]
    assert not [a for a in argv if "fsync" in a]  # a read never syncs


def test_argv_of_a_timed_direct_random_read_of_one_file():
    argv = job(rw="randread", directory=None, filename="/run/s2/raw/disk-nfs-1.0.0",
               block_size=4096, numjobs=1, direct=True, runtime_s=3).argv()
    assert argv == [
        "fio", "--name=seq", "--filename=/run/s2/raw/disk-nfs-1.0.0", "--rw=randread",
        "--bs=4096", "--size=4194304", "--numjobs=1", "--direct=1", "--ioengine=psync",
        "--time_based", "--runtime=3s", "--group_reporting", "--output-format=json"]
    with pytest.raises(SpecError, match="writes only"):  # a random read never syncs either
        job(rw="randread", fsync=4).argv()


def test_fsync_every_n_blocks_and_no_end_fsync():
    argv = job(fsync=8, end_fsync=False).argv()
    assert "--fsync=8" in argv and "--end_fsync=1" not in argv


@pytest.mark.parametrize("kw, words", [
    ({"size": 0}, "size 0"),
    ({"block_size": -1}, "block_size -1"),
    ({"numjobs": 0}, "numjobs 0"),
    ({"numjobs": 1000}, "more than 256"),
    ({"size": 1000, "block_size": 4096}, "smaller than one block"),
    ({"rw": "randrw"}, "rw 'randrw'"),
    ({"name": "a b"}, "name 'a b'"),
    ({"name": "--rw=read"}, "name '--rw=read'"),
    ({"directory": "relative/dir"}, "not an absolute path"),
    ({"directory": "/mnt/x:/etc/passwd"}, "not an absolute path"),
    ({"directory": "/mnt/../etc"}, "no '..'"),
    ({"directory": None}, "exactly one of directory and filename"),
    ({"filename": "/mnt/f"}, "exactly one of directory and filename"),
    ({"runtime_s": 0}, "runtime_s 0"),
    ({"ioengine": "mmap; rm -rf /"}, "ioengine"),
    ({"rw": "read", "fsync": 4}, "writes only"),
    ({"size": True}, "size True"),
])
def test_bad_jobs_are_refused_with_one_error(kw, words):
    with pytest.raises(SpecError) as err:
        job(**kw).argv()
    assert words in err.value.message and err.value.hint


def test_several_problems_in_one_message():
    with pytest.raises(SpecError) as err:
        job(size=0, rw="rand").check()
    assert "size 0" in err.value.message and "rw 'rand'" in err.value.message


def test_parse_the_real_group_reported_write():
    (res,) = parse_fio_json(WRITE)
    raw = json.loads(WRITE)["jobs"][0]["write"]
    assert (res.name, res.rw, res.numjobs) == ("seq", "write", 2)
    assert res.bytes == 2 * 4 * 1048576 == raw["io_bytes"]
    assert res.runtime_s == raw["runtime"] / 1000
    assert res.mb_per_s == pytest.approx(res.bytes / res.runtime_s / 1e6)  # 1 MB = 1e6 B
    assert res.iops == raw["iops"]
    assert res.clat_mean_us == pytest.approx(raw["clat_ns"]["mean"] / 1000)


def test_parse_the_real_read():
    (res,) = parse_fio_json(READ)
    assert res.rw == "read" and res.bytes == 8 * 1048576 and res.numjobs == 2
    assert res.mb_per_s > 0 and res.clat_mean_us > 0


def test_parse_the_real_random_read_reported_under_read():
    """fio reports a randread job's reads under "read": named randread from its options."""
    (res,) = parse_fio_json(RAND_4K)
    raw = json.loads(RAND_4K)["jobs"][0]["read"]
    assert (res.name, res.rw, res.numjobs) == ("disk-nfs-1-seek-randread", "randread", 1)
    assert res.bytes == raw["io_bytes"] > 0 and res.runtime_s == raw["runtime"] / 1000
    assert res.clat_mean_us == pytest.approx(raw["clat_ns"]["mean"] / 1000)
    (seq,) = parse_fio_json(SEQ_4K)  # the sequential 4 KiB read stays a read
    assert (seq.name, seq.rw) == ("disk-nfs-1-seek-read", "read")
    assert seq.clat_mean_us == pytest.approx(
        json.loads(SEQ_4K)["jobs"][0]["read"]["clat_ns"]["mean"] / 1000)


def test_a_random_read_given_as_a_global_option_is_named_too():
    data = json.loads(RAND_4K)
    del data["jobs"][0]["job options"]["rw"]
    data["global options"] = {"rw": "randread"}
    assert [r.rw for r in parse_fio_json(json.dumps(data))] == ["randread"]


def test_two_groups_are_two_results_in_order():
    results = parse_fio_json(TWO_GROUPS)
    assert [(r.name, r.rw, r.numjobs, r.bytes) for r in results] == [
        ("a", "write", 1, 1048576), ("b", "write", 1, 1048576)]


def test_clones_without_group_reporting_are_summed_by_group():
    data = json.loads(WRITE)
    one = data["jobs"][0]
    half = {**one["write"], "io_bytes": one["write"]["io_bytes"] // 2, "iops": 500.0,
            "clat_ns": {**one["write"]["clat_ns"], "N": 4}}
    slow = {**half, "runtime": one["write"]["runtime"] * 2,
            "clat_ns": {**half["clat_ns"], "mean": half["clat_ns"]["mean"] * 3}}
    data["jobs"] = [{**one, "write": half}, {**one, "write": slow}]
    (res,) = parse_fio_json("fio: a warning line first\n" + json.dumps(data))
    assert res.numjobs == 2 and res.bytes == one["write"]["io_bytes"]
    assert res.runtime_s == one["write"]["runtime"] * 2 / 1000  # the slower clone
    assert res.iops == 1000.0
    assert res.clat_mean_us == pytest.approx(2 * one["write"]["clat_ns"]["mean"] / 1000)


@pytest.mark.parametrize("text, words", [
    ("fio: pid=0, err=2/file:filesetup.c", "no JSON"),
    ('{"jobs": []}', "no jobs"),
    ('{"jobs": [{"jobname": "x", "groupid": 0, "error": 28}]}', "error 28"),
    ('{"jobs": [{"jobname": "x", "groupid": 0, "error": 0, "read": {"io_bytes": 0}, '
     '"write": {"io_bytes": 0}}]}', "no data"),
    ('{"jobs": [', "not readable"),
])
def test_unreadable_or_failed_output(text, words):
    with pytest.raises(HarnessError) as err:
        parse_fio_json(text)
    assert words in err.value.message


class FioNode(CommandOnlyNode):
    def __init__(self, status, out, err=""):
        self.name, self.answer, self.commands = "vm1", (status, out, err), []

    def describe(self):
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append((cmd, timeout))
        return self.answer


def test_run_fio_on_a_node():
    node = FioNode(0, WRITE)
    (res,) = run_fio(node, job())
    assert res.bytes == 8 * 1048576
    cmd, timeout = node.commands[0]
    assert cmd.startswith("fio --name=seq --directory=/mnt/nfs ") and timeout == 1800.0
    run_fio(node, job(runtime_s=10))
    assert node.commands[1][1] == 310.0


def test_run_fio_failures_say_why():
    with pytest.raises(HarnessError, match="on vm1: fio printed no JSON.*No space"):
        run_fio(FioNode(1, "", "fio: No space left on device"), job())
    with pytest.raises(CommandFailed):
        run_fio(FioNode(1, WRITE), job())
    with pytest.raises(SpecError):
        run_fio(FioNode(0, WRITE), job(size=0))
