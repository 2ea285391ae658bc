"""One measuring run per machine: the lock, sharing, stale locks, the watch, the session hook."""

from __future__ import annotations

import json
import subprocess

import pytest

from harness.archive.archive import COMPLETE, INCOMPLETE, Run
from harness.nodes.procfs import process_start_ticks
from harness.run.machinelock import SHARE_ENV, LocalLock, MachineBusy, Owner, this_process
from harness.run.machinewatch import MachineWatch, describe
from harness.run.session import open_session


@pytest.fixture(autouse=True)
def lock_folder(tmp_path, monkeypatch):
    folder = tmp_path / "locks"
    monkeypatch.setenv("HARNESS_LOCK_DIR", str(folder))
    monkeypatch.delenv(SHARE_ENV, raising=False)
    return folder


@pytest.fixture
def other_process():
    """A live process standing in for another run's kernel."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def owner_of(proc, run_id: str, study: str = "s4") -> Owner:
    return Owner(proc.pid, process_start_ticks(proc.pid), run_id, study, f"/runs/{run_id}")


def dead_owner(run_id: str) -> Owner:
    proc = subprocess.Popen(["true"])
    ticks = process_start_ticks(proc.pid)
    proc.wait()
    return Owner(proc.pid, ticks or 1, run_id, "s0")


def test_a_second_run_is_refused_naming_the_holder_and_nothing_changes(other_process,
                                                                      lock_folder):
    first = LocalLock()
    record = first.acquire(owner_of(other_process, "RUN-A"))
    assert record["mode"] == "exclusive" and record["took_over"] == []
    before = (lock_folder / "local.lock").read_text()
    with pytest.raises(MachineBusy) as refused:
        LocalLock().acquire(this_process("RUN-B", "s0"))
    assert "RUN-A" in str(refused.value) and "s4" in str(refused.value)
    assert "--share-machine" in str(refused.value)
    assert (lock_folder / "local.lock").read_text() == before
    assert not (lock_folder / "local.share").exists()
    first.release()
    assert not (lock_folder / "local.lock").exists()
    assert LocalLock().acquire(this_process("RUN-B", "s0"))["mode"] == "exclusive"


def test_sharing_is_recorded_by_both_runs(other_process):
    holder = LocalLock()
    holder.acquire(owner_of(other_process, "RUN-A"))
    sharer = LocalLock()
    record = sharer.acquire(this_process("RUN-B", "s0", share=True), share=True)
    assert record["mode"] == "shared" and record["holder"]["run_id"] == "RUN-A"
    assert [o.run_id for o in holder.others()] == ["RUN-B"]
    assert [o.run_id for o in sharer.others()] == ["RUN-A"]
    watch = MachineWatch(holder, interval=60).start()
    summary = watch.stop()
    assert summary["shared"] and [o["run_id"] for o in summary["other_runs"]] == ["RUN-B"]
    sharer.release()
    assert holder.others() == []
    holder.release()


def test_a_lock_left_by_a_dead_owner_is_taken_over(lock_folder):
    lock_folder.mkdir()
    (lock_folder / "local.lock").write_text(json.dumps(dead_owner("RUN-DEAD").to_dict()))
    record = LocalLock().acquire(this_process("RUN-NEW", "s3"))
    assert record["mode"] == "exclusive"
    assert [t["owner"]["run_id"] for t in record["took_over"]] == ["RUN-DEAD"]
    assert json.loads((lock_folder / "local.lock").read_text())["run_id"] == "RUN-NEW"


def test_a_lock_still_flocked_for_a_dead_owner_is_replaced(lock_folder):
    leftover = LocalLock()  # an inherited descriptor: flocked, but its owner is gone
    leftover.acquire(dead_owner("RUN-DEAD"))
    taker = LocalLock()
    record = taker.acquire(this_process("RUN-NEW", "s3"))
    assert record["mode"] == "exclusive" and record["took_over"][0]["owner"]["run_id"] == "RUN-DEAD"
    leftover.release()  # must not remove the new owner's file
    assert json.loads((lock_folder / "local.lock").read_text())["run_id"] == "RUN-NEW"
    with pytest.raises(MachineBusy):
        LocalLock().acquire(Owner(1, 0, "RUN-X", "s0"))  # the taker holds it now


def test_a_reused_pid_is_no_owner(other_process):
    reused = Owner(other_process.pid, process_start_ticks(other_process.pid) + 1, "RUN-OLD", "s4")
    assert not reused.alive()
    first = LocalLock()
    first.acquire(reused)
    assert LocalLock().acquire(this_process("RUN-NEW", "s4"))["took_over"]


def test_watch_summarises_load_per_phase(tmp_path):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.50 0.40 0.30 2/300 123\n")
    watch = MachineWatch(None, interval=60, loadavg_path=str(loadavg)).start()
    loadavg.write_text("1.75 0.40 0.30 3/300 123\n")
    watch.mark("measure")
    loadavg.write_text("2.25 0.40 0.30 5/300 123\n")
    summary = watch.stop()
    assert summary["samples"] == 3 and not summary["shared"]
    assert summary["phases"]["setup"]["load1_max"] == 0.5
    assert summary["phases"]["measure"] == {"samples": 2, "load1_mean": 2.0, "load1_max": 2.25,
                                            "runnable_max": 5, "other_runs": []}
    rows = describe(summary, {"machine": "local", "mode": "exclusive"})
    assert "mean 2.0, max 2.25" in rows["load while measuring (1-min average)"]
    assert rows["lock"].startswith("exclusive")


def test_sessions_take_the_machine_and_a_second_is_refused_before_anything(tmp_path, monkeypatch):
    with open_session("tlock", {}, root=tmp_path) as first:
        with pytest.raises(MachineBusy) as refused:
            with open_session("tlock", {}, root=tmp_path):
                raise AssertionError("the second session must not start")
        assert first.run.run_id in str(refused.value)
        monkeypatch.setenv(SHARE_ENV, "1")
        with open_session("tlock", {}, root=tmp_path) as sharer:
            first.mark("measure")
            sharer_id = sharer.run.run_id
    runs = {Run(p).run_id: Run(p).meta for p in (tmp_path / "runs" / "tlock").iterdir()}
    refused_run = [m for m in runs.values() if m["status"] == INCOMPLETE]
    assert len(refused_run) == 1 and first.run.run_id in refused_run[0]["error"]
    mine = runs[first.run.run_id]
    assert mine["status"] == COMPLETE and mine["machine_lock"]["local"]["mode"] == "exclusive"
    assert [o["run_id"] for o in mine["machine_activity"]["other_runs"]] == [sharer_id]
    theirs = runs[sharer_id]
    assert theirs["machine_lock"]["local"]["mode"] == "shared"
    assert theirs["machine_lock"]["local"]["holder"]["run_id"] == first.run.run_id


def test_lab_clean_frees_only_locks_whose_owner_is_gone(lock_folder, other_process):
    from harness.run.machinelock import clear_stale

    lock_folder.mkdir()
    (lock_folder / "local.lock").write_text(json.dumps(dead_owner("RUN-DEAD").to_dict()))
    assert clear_stale() == ["RUN-DEAD"] and not (lock_folder / "local.lock").exists()
    live = LocalLock()
    live.acquire(owner_of(other_process, "RUN-LIVE"))
    assert clear_stale() == [] and LocalLock().holder().run_id == "RUN-LIVE"
    live.release()


def test_harness_run_takes_the_lock_before_its_folder_unless_sharing(other_process,
                                                                     monkeypatch, tmp_path,
                                                                     lock_folder):
    from harness.run.execute import lock_named_for_kernel, machine_taken
    from harness.run.machinelock import held_for

    holder = LocalLock()
    holder.acquire(owner_of(other_process, "RUN-A"))
    with pytest.raises(MachineBusy, match="RUN-A"):
        with machine_taken("s0"):
            raise AssertionError("refused before the body")
    monkeypatch.setenv(SHARE_ENV, "1")
    with machine_taken("s0") as (lock, record):
        assert record["mode"] == "shared" and record["holder"]["run_id"] == "RUN-A"
        run = Run.create("s0", {}, tmp_path)
        with lock_named_for_kernel(lock, run):  # the kernel finds its parent's sharer file
            found, kernel_record = held_for(run.run_id)
            assert kernel_record["mode"] == "shared" and found.owner.run_id == run.run_id
            assert [o.run_id for o in found.others()] == ["RUN-A"]
    assert not (lock_folder / "local.share").exists()
    holder.release()


def test_a_harness_run_asked_to_share_that_found_no_holder_is_not_its_own_other_run(
        tmp_path, monkeypatch):
    """`harness run --share-machine` on a free machine holds it itself (the lock file, share
    set). Its kernel must take that lock as held by its parent: before, it looked only for a
    sharer file, joined its own parent as a sharer, and the run recorded itself as the other
    run it shared the machine with (S1 verdict run of 2026-11-27 12:52)."""
    from harness.run.execute import lock_named_for_kernel, machine_taken
    from harness.run.machinelock import held_for

    monkeypatch.setenv(SHARE_ENV, "1")
    with machine_taken("tlock") as (lock, record):
        assert record["mode"] == "exclusive" and lock.owner.share
        run = Run.create("tlock", {}, tmp_path)
        with lock_named_for_kernel(lock, run):
            found, kernel_record = held_for(run.run_id)
            assert kernel_record["mode"] == "exclusive" and found.owner.run_id == run.run_id
            assert found.others() == []
            with open_session("tlock", {}, root=tmp_path, run_dir=str(run.path)) as kernel:
                assert kernel.machine_locks["local"]["holder"]["run_id"] == run.run_id
                assert kernel._watch.lock.others() == []
            assert not (LocalLock().shares.exists() and any(LocalLock().shares.iterdir()))
    meta = json.loads((run.path / "run.json").read_text())
    assert meta["machine_activity"]["other_runs"] == [], meta["machine_activity"]
    assert meta["machine_activity"]["shared"] is False


def test_the_kernel_of_a_harness_run_finds_its_lock_held_and_a_stranger_does_not(
        tmp_path, other_process, monkeypatch):
    """harness run holds the lock and names it for its run; the kernel's session takes it as
    held (no MachineBusy against its own parent), and records the parent as holder. The
    same variable naming another run, a dead process or a lock it does not hold is ignored."""
    from harness.run.execute import lock_named_for_kernel, machine_taken
    from harness.run.machinelock import HELD_ENV, held_for

    with machine_taken("tlock") as (lock, _record):
        run = Run.create("tlock", {}, tmp_path)
        with lock_named_for_kernel(lock, run):
            named = json.loads(__import__("os").environ[HELD_ENV])
            assert named["run_id"] == run.run_id and LocalLock().holder().run_id == run.run_id
            assert held_for("ANOTHER-RUN") is None
            with open_session("tlock", {}, root=tmp_path, run_dir=str(run.path)) as kernel:
                assert kernel.machine_locks["local"]["holder"]["run_id"] == run.run_id
            assert LocalLock().holder().run_id == run.run_id  # the kernel released nothing
        assert HELD_ENV not in __import__("os").environ
    assert LocalLock().holder() is None
    stranger = owner_of(other_process, "RUN-X")
    monkeypatch.setenv(HELD_ENV, json.dumps(stranger.to_dict()))
    assert held_for("RUN-X") is None  # names a live process, but the lock does not say so
    monkeypatch.setenv(HELD_ENV, json.dumps(dead_owner("RUN-D").to_dict()))
    assert held_for("RUN-D") is None


def test_both_reports_say_the_machine_was_shared():
    from harness.archive.report_sections import machine_rows

    holder = {"run_id": "RUN-A", "study": "s4"}
    sharer_meta = {"machine_lock": {"local": {"machine": "local", "mode": "shared",
                                              "holder": holder}}}
    assert "SHARED with run RUN-A (s4)" in machine_rows(sharer_meta)["lock"]
    holder_meta = {"machine_lock": {"local": {"machine": "local", "mode": "exclusive",
                                              "holder": holder}},
                   "machine_activity": {"cpus": 2, "interval_s": 5, "other_runs": [
                       {"run_id": "RUN-B", "study": "s0", "pid": 7}], "phases": {}}}
    rows = machine_rows(holder_meta)
    assert "SHARED" in rows["lock"] and "RUN-B (s0, pid 7)" in rows["other runs on the machine"]
    alone = machine_rows({"machine_lock": {"local": {"machine": "local", "mode": "exclusive"}},
                          "machine_activity": {"other_runs": [], "phases": {}}})
    assert alone["lock"].startswith("exclusive")


def test_a_run_that_shared_still_holds_the_machine_after_the_holder_ends(other_process):
    holder = LocalLock()
    holder.acquire(this_process("RUN-A", "s4"))
    sharer = LocalLock()
    sharer.acquire(owner_of(other_process, "RUN-B", "s0"), share=True)
    holder.release()
    with pytest.raises(MachineBusy, match="RUN-B"):
        LocalLock().acquire(this_process("RUN-C", "s3"))
    sharer.release()
    assert LocalLock().acquire(this_process("RUN-C", "s3"))["mode"] == "exclusive"


def test_share_machine_flag_reaches_the_kernels_environment(monkeypatch):
    import os

    from harness.cli import parser, share_machine

    for argv in (["run", "nb.ipynb", "--share-machine"], ["batch", "s.yaml", "--share-machine"]):
        monkeypatch.delenv(SHARE_ENV, raising=False)
        share_machine(parser().parse_args(argv))
        assert os.environ[SHARE_ENV] == "1"
    monkeypatch.delenv(SHARE_ENV, raising=False)
    share_machine(parser().parse_args(["run", "nb.ipynb"]))
    assert SHARE_ENV not in os.environ


# -- inventory machines: the lock there, held by a journalled process (LocalNode stands in) ---

REMOTE_CHILD = """
import sys, time
from harness.journal.journal import Journal
from harness.run.machinelock import remote_lock, this_process
from harness.nodes import LocalNode
record = remote_lock(Journal(sys.argv[1]), LocalNode(), this_process("dead-run", "s4"))
print(record["mode"], flush=True)
time.sleep(600)
"""


def holder_of(folder) -> tuple[int, int]:
    pid, ticks = (int(x) for x in (folder / "machine.lock.holder").read_text().split())
    return pid, ticks


def test_a_remote_lock_whose_controller_died_is_taken_over_and_recorded(tmp_path, lock_folder):
    import os
    import signal
    import sys
    import time

    from harness.journal.journal import Journal
    from harness.nodes import LocalNode
    from harness.run.machinelock import remote_lock

    child = subprocess.Popen([sys.executable, "-c", REMOTE_CHILD, str(tmp_path / "dead.jsonl")],
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert child.stdout.readline().strip() == "exclusive"
    old_pid, old_ticks = holder_of(lock_folder)
    child.send_signal(signal.SIGKILL)  # the controller dies; its holder lives on, in its session
    child.wait()
    assert process_start_ticks(old_pid) == old_ticks, "the holder outlives its controller"
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    journal = Journal(tmp_path / "new.jsonl")
    try:
        record = remote_lock(journal, LocalNode(), this_process("new-run", "s4"))
        assert record["mode"] == "exclusive"
        (taken,) = record["took_over"]
        assert taken["owner"]["run_id"] == "dead-run" and "is gone" in taken["reason"]
        deadline = time.monotonic() + 10
        while process_start_ticks(old_pid) == old_ticks and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_start_ticks(old_pid) != old_ticks, "the stale holder was stopped"
        assert bystander.poll() is None, "no other process was signalled"
        assert json.loads((lock_folder / "machine.lock.owner").read_text())["run_id"] == "new-run"
    finally:
        journal.undo_all()
        bystander.kill()
        bystander.wait()
        # what `harness lab clean` does with the dead run's journal: its holder is stopped
        # already; the undo removes that holder's log (left in /tmp by every suite before)
        dead = Journal(tmp_path / "dead.jsonl")
        (holder_entry,) = [e for e in dead.pending() if e.kind == "process"]
        dead_log = holder_entry.data["log"]
        dead.undo_all()
    assert not (lock_folder / "machine.lock").exists()
    assert not os.path.exists(dead_log), "the dead controller's holder log is removed"


def test_a_remote_lock_of_a_live_run_or_of_another_controller_is_busy(tmp_path, lock_folder,
                                                                       other_process):
    from dataclasses import replace

    from harness.journal.journal import Journal
    from harness.nodes import LocalNode
    from harness.run.machinelock import remote_lock

    first = Journal(tmp_path / "first.jsonl")
    live = replace(this_process("live-run", "s4"), pid=other_process.pid,
                   start_ticks=process_start_ticks(other_process.pid))
    try:
        assert remote_lock(first, LocalNode(), live)["mode"] == "exclusive"
        with pytest.raises(MachineBusy, match="live-run"):
            remote_lock(Journal(tmp_path / "second.jsonl"), LocalNode(),
                        this_process("second-run", "s4"))
    finally:
        first.undo_all()
    # an owner on another controlling machine cannot be checked from here: never taken over
    foreign = replace(dead_owner("foreign-run"), controller="elsewhere", controller_boot="x")
    third = Journal(tmp_path / "third.jsonl")
    try:
        remote_lock(third, LocalNode(), foreign)
        with pytest.raises(MachineBusy, match="foreign-run"):
            remote_lock(Journal(tmp_path / "fourth.jsonl"), LocalNode(),
                        this_process("fourth-run", "s4"))
    finally:
        third.undo_all()
