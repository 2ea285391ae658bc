"""`harness run|batch --slurm` against a real Slurm (Debian's slurm-wlm 22.05 and munge).

One cluster for the module (tests/integration/slurm/cluster.py): munged, slurmctld and two
slurmd, each compute node one of the inventory tests' machines (tests/integration/
machines.py: a namespace with its own hostname, /run and sshd behind a switch); the tests
submit from the switch namespace, where slurmctld listens. The harness in a job reaches the
allocation's nodes over SSH only. Each job takes both nodes (the ping study has two roles,
``--exclusive``), so the jobs of a sweep follow each other. S4's small run as one job is
in test_slurm_s4.py (a cluster of S4's machines).

How long (2026-11-27, this 2-core machine shared with other engineers' runs): this module's
seven tests 16 min at host load 11-16 (the sweep 300 s, the failing job and its resubmission
188 s, salloc 110 s, time limit 102 s, scancel 99 s, hard kill 95 s, bad options 45 s);
the time-limit test cannot be much shorter: a minute is Slurm's least limit and slurmctld
checks limits every 30 s (its job ended 70-76 s after it started).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from harness.archive.archive import COMPLETE, INCOMPLETE, Run, list_runs
from harness.nodes.procfs import read_stat

from .cluster import running_cluster, skip_reason

pytestmark = pytest.mark.integration

PING = Path(__file__).resolve().parents[2] / "studies" / "ping_study.ipynb"


@pytest.fixture(scope="module")
def cluster():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with running_cluster(2) as c:
        yield c


@pytest.fixture
def data(tmp_path):
    """The shared data folder: made by the user before submitting (the harness refuses a
    missing one, which only the submit host would have)."""
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


def harness(cluster, data: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """The harness CLI on the cluster's login node (where slurmctld listens)."""
    return cluster.harness(*args, timeout=timeout, env={"HARNESS_DATA": str(data)})


def write_sweep(path: Path, cluster, rates: list, count: int = 3, known_hosts=None) -> Path:
    path.write_text(yaml.safe_dump({
        "notebook": str(PING),
        "parameters": {"count": count, "interval_s": 0.1},
        "sweep": {"rate_mbit": rates},
        "inventory_template": {
            "ssh": {"user": "root", "key": str(cluster.user_key),
                    "known_hosts": str(known_hosts or cluster.known_hosts)},
            "interfaces": {"eth0": {"device": "mgmt0", "address": "{ip}/24"}}},
    }, sort_keys=False))
    return path


def node_state(cluster) -> dict:
    """What a run could leave on a node: its processes (sshd, slurmd and nothing else once
    idle), links, addresses, qdiscs."""
    from conftest import alive

    out = {}
    for node in cluster.nodes:
        pids = {p for p in cluster.node_pids()[node.name] if alive(p)}
        addr = subprocess.run(["ip", "-n", node.netns, "-br", "addr"], capture_output=True,
                              text=True).stdout
        out[node.name] = {"pids": pids, "addr": addr,
                          "qdisc": subprocess.run(["tc", "-n", node.netns, "qdisc", "show"],
                                                  capture_output=True, text=True).stdout}
    return out


