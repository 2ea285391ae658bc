"""Faults injected into real runs: a full archive disk, SIGKILL at random moments.

Each test builds a real namespace lab on this host, breaks the run, and then
checks the machine against the run's own journal: every namespace it made is
gone, every process it started is stopped (pid *and* start time), every
tracked command's file removed, the machine lock released.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import needs_root, needs_tools, netns_names, on_this_host, survivors

from harness.archive.archive import INCOMPLETE, Run
from harness.errors import ArchiveError
from harness.journal.journal import Journal
from harness.journal.tracked import STOP_DIR
from harness.run.session import open_session
from harness.topology.topology import TopologyBuilder

pytestmark = [pytest.mark.integration, needs_root, needs_tools("ping", "iperf3")]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def own_lock_folder(tmp_path, monkeypatch):
    folder = tmp_path / "locks"
    monkeypatch.setenv("HARNESS_LOCK_DIR", str(folder))
    return folder


def two_nodes():
    return (TopologyBuilder("tf").node("a").node("b")
            .link(("a", "eth0", "198.18.9.1/24"), ("b", "eth0", "198.18.9.2/24"))
            .build("fault test: a -- b"))


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: its content hash and mode."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(),
                                         p.stat().st_mode)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_machine_as_found(journal_path: Path, lock_folder: Path) -> None:
    """Everything the run's journal says it made is gone from this machine: namespaces,
    processes (QEMU too), tracked commands' files, VMs' per-boot folders, the lock."""
    journal = Journal(journal_path)
    assert journal.pending() == [], [f"{e.kind} {e.data}" for e in journal.pending()]
    present = netns_names()
    stop_files = Path(STOP_DIR)  # tracked commands' files (harness.journal.tracked), not $TMPDIR
    for entry in journal.entries():
        if entry.kind == "netns" and on_this_host(entry.node):
            assert entry.data["name"] not in present
        elif entry.kind == "tracked" and on_this_host(entry.node):
            assert not (stop_files / entry.data["name"]).exists()
    assert not survivors(journal_path)
    for owner in journal.writers():  # a VM's boot folder is named after the run's pid
        assert not list(Path("/tmp").glob(f"harness-vm-*-{owner}-*")), "a VM's boot folder"
    assert not list(lock_folder.glob("*.lock")), "the machine lock was not released"


def test_a_full_archive_disk_stops_the_run_with_one_clear_error(tmp_path, own_lock_folder):
    data = tmp_path / "data"
    data.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=755", "harness-test-full",
                    str(data)], check=True)
    try:
        with open_session("tfull", {"n": 1}, root=data) as earlier:
            earlier.raw("early.txt", "kept\n" * 100)
        before = snapshot(earlier.run.path)
        with pytest.raises(ArchiveError) as refused:
            with open_session("tfull", {"n": 2}, root=data) as session:
                bed = session.testbed(two_nodes())
                made = set(bed.record()["namespaces"].values())
                assert made <= netns_names()
                with open(data / "filler", "wb") as fh:  # the disk fills up mid-run
                    try:
                        while True:
                            fh.write(b"\0" * 65536)
                            fh.flush()
                    except OSError:
                        pass
                session.raw("tool-output.bin", b"x" * 200_000)
        assert "the archive's disk is full" in refused.value.message
        assert "tool-output.bin" in refused.value.message
        assert not made & netns_names(), "the lab was not torn down"
        run = Run.open(session.run.path)
        meta = json.loads((run.path / "run.json").read_text())  # still valid JSON
        assert meta["status"] == INCOMPLETE
        assert not (run.path / "raw" / "tool-output.bin").exists()  # no half-written file
        assert snapshot(earlier.run.path) == before
        (data / "filler").unlink()
        # the undo lines the full disk refused: `lab clean` repeats those undos harmlessly
        clean = subprocess.run([sys.executable, "-m", "harness", "lab", "clean", "--data",
                                str(data)], capture_output=True, text=True, timeout=120,
                               cwd=ROOT)
        assert clean.returncode == 0, clean.stderr
        assert_machine_as_found(run.path / "journal.jsonl", own_lock_folder)
    finally:
        subprocess.run(["umount", str(data)], check=True)


PING_CHILD = """
from harness.run.runner import run_study
import sys
sys.path.insert(0, sys.argv[1])
from ping_study import PingStudy
study = PingStudy()
print(run_study(study, study.parameters(count=20, interval_s=0.1)), flush=True)
"""

# S4 small: MPTCP endpoints, policy routing, iperf3 and GridFTP servers and clients
S4_CHILD = """
from harness.run.runner import run_study
from harness.studies.s4.study import S4
study = S4()
print(run_study(study, study.parameters(repetitions=1, streams=(1, 2), duration_s=2,
                                 gridftp_streams=(1,), gridftp_mbytes=8, verify_seconds=1)),
      flush=True)
