import json
import os
import subprocess
import sys

import pytest
from conftest import alive

from harness.journal.journal import Journal, UndoFailed, undo_handler
from harness.nodes import LocalNode

CALLS: list[tuple[str, dict]] = []


@undo_handler("test-change", gone_with_namespace=False)
def _undo_test_change(node, data):
    if data.get("fail"):
        raise RuntimeError("cannot undo")
    CALLS.append((node.name, data))


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()


def test_undo_runs_newest_first_and_only_once(journal):
    node = LocalNode()
    for i in range(3):
        journal.record("test-change", node, i=i)
    journal.undo_all()
    assert [d["i"] for _, d in CALLS] == [2, 1, 0]
    journal.undo_all()
    assert len(CALLS) == 3


def test_a_journal_reloaded_from_disk_knows_what_is_pending(tmp_path):
    path = tmp_path / "j.jsonl"
    first = Journal(path)
    node = LocalNode()
    a = first.record("test-change", node, i=1)
    first.record("test-change", node, i=2)
    first.undo(a)
    # a torn last line (crash while writing) is ignored
    with open(path, "a") as fh:
        fh.write('{"op": "do", "seq": 9')
    second = Journal(path)
    assert [e.data["i"] for e in second.pending()] == [2]
    second.undo_all()
    assert [d["i"] for _, d in CALLS] == [1, 2]


def test_failures_do_not_stop_the_rest_and_are_reported(journal):
    node = LocalNode()
    journal.record("test-change", node, i=1)
    journal.record("test-change", node, i=2, fail=True)
    journal.record("test-change", node, i=3)
    with pytest.raises(UndoFailed, match="cannot undo"):
        journal.undo_all()
    assert [d["i"] for _, d in CALLS] == [3, 1]
    assert [e.data["i"] for e in journal.pending()] == [2]


def test_scope_undoes_only_what_it_recorded(journal):
    node = LocalNode()
    journal.record("test-change", node, i=0)
    with pytest.raises(ZeroDivisionError):
        with journal.scope():
            journal.record("test-change", node, i=1)
            1 / 0
    assert [d["i"] for _, d in CALLS] == [1]
    assert [e.data["i"] for e in journal.pending()] == [0]


def test_unknown_kind_is_refused_before_anything_is_written(journal):
    with pytest.raises(ValueError, match="no undo handler"):
        journal.record("no-such-kind", LocalNode())
    assert not journal.path.exists() or journal.path.read_text() == ""


def test_process_is_stopped_and_its_log_removed(journal):
    node = LocalNode()
    with journal.process(node, ["sleep", "30"]) as proc:
        assert proc.poll() is None
        log = proc.info.log
        assert os.path.exists(log)
    assert proc.poll() is not None
    assert not os.path.exists(log)
    assert journal.pending() == []


def test_crashed_owner_process_is_stopped_from_the_journal_alone(tmp_path):
    """A process started by a program that then died is found by pid + start time."""
    path = tmp_path / "j.jsonl"
    script = (
        "import sys, time; from harness.journal.journal import Journal; from harness.nodes import LocalNode\n"
        f"j = Journal({str(path)!r}); p = j.start(LocalNode(), ['sleep', '60'])\n"
        "print(p.pid, flush=True)\n"
        "import os; os._exit(0)  # die without cleaning up\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=30)
    pid = int(out.stdout.split()[0])
    assert alive(pid)  # nobody stopped it
    Journal(path).undo_all()
    assert not alive(pid)


def test_reused_pid_is_not_killed(journal):
    """If the pid now belongs to another process (other start time), leave it alone."""
    victim = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        journal.record("process", LocalNode(), pid=victim.pid, start_ticks=1, command="x",
                       log="", host={})
        journal.undo_all()
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_journal_lines_are_json(journal):
    journal.record("test-change", LocalNode(), i=1)
    rec = json.loads(journal.path.read_text().splitlines()[0])
    assert rec["op"] == "do" and rec["kind"] == "test-change" and rec["node"]["type"] == "local"


def test_archived_journals_name_modules_whose_undo_handlers_still_load():
    """The first reference runs' journals were written when the harness's modules were flat
    (``netbackend``, ``tracked``, ... right under ``harness``), the pooled references' members'
    (``members/*/journal.jsonl``) under today's packages (``harness.net.backend``,
    ``harness.journal.journal``): `harness lab clean` on either must still find every record's
    undo handler, in a fresh process as after a SIGKILL -- also after a module is split."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    records = [json.loads(line) for path in sorted((root / "data" / "reference").glob("**/journal.jsonl"))
               for line in path.read_text().splitlines() if line.strip()]
    named = sorted({(r["kind"], r["module"]) for r in records if r.get("op") == "do" and r.get("module")})
    modules = sorted({m for _, m in named})
    assert any("." not in m.removeprefix("harness.") for m in modules), modules  # flat names are there
    assert {"harness.net.backend", "harness.journal.journal"} <= set(modules), modules  # and today's
    script = ("import json, sys\n"
              "from harness.journal.undo_registry import _HANDLERS, load_undo_handlers\n"
              "named = json.loads(sys.argv[1])\n"
              "for kind, module in named:\n"
              "    load_undo_handlers(module)\n"
              "print(json.dumps(sorted({k for k, _ in named} - set(_HANDLERS))))\n")
    out = subprocess.run([sys.executable, "-c", script, json.dumps(named)], capture_output=True,
                         text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []  # every kind recorded has its handler
