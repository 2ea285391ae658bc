"""The harness undoes a run's journal only after the kernel, its other writer, has ended."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from harness.journal.journal import Journal
from harness.run.last_writer import outlive_other_writers

# a second writer of the journal, as the kernel is: records a change, then lingers
WRITER = """
import sys, time
from harness.journal.journal import Journal
from harness.nodes.local import LocalNode
Journal(sys.argv[1]).record("file", LocalNode(), path=sys.argv[2])
print("recorded", flush=True)
time.sleep(float(sys.argv[3]))
"""


def _writer(tmp_path: Path, linger_s: float) -> tuple[subprocess.Popen, Path]:
    journal = tmp_path / "journal.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(journal), str(tmp_path / "x"),
                             str(linger_s)], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert proc.stdout.readline().strip() == "recorded"
    return proc, journal


def test_a_writer_that_ends_within_the_grace_is_waited_for_not_killed(tmp_path):
    proc, journal = _writer(tmp_path, 0.5)
    started = time.monotonic()
    assert outlive_other_writers(Journal(journal), grace_s=20) == []
    assert time.monotonic() - started >= 0.3  # it waited for the writer
    assert proc.wait(5) == 0  # which ended by itself
    assert len(Journal(journal).pending()) == 1


def test_a_child_writer_still_running_after_the_grace_is_killed(tmp_path):
    proc, journal = _writer(tmp_path, 60)
    assert outlive_other_writers(Journal(journal), grace_s=0.3) == [proc.pid]
    assert proc.wait(5) == -9


def test_a_writer_that_is_not_this_process_s_child_is_never_signalled(tmp_path):
    # the writer is a grandchild: started by a shell that exits at once
    journal = tmp_path / "journal.jsonl"
    shell = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "$1" {journal} {tmp_path / "x"} 60 >"$2" 2>&1 & echo $!',
         "sh", WRITER, str(tmp_path / "out")],
        capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    pid = int(shell.stdout)
    try:
        deadline = time.monotonic() + 20
        while "recorded" not in (tmp_path / "out").read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert outlive_other_writers(Journal(journal), grace_s=0.3) == []
        assert Path(f"/proc/{pid}").exists()  # still running: waited for, not signalled
    finally:
        subprocess.run(["kill", "-KILL", str(pid)], check=False)