"""

# S0 small: NAT rules, a relay's processes, shaped links, the unshaped relay benchmark
S0_CHILD = """
from harness.run.runner import run_study
from harness.studies.s0.study import S0
study = S0()
print(run_study(study, study.parameters(sizes=(1, 1024), repetitions=1, latency_budget_s=0.02,
                                 stream_budget_s=0.03, flows=2, bench_repetitions=1,
                                 bench_seconds=1, verify_seconds=1)), flush=True)
"""

# the VM studies, small, killed once each after their VMs are up and their wires measured
# (journal line 23 on): in the lab's build, the configuration (Soft-RoCE links; TIPC
# bearers; disks, NFS and GlusterFS) or the first measurements; QEMU is a recorded
# process like any other, stopped by `lab clean` from its record
S1_CHILD = """
from harness.run.runner import run_study
from harness.studies.s1.study import S1
study = S1()
print(run_study(study, study.parameters(sizes=(4, 1024), repetitions=1, iterations=20,
                                 bw_iterations=20, tcp_budget_s=0.03)), flush=True)
"""

S2_CHILD = """
from harness.run.runner import run_study
from harness.studies.s2.study import S2
study = S2()
print(run_study(study, study.parameters(windows_kib=(1024,), clients=(1,), point_rtts=10,
                                 mtus=(1500,), verify_seconds=1)), flush=True)
"""

S3_CHILD = """
from harness.run.runner import run_study
from harness.studies.s3.study import S3
study = S3()
print(run_study(study, study.parameters(mappers=(4,), sizes_kb=(1,), rounds=3, warmup=1,
                                 cpu_rounds=0, verify_seconds=1)), flush=True)
