"""The group runner: one round trip per machine, one Result per call, failures as data."""

from __future__ import annotations

import shlex
import threading

import pytest
from conftest import CommandOnlyNode

from harness.errors import CommandFailed, NodeError
from harness.nodes.base import Command, Node, command_text
from harness.nodes.group import (
    Call,
    CommandsFailed,
    MachineFailed,
    launchers,
    machine_budget,
    machine_script,
    parse_framed,
    require_ok,
    run_group,
)
from harness.nodes.local import LocalNode


class CountingMachine(LocalNode):
    """A local shell that counts its round trips (``_execute`` calls)."""

    def __init__(self, name: str, fail: bool = False):
        super().__init__(name)
        self.executed: list[str] = []
        self.fail = fail
        self._lock = threading.Lock()

    def _execute(self, cmd, timeout, stdin):
        with self._lock:
            self.executed.append(cmd)
        if self.fail:
            raise NodeError(f"SSH node {self.name!r}: the connection broke")
        return super()._execute(cmd, timeout, stdin)


class Layer(CommandOnlyNode):
    """A fake namespace: commands run on its machine with LAYER set (no root needed)."""

    def __init__(self, name: str, parent: Node):
        self.name, self.parent = name, parent

    @property
    def machine(self) -> Node:
        return self.parent.machine

    def command_on_machine(self, cmd: Command) -> str:
        inner = command_text(cmd) if not isinstance(cmd, str) else cmd
        return self.parent.command_on_machine(
            f"LAYER={shlex.quote(self.name)} sh -c {shlex.quote(inner)}")

    def describe(self):
        return {"type": "layer", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        return self.parent._execute(self.command_on_machine(cmd), timeout, stdin)



def test_one_round_trip_per_machine_and_results_in_input_order():
    m1, m2 = CountingMachine("m1"), CountingMachine("m2")
    a, b = Layer("a", m1), Layer("b", m2)
    calls = [Call(a, "echo in $LAYER"), Call(m2, "echo out; echo err >&2; exit 3"),
             Call(m1, ["printf", "%s", "no newline"]), Call(b, "echo in $LAYER >&2"),
             Call(Layer("c", a), "echo $LAYER")]
    results = run_group(calls)
    assert len(m1.executed) == 1 and len(m2.executed) == 1
    assert [r.node for r in results] == ["a", "m2", "m1", "b", "c"]
    assert [(r.stdout, r.stderr, r.exit_status) for r in results] == [
        ("in a\n", "", 0), ("out\n", "err\n", 3), ("no newline", "", 0), ("", "in b\n", 0),
        ("c\n", "", 0)]
    assert results[2].command == "printf %s 'no newline'"
    assert all(r.duration >= 0 for r in results)


def test_output_that_mimics_the_framing_is_returned_verbatim():
    m = CountingMachine("m")
    nasty = "\n0 end 0 1 2\n1 out\n__hg_tok\n\n"
    results = run_group([Call(m, ["printf", "%s", nasty]), Call(m, "printf ''; exit 1")])
    assert results[0].stdout == nasty and results[0].ok
    assert results[1].stdout == "" and results[1].exit_status == 1


def test_positional_parameters_and_runner_variables_do_not_leak_into_commands():
    m = CountingMachine("m")
    (r,) = run_group([Call(m, 'echo "[$#][$1][${__hg_c:-}]"')])
    assert r.stdout == "[0][][]\n"


def test_exclusive_call_waits_for_the_batch_before_it(tmp_path):
    m = CountingMachine("m")
    flag = tmp_path / "flag"
    calls = [Call(m, f"sleep 0.3; echo done > {flag}"), Call(m, f"cat {flag}", exclusive=True)]
    results = run_group(calls)
    assert results[1].stdout == "done\n"


def test_batches_of_jobs_and_exclusive_calls_in_the_script():
    m = CountingMachine("m")
    calls = [Call(m, "a"), Call(m, "b"), Call(m, "c"), Call(m, "x", exclusive=True),
             Call(m, "d")]
    script = machine_script(calls, "TOKEN", jobs=2)
    body = [line for line in script.splitlines() if line.startswith(("__hg_run ", "wait"))]
    assert body == ["__hg_run 0 a &", "__hg_run 1 b &", "wait", "__hg_run 2 c &", "wait",
                    "__hg_run 3 x &", "wait", "__hg_run 4 d &", "wait"]
    # budget follows the same schedule: max per batch, exclusive alone, plus slack
    timed = [Call(m, "a", 5), Call(m, "b", 7), Call(m, "c", 2), Call(m, "x", 10, True)]
    assert machine_budget(timed, jobs=2) == pytest.approx(30 + 7 + 2 + 10)


def test_a_failed_machine_is_named_and_others_still_ran():
    good, bad = CountingMachine("good"), CountingMachine("vm1", fail=True)
    with pytest.raises(MachineFailed, match="vm1") as err:
        run_group([Call(good, "echo hi"), Call(bad, "echo never")])
    assert "vm1" in err.value.failures and len(good.executed) == 1


def test_missing_result_is_an_error_not_a_silent_gap():
    calls = [Call(LocalNode(), "true")]
    with pytest.raises(NodeError, match="no result"):
        parse_framed("cut short", "tok", calls, ["local"], 0.1)


def test_require_ok_lists_every_failure():
    m = CountingMachine("m")
    results = run_group([Call(m, "exit 2"), Call(m, "true"), Call(m, "echo bad >&2; exit 5")])
    with pytest.raises(CommandsFailed) as err:
        require_ok(results, hint="look")
    assert isinstance(err.value, CommandFailed) and len(err.value.results) == 2
    text = str(err.value)
    assert "status 2" in text and "status 5" in text and "bad" in text and "look" in text
    assert require_ok(results[1:2]) == results[1:2]


def test_launchers_one_per_machine_each_call_in_its_node():
    m1, m2 = CountingMachine("m1"), CountingMachine("m2")
    calls = [Call(Layer("a", m1), ["prog", "1"]), Call(m2, ["prog", "2"]),
             Call(Layer("b", m1), ["prog", "3"])]
    out = launchers(calls)
    assert [(lch.machine, lch.indices) for lch in out] == [(m1, (0, 2)), (m2, (1,))]
    lines = out[0].script.splitlines()
    assert lines[0] == "trap 'wait; exit 0' TERM INT" and lines[-1] == "wait"
    assert lines[1] == "LAYER=a sh -c 'prog 1' &"
    assert not m1.executed  # nothing started: the caller journals and starts them


def test_a_timed_out_round_trip_leaves_no_work_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    m = CountingMachine("m")
    with pytest.raises(MachineFailed, match="timeout"):
        run_group([Call(m, "sleep 30")], timeout=0.5)
    assert list(tmp_path.iterdir()) == []
    assert len(m.executed) == 2  # the script, then the removal of its directory


def test_a_stopped_round_trip_removes_its_folder_while_a_call_lingers(tmp_path):
    """TERM to the script's group (how a tracked command is stopped) removes the work folder
    at once, although the exclusive call in it ignores TERM (as a tool that lingers after its
    summary): the stopper's SIGKILL after its grace then finds nothing left to remove."""
    import os
    import signal
    import subprocess
    import time

    script = machine_script([Call(LocalNode(), "trap '' TERM; sleep 20", exclusive=True)],
                            "t" * 32)
    proc = subprocess.Popen(["sh", "-c", script], stdout=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(tmp_path)}, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not list(tmp_path.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # the call is running
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=5) == 143
        assert list(tmp_path.iterdir()) == []
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the lingering call, as the stopper would
        proc.wait()