def test_a_sweep_spread_over_two_nodes_ends_with_every_point_complete(cluster, data, tmp_path):
    before = node_state(cluster)
    sweep = write_sweep(tmp_path / "sweep.yaml", cluster, [20, 40, 60, 80])
    out = harness(cluster, data, "batch", str(sweep), "--slurm", "--time=10 --comment=harness-test",
                  "--wait", "--share-machine")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "submitted job" in out.stdout and "4 point(s) of 4" in out.stdout
    assert "0 pending, 0 running, 4 complete, 0 failed" in out.stdout
    assert "summary " in out.stdout
    runs = list_runs("ping-demo", data, COMPLETE)
    assert len(runs) == 4
    for run in runs:
        slurm = run.meta["slurm"]
        assert slurm["roles"] == {"a": "n1", "b": "n2"}  # the allocation onto the roles
        assert slurm["node_list"] == "n[1-2]"
        script = slurm["script"]
        assert "#SBATCH --nodes=2" in script and "#SBATCH --exclusive" in script
        assert "#SBATCH --comment=harness-test" in script and "--array=0-3" in script
        assert run.meta["placement"]["where"] == "inventory"
        kept = Path(run.meta["parameters"]["inventory"])  # for `harness rerun`, not in /tmp
        assert kept == data / "slurm" / "inventories" / \
            f"{slurm['array_job_id']}_{slurm['array_task_id']}.yaml"
        assert yaml.safe_load(kept.read_text()) == slurm["inventory"]
        assert not Run(run.path).journal.pending()
    assert sorted(r.meta["parameters"]["rate_mbit"] for r in runs) == [20, 40, 60, 80]
    assert {r.meta["slurm"]["array_task_id"] for r in runs} == {0, 1, 2, 3}
    cluster.wait_idle()
    assert node_state(cluster) == before

    status = harness(cluster, data, "batch", str(sweep), "--status")
    assert status.returncode == 0 and "0 pending, 0 running, 4 complete, 0 failed" in status.stdout

    # the same sweep with one more point: only that point would be submitted (the dry run
    # prints the very script; the failing-job test below submits a batch again for real)
    write_sweep(sweep, cluster, [20, 40, 60, 80, 100])
    dry = harness(cluster, data, "batch", str(sweep), "--slurm", "--time=10", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "--array" not in dry.stdout and "set -- -p count 3 -p interval_s 0.1 -p rate_mbit " \
        "100\n" in dry.stdout
    assert cluster.command("squeue", "-h").stdout.strip() == ""  # a dry run submits nothing


def test_bad_sbatch_options_are_refused_with_slurms_message_before_anything(cluster, data,
                                                                             tmp_path):
    sweep = write_sweep(tmp_path / "sweep.yaml", cluster, [10, 20])
    out = harness(cluster, data, "batch", str(sweep), "--slurm", "--partition=nosuch")
    assert out.returncode == 2
    assert "Slurm refused the job" in out.stderr and "invalid partition" in out.stderr.lower()
    own = harness(cluster, data, "batch", str(sweep), "--slurm", "--nodes=1")
    assert own.returncode == 2 and "--nodes, which the harness sets itself" in own.stderr
    typo = harness(cluster, data, "run", str(PING), "--slurm", "--tme=10",
                   "--inventory-template", str(write_template(tmp_path, cluster)))
    assert typo.returncode == 2 and "unrecognized option" in typo.stderr
    assert not any(data.iterdir())  # no run, no submission record, no log folder
    assert cluster.command("squeue", "-h").stdout.strip() == ""


def test_a_failing_job_is_reported_with_its_slurm_state_and_log(cluster, data, tmp_path):
    empty = tmp_path / "known_hosts.empty"
    empty.write_text("")
    sweep = write_sweep(tmp_path / "sweep.yaml", cluster, [30], known_hosts=empty)
    out = harness(cluster, data, "batch", str(sweep), "--slurm", "--time=5", "--wait",
                  "--share-machine")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "0 complete, 1 failed" in out.stdout
    assert "FAILED, exit 1:0" in out.stdout  # Slurm's own state and exit code
    assert "host key" in out.stdout.lower()  # the run's error, from run.json and the log
    assert "log " in out.stdout and "| " in out.stdout  # the log's tail
    [run] = list_runs("ping-demo", data)
    assert run.meta["status"] == INCOMPLETE and not run.journal.pending()
    # with the host keys fixed, the batch again submits the failed point only
    write_sweep(sweep, cluster, [30])
    again = harness(cluster, data, "batch", str(sweep), "--slurm", "--time=5", "--wait",
                    "--share-machine")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 point(s) of 1" in again.stdout and "1 complete, 0 failed" in again.stdout


def test_scancel_of_a_running_job_leaves_the_run_incomplete_and_the_nodes_as_found(
        cluster, data, tmp_path):
    cluster.wait_idle()
    before = node_state(cluster)
    job, run = submit_a_minute_of_ping(cluster, data, tmp_path)
    cancelled = time.time()
    cluster.command("scancel", job)  # SIGTERM now, SIGKILL after KillWait (30 s here)
    wait_for_end(cluster, job)
    run = Run(run.path)
    assert run.meta["status"] == INCOMPLETE
    assert "interrupted" in run.meta["error"]
    ended = datetime.fromisoformat(run.meta["ended"]).timestamp()
    assert ended - cancelled < 30, "the undo must end within KillWait"
    assert not run.journal.pending()
    cluster.wait_idle()
    assert node_state(cluster) == before  # no process behind, nothing left configured
    state = cluster.command("scontrol", "show", "job", "-o", job).stdout
    assert "JobState=CANCELLED" in state
    assert_one_ending_line(data, job, run)


def assert_one_ending_line(data: Path, job: str, run: Run) -> None:
    """The job's log ends with one line on the run and its undo; the kernel's death (Slurm
    signals it too) leaves no traceback and no "Kernel died" in it."""
    log = (data / "slurm" / "logs" / f"{job}.out").read_text()
    assert "Traceback" not in log and "Kernel died" not in log, log
    last = log.strip().splitlines()[-1]
    assert last.startswith(f"harness: run {run.path} ended by SIGTERM"), log
    assert last.endswith(f"incomplete; all {len(run.journal.entries())} recorded change(s) "
                         "undone"), log


def test_after_a_hard_kill_lab_clean_finishes_on_the_nodes(cluster, data, tmp_path):
    cluster.wait_idle()
    before = node_state(cluster)
    job, run = submit_a_minute_of_ping(cluster, data, tmp_path)
    # A hard kill (the OOM killer, KillWait passed during a long undo): SIGKILL to the job's
    # harness and every process under it at once. `scancel --signal=KILL` would not do: Slurm
    # then cancels the job the usual way, SIGTERM first (seen here: the run undid everything
    # itself). The harness (its kernel's socket folder) and the kernel it started both write
    # the run's journal; the harness is the kernel's parent.
    writers = run.journal.writers()
    (harness_pid,) = [w for w in writers if parent(w) not in writers]
    for pid in [harness_pid, *descendants(harness_pid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for_end(cluster, job)
    run = Run(run.path)
    assert run.meta["status"] == INCOMPLETE
    left = run.journal.pending()
    remote = [e for e in left if e.node.get("type") == "ssh"]
    assert {e.node["host"] for e in remote} == {n.address for n in cluster.nodes}  # both locks
    # and, where the job's harness ran, its kernel's socket folder (harness.run.kernels)
    (sockets,) = [e for e in left if e.node.get("type") == "local"]
    assert sockets.kind == "file" and Path(sockets.data["path"]).is_dir()
    # on the login node: the nodes' records are undone over SSH; the folder on the compute
    # node is refused there, naming the machine it was made on
    clean = harness(cluster, data, "lab", "clean", "--data", str(data))
    assert clean.returncode == 1, clean.stdout + clean.stderr
    assert f"undoing {len(left)} change(s)" in clean.stdout
    assert "a journal of another machine is never undone here" in clean.stdout + clean.stderr
    assert [e.kind for e in Run(run.path).journal.pending()] == ["file"]
    # on the compute node the job ran on (its hostname is in the record): the rest
    (ran_on,) = [n for n in cluster.nodes if hostname(n) == sockets.machine["hostname"]]
    clean = cluster.harness_on(ran_on, "lab", "clean", "--data", str(data))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert not Run(run.path).journal.pending()
    assert not Path(sockets.data["path"]).exists()
    cluster.wait_idle()
    assert node_state(cluster) == before


def test_a_job_over_its_time_limit_ends_incomplete_with_everything_undone(cluster, data,
                                                                         tmp_path):
    """``--time=1`` (a minute, Slurm's least) on three minutes of ping: slurmctld finds the
    job over its limit at its next check (every 30 s), so it ends 60-90 s after it started,
    by SIGTERM to every process of the job (SIGKILL only after KillWait, 30 s here: the
    harness undoes well within it; the SIGKILL case is the hard-kill test above)."""
    cluster.wait_idle()
    before = node_state(cluster)
    job, run = submit_a_minute_of_ping(cluster, data, tmp_path, count=900, time_limit=1)
    wait_for_end(cluster, job, timeout=180)
    state = cluster.command("scontrol", "show", "job", "-o", job).stdout
    assert "JobState=TIMEOUT" in state, state
    run = Run(run.path)
    assert run.meta["status"] == INCOMPLETE and "interrupted" in run.meta["error"]
    assert not run.journal.pending()
    assert_one_ending_line(data, job, run)
    cluster.wait_idle()
    assert node_state(cluster) == before


def hostname(node) -> str:
    return subprocess.run(["nsenter", f"--uts=/proc/{node.sshd_pid}/ns/uts", "hostname"],
                          capture_output=True, text=True, check=True).stdout.strip()


def parent(pid: int) -> int:
    return read_stat(pid).ppid


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, from one pass over /proc."""
    stats = [st for st in (read_stat(int(e)) for e in os.listdir("/proc") if e.isdigit()) if st]
    below, found = {pid}, True
    while found:
        found = False
        for st in stats:
            if st.ppid in below and st.pid not in below:
                below.add(st.pid)
                found = True
    return sorted(below - {pid})


def wait_for_end(cluster, job: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while cluster.command("squeue", "-h", "-j", job, check=False).stdout.strip():
        assert time.monotonic() < deadline, f"job {job} did not end"
        time.sleep(0.5)


def test_inside_an_salloc_the_run_takes_the_allocations_nodes(cluster, data, tmp_path):
    """`harness run NB --inventory slurm` in an salloc shell, here started on the first
    compute node (its namespace), as a user's shell on a login-less cluster would be."""
    cluster.wait_idle()
    first = cluster.nodes[0]
    out = cluster.command(
        "salloc", "-N2", "--exclusive", "--time=5", "nsenter", f"--net={first.netns_path}",
        sys.executable, "-m", "harness", "run", str(PING), "-p", "count", "2", "--inventory",
        "slurm", "--inventory-template", str(write_template(tmp_path, cluster)),
        "--share-machine", "-q", timeout=300, check=False,
        env={"HARNESS_DATA": str(data)})
    assert out.returncode == 0, out.stdout + out.stderr
    [run] = list_runs("ping-demo", data, COMPLETE)
    assert run.meta["slurm"]["roles"] == {"a": "n1", "b": "n2"}
    assert "script" not in run.meta["slurm"]  # no batch script: an interactive allocation
    assert (data / "index.html").exists()  # refreshed, unlike inside a batch job


def submit_a_minute_of_ping(cluster, data: Path, tmp_path: Path, count: int = 300,
                            time_limit: int = 10) -> tuple[str, Run]:
    """One job of ``count`` echo requests 0.2 s apart (300: a minute), and its run once it
    measures."""
    out = harness(cluster, data, "run", str(PING), "-p", "count", str(count), "-p", "interval_s",
                  "0.2", "--slurm", f"--time={time_limit}", "--inventory-template",
                  str(write_template(tmp_path, cluster)), "--share-machine")
    assert out.returncode == 0, out.stderr
    return out.stdout.split("submitted job ")[1].split()[0], wait_for_measuring(data)


def write_template(tmp_path: Path, cluster) -> Path:
    path = tmp_path / "template.yaml"
    path.write_text(yaml.safe_dump({
        "ssh": {"user": "root", "key": str(cluster.user_key),
                "known_hosts": str(cluster.known_hosts)},
        "interfaces": {"eth0": {"device": "mgmt0", "address": "{ip}/24"}}}))
    return path


def wait_for_measuring(data: Path, timeout: float = 120) -> Run:
    """The job's run, once it holds both machines (two lock processes in its journal) and a
    few seconds into its minute of ping."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list_runs("ping-demo", data)
        journal = runs[0].path / "journal.jsonl" if runs else None
        if journal is not None and journal.exists() and \
                journal.read_text().count('"op": "do"') >= 2:
            time.sleep(5)
            return runs[0]
        time.sleep(0.3)
    raise AssertionError(f"no measuring run after {timeout} s: {list_runs(root=data)}")
