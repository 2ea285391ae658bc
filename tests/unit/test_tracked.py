"""Foreground tools journalled before they start, stopped by their record (harness.journal.tracked)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import group_alive

from harness.errors import CommandFailed, CommandTimeout
from harness.journal import tracked
from harness.journal.journal import Journal
from harness.journal.tracked import PREFIX, journalled, run_tracked
from harness.nodes import LocalNode
from harness.nodes.procfs import process_start_ticks


@pytest.fixture(autouse=True)
def own_tmpdir(tmp_path, monkeypatch):
    """The wrappers' files go to a folder of this test only (root's, 0700, as STOP_DIR)."""
    folder = tmp_path / "stop"
    folder.mkdir(mode=0o700)
    monkeypatch.setattr(tracked, "STOP_DIR", str(folder))
    return folder


def tracked_files(folder) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(PREFIX)]


def test_a_command_keeps_its_output_and_status_and_its_record_is_closed(journal, own_tmpdir):
    res = run_tracked(journal, LocalNode(), "echo out; echo err >&2; exit 3", check=False)
    assert (res.stdout, res.stderr, res.exit_status) == ("out\n", "err\n", 3)
    assert res.command == "echo out; echo err >&2; exit 3"
    (entry,) = journal.entries()
    assert entry.kind == "tracked" and entry.undone and entry.data["command"] == res.command
    assert entry.data["node"] == {"type": "local", "name": "local"}
    assert tracked_files(own_tmpdir) == []
    with pytest.raises(CommandFailed, match="exit 3|status 3"):
        run_tracked(journal, LocalNode(), ["sh", "-c", "exit 3"])


def test_only_commands_asked_for_inside_a_session_are_journalled(journal):
    node = LocalNode()
    node.run("true", track=True)  # no journal active: a plain run
    with journalled(journal):
        node.run("true")
        assert node.run(["echo", "a b"], track=True).stdout == "a b\n"
    node.run("true", track=True)
    assert [e.data["command"] for e in journal.entries()] == ["echo 'a b'"]


def test_a_timeout_stops_it_and_closes_the_record(journal, own_tmpdir):
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        run_tracked(journal, LocalNode(), "sleep 30", timeout=1)
    assert time.monotonic() - started < 15
    assert journal.pending() == [] and tracked_files(own_tmpdir) == []


CHILD = """
import sys
from harness.journal import tracked
from harness.journal.journal import Journal
from harness.nodes import LocalNode
tracked.STOP_DIR = sys.argv[2]
tracked.run_tracked(Journal(sys.argv[1]), LocalNode(), "echo started; exec sleep 300",
                    timeout=600)
"""


def test_after_sigkill_the_journal_stops_exactly_that_command(tmp_path, own_tmpdir):
    path = tmp_path / "journal.jsonl"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(own_tmpdir)],
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    deadline = time.monotonic() + 30
    while not tracked_files(own_tmpdir):
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    pid, ticks, pgrp = (int(x) for x in (own_tmpdir / tracked_files(own_tmpdir)[0])
                        .read_text().split())
    assert process_start_ticks(pid) == ticks
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert group_alive(pgrp), "the command outlives the killed harness (as `lab clean` finds it)"
    journal = Journal(path)
    (entry,) = journal.pending()
    assert entry.kind == "tracked"
    journal.undo_all()
    deadline = time.monotonic() + 10
    while group_alive(pgrp) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_alive(pgrp)
    assert journal.pending() == [] and tracked_files(own_tmpdir) == []


def test_a_reused_pid_is_never_signalled(journal, own_tmpdir):
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        name = PREFIX + "0123456789abcdef"
        ticks = process_start_ticks(bystander.pid)
        (own_tmpdir / name).write_text(f"{bystander.pid} {ticks + 1} {bystander.pid}\n")
        entry = journal.record_change("tracked", LocalNode(),
                                      {"name": name, "command": "sleep 60", "node": {}})
        journal.undo(entry)
        time.sleep(0.3)
        assert bystander.poll() is None and not (own_tmpdir / name).exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_the_command_is_its_own_shell_as_untracked(journal):
    """`$$` names the shell running the command (in_cgroup writes it to cgroup.procs and
    then execs the tool: a wrapper's pid there would leave the tool outside the cgroup)."""
    res = run_tracked(journal, LocalNode(), "echo $$; exec cat /proc/self/stat")
    shell_pid, stat = res.stdout.split("\n", 1)
    assert int(stat.split()[0]) == int(shell_pid)
    assert run_tracked(journal, LocalNode(), "exit 4", check=False).exit_status == 4