"""

SEED = int(os.environ.get("HARNESS_FAULT_SEED", "15"))


def journal_lines(runs_root: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in runs_root.glob("*/*/journal.jsonl"))


@pytest.mark.parametrize("child_code, kills, lines", [
    (PING_CHILD, 2, (1, 9)),
    (S0_CHILD, 2, (5, 110)),
    (S4_CHILD, 1, (5, 60)),
    pytest.param(S1_CHILD, 1, (23, 45), marks=pytest.mark.vm),
    # S2 and S3 leave on this host what S1 leaves (QEMU processes and their boot folders; their
    # own changes are inside the guests, which end with them): the suite kills S1, whose window
    # ends first, and `nox -s slow` the other two
    pytest.param(S2_CHILD, 1, (23, 60), marks=[pytest.mark.vm, pytest.mark.slow]),
    pytest.param(S3_CHILD, 1, (23, 60), marks=[pytest.mark.vm, pytest.mark.slow]),
], ids=["ping-demo", "s0", "s4", "s1", "s2", "s3"])
def test_sigkill_at_random_moments_then_lab_clean_leaves_the_machine_as_found(
        child_code, kills, lines, tmp_path, own_lock_folder):
    """The harness killed hard at seeded moments of a study's run (lab build, link
    verification with iperf3, configuration, measurement, teardown); `harness lab clean`
    restores the machine.

    A moment is "just after the run's journal reached its k-th line" (k seeded, within the
    number of lines a whole run writes: 12 for the test study, ~120 for this S0 run, ~80 for
    this S4 run, 60-180 for the VM studies, whose first lines are their QEMU processes), plus up
    to 0.3 s: a point of the run's own progress, so the kills land inside it however loaded
    the machine is (a wall-clock moment missed the run on a quieter machine).
    """
    rng = random.Random(SEED)
    moments = sorted((rng.randint(*lines), round(rng.uniform(0.0, 0.3), 3))
                     for _ in range(kills))
    print(f"SIGKILL moments (seed {SEED}): after journal line, + seconds: {moments}")
    env = {**os.environ, "HARNESS_DATA": str(tmp_path / "data"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cleaned = []
    runs_root = tmp_path / "data" / "runs"
    for line, extra in moments:
        before = journal_lines(runs_root)
        child = subprocess.Popen([sys.executable, "-c", child_code,
                                  str(ROOT / "tests" / "studies")],
                                 env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 600  # a VM study boots its VMs first (TCG)
        while journal_lines(runs_root) - before < line and child.poll() is None:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.01)
        time.sleep(extra)
        child.send_signal(signal.SIGKILL)
        child.wait()
        clean = subprocess.run([sys.executable, "-m", "harness", "lab", "clean"], env=env,
                               capture_output=True, text=True, timeout=180, cwd=ROOT)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        print(f"killed after journal line {line} + {extra}s; lab clean: {clean.stdout.strip()}")
        cleaned.append("undoing" in clean.stdout)
        for journal in runs_root.glob("*/*/journal.jsonl"):
            assert_machine_as_found(journal, own_lock_folder)
    runs = list(runs_root.glob("*/*/run.json"))
    assert len(runs) == len(moments)
    killed = [json.loads(p.read_text()) for p in runs]
    # a kill in the last instants of teardown may find the run already finished
    assert any(m["status"] == INCOMPLETE for m in killed)
    assert any(cleaned), "no kill left anything to undo: the moments missed the run"


def test_lab_clean_refuses_other_machines_journals_and_cleans_past_damaged_ones(tmp_path):
    """Three crashed runs: one journal copied from another machine, one from this machine
    with a torn line and a record missing its fields, one naming a path outside the
    harness's folders. `lab clean` refuses the first saying why, reads the second as far as
    it is sound and undoes it, refuses the third's bad record, and goes on past each."""
    import tempfile

    from harness.journal.machineid import local_identity

    data = tmp_path / "data"
    # named like ours, but not below a folder the harness makes things in (/tmp, /run, ...)
    outside = Path(tempfile.mkdtemp(prefix="harness-faults-", dir="/var/lib"))
    here = local_identity().to_dict()
    made = []

    def crashed_run(name: str, *lines) -> Run:
        run = Run.create(name, {}, root=data)
        (run.path / "journal.jsonl").write_text("".join(
            (x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
        return run

    def do(seq: int, path: str, machine: dict) -> dict:
        return {"op": "do", "seq": seq, "kind": "file", "module": "harness.journal.journal",
                "node": {"type": "local", "name": "local"}, "data": {"path": path},
                "time": 0, "pid": 4242, "machine": machine}

    for i in range(3):
        folder = Path(f"/tmp/harness-faults-{os.getpid()}-{i}")
        folder.mkdir()
        made.append(folder)
    try:
        foreign = crashed_run("tforeign", do(1, str(made[0]), {**here, "hostname": "elsewhere"}))
        damaged = crashed_run("tdamaged", do(1, str(made[1]), here), '{"op": "do", "seq": 2',
                              {"op": "do", "seq": 3}, do(4, str(made[2]), here))
        hostile = crashed_run("thostile", do(1, str(outside), here))
        clean = subprocess.run([sys.executable, "-m", "harness", "lab", "clean", "--data",
                                str(data)], capture_output=True, text=True, timeout=120,
                               cwd=ROOT)
        out = clean.stdout
        assert clean.returncode == 1, out + clean.stderr  # two runs could not be cleaned
        assert f"could not clean {foreign.path}" in out and "recorded on machine elsewhere" in out
        assert made[0].is_dir(), "another machine's record was acted on"
        assert out.count("skipped, not a sound record") == 2
        assert not made[1].exists() and not made[2].exists()
        assert Journal(damaged.path / "journal.jsonl").pending() == []
        assert f"could not clean {hostile.path}" in out and outside.is_dir()
    finally:
        for folder in [*made, outside]:
            subprocess.run(["rm", "-rf", str(folder)], check=False)
