"""The operation shape with a fake machine: fact -> diff -> journal -> apply -> record."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from dataclasses import dataclass

import pytest
from conftest import CommandOnlyNode, alive

from harness.config import operation
from harness.config.operation import (
    UNKNOWN,
    ApplyFailed,
    Change,
    Fact,
    Operation,
    apply,
    describe,
    plan,
)
from harness.errors import SpecError
from harness.journal.journal import Journal, undo_handler
from harness.nodes import Node


class KeyValueNode(CommandOnlyNode):
    """A machine whose state is a dict, changed by `set K V` and read by `get K`.

    ``journal``: when set, every `set` first checks that the journal file
    already names the key -- the write-ahead rule, checked at the moment of change.
    """

    def __init__(self, name: str, state: dict, journal: Journal | None = None,
                 broken: set[str] = frozenset()):
        self.name, self.state, self.journal, self.broken = name, state, journal, broken
        self.commands: list[str] = []

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        verb, key, *rest = shlex.split(cmd)
        if verb == "get":
            return (0, self.state[key], "") if key in self.state else (1, "", "no such key")
        if f"{key}={rest[0]}" in self.broken:
            return 1, "", f"{key} refuses {rest[0]}"
        if self.journal is not None:
            assert key in self.journal.path.read_text(), "changed before it was journalled"
        self.state[key] = rest[0]
        return 0, "", ""



@undo_handler("test-kv", gone_with_namespace=False)
def _undo_kv(node: Node, data: dict) -> None:
    node.run(f"set {data['key']} {data['before']}")


@dataclass
class KeyValue(Operation):
    node: Node
    key: str
    value: str

    def check(self) -> None:
        if " " in self.value:
            raise SpecError(f"value {self.value!r} has a space", "use one word")

    def facts(self) -> dict[str, Fact]:
        def parse(res):
            if not res.ok:
                raise SpecError(f"{self.node.name} has no key {self.key}")
            return res.stdout

        return {"value": Fact(self.node, f"get {self.key}", parse)}

    def diff(self, facts: dict) -> list[Change]:
        before = facts["value"]
        change = Change(self.node, "kv", self.key, before, self.value, undo_kind="test-kv")
        if before != self.value:
            change.command = f"set {self.key} {self.value}"
            change.undo = {"key": self.key, "before": before}
        return [change]


@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch):
    """The fake machine runs one command per call (the group runner has tests of its own)."""
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


@pytest.fixture
def node(journal):
    return KeyValueNode("m", {"a": "1", "b": "2", "c": "3"}, journal)


def test_changes_are_journalled_with_their_record_before_they_are_made(journal, node):
    records = apply(journal, [KeyValue(node, "a", "10"), KeyValue(node, "b", "2")])
    assert [(r.target, r.before, r.after, r.changed) for r in records] == [
        ("a", "1", "10", True), ("b", "2", "2", False)]
    assert node.state["a"] == "10"
    # the run's configuration list is the journal's view, no-op included
    assert [(c["target"], c["before"], c["after"], c["changed"])
            for c in journal.configuration()] == [("a", "1", "10", True), ("b", "2", "2", False)]
    assert len(journal.pending()) == 1  # the no-op has nothing to undo
    journal.undo_all()
    assert node.state == {"a": "1", "b": "2", "c": "3"}


def test_all_facts_are_read_before_the_first_change(journal, node):
    with pytest.raises(SpecError, match="no key zz"):
        apply(journal, [KeyValue(node, "a", "10"), KeyValue(node, "zz", "1")])
    with pytest.raises(SpecError, match="has a space"):
        apply(journal, [KeyValue(node, "a", "10"), KeyValue(node, "b", "x y")])
    assert node.state["a"] == "1"
    assert journal.entries() == [] and journal.configuration() == []
    assert not any(c.startswith("set") for c in node.commands)


def test_a_failure_half_way_leaves_a_complete_record_naming_the_failed_change(journal):
    node = KeyValueNode("m", {"a": "1", "b": "2", "c": "3"}, journal, broken={"b=20"})
    with pytest.raises(ApplyFailed, match="m: kv b: b refuses 20"):
        apply(journal, [KeyValue(node, "a", "10"), KeyValue(node, "b", "20"),
                        KeyValue(node, "c", "30")])
    view = journal.configuration()
    assert [(c["target"], c["changed"], c.get("error")) for c in view] == [
        ("a", True, None), ("b", False, "b refuses 20"), ("c", True, None)]
    # reloaded from disk (another process, after a crash) it says the same
    assert Journal(journal.path).configuration() == view
    journal.undo_all()
    assert node.state == {"a": "1", "b": "2", "c": "3"}


def test_a_dry_run_reads_facts_and_changes_nothing(journal, node):
    changes = plan([KeyValue(node, "a", "10"), KeyValue(node, "b", "2")])
    assert [(c.before, c.after, c.changed) for c in changes] == [("1", "10", True),
                                                                ("2", "2", False)]
    assert node.state["a"] == "1" and not journal.path.exists()
    assert node.commands == ["get a", "get b"]


def test_a_node_not_built_has_unknown_facts_and_runs_nothing(node):
    changes = plan([KeyValue(node, "a", "10")], exists=lambda n: False)
    assert changes[0].before is UNKNOWN and changes[0].changed
    assert node.commands == []
    text = describe([c.record() for c in changes])
    assert text == "change m: kv a: unknown: not built in a dry run -> 10"


def test_the_journal_names_the_module_of_each_undo_handler(journal, node):
    apply(journal, [KeyValue(node, "a", "10")])
    line = json.loads(journal.path.read_text().splitlines()[0])
    assert line["module"] == __name__ and line["record"]["target"] == "a"


def _fresh_python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_another_process_imports_the_handler_module_the_entry_names(tmp_path):
    """`harness lab clean` after a SIGKILL: no list of modules, the entry says where."""
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"op": "do", "seq": 1, "kind": "mptcp-limits",
                                "node": {"type": "local", "name": "x"}, "data": {},
                                "module": "harness.config.mptcp"}) + "\n")
    out = _fresh_python(
        "import sys; from harness.journal import journal as j\n"
        f"e = j.Journal({str(path)!r}).entries()[0]\n"
        "assert 'harness.config.mptcp' not in sys.modules\n"
        "j.load_undo_handlers(e.module)\n"
        "print(sorted(k for k in j._HANDLERS if k.startswith('mptcp')))\n")
    assert out.split("\n")[0] == "['mptcp-endpoint', 'mptcp-limits']"


def test_an_old_journal_without_modules_finds_every_handler():
    out = _fresh_python("from harness.journal import journal as j\n"
                        "j.load_undo_handlers()\n"
                        "print(' '.join(sorted(j._HANDLERS)))\n")
    kinds = set(out.split())
    assert {"sysctl", "mtu", "offload", "nat-table", "tipc-bearer", "cgroup", "netns", "qdisc",
            "process", "file"} <= kinds


@dataclass
class Daemon(Operation):
    """A daemon (``sleep``, or a command that exits) started by apply as a background change."""

    node: Node
    command: str
    ready: str | None = None

    def facts(self) -> dict[str, Fact]:
        return {}

    def diff(self, facts: dict) -> list[Change]:
        return [Change(self.node, "test-daemon", "d", None, "running", command=self.command,
                       background=True, ready=self.ready)]


def test_a_background_change_is_a_journalled_process_with_its_record(journal):
    from harness.nodes.local import LocalNode

    records = apply(journal, [Daemon(LocalNode(), "exec sleep 60", ready="true")])
    assert [(r.kind, r.after, r.changed) for r in records] == [("test-daemon", "running", True)]
    (entry,) = journal.pending()
    assert entry.kind == "process" and entry.record["kind"] == "test-daemon"
    assert "sleep 60" in entry.data["command"] and alive(entry.data["pid"])
    assert [c["kind"] for c in journal.configuration()] == ["test-daemon"]
    journal.undo_all()
    assert not alive(entry.data["pid"]) and journal.pending() == []


def test_a_daemon_that_is_not_ready_fails_the_change_with_its_own_words(journal):
    from harness.nodes.local import LocalNode

    with pytest.raises(ApplyFailed, match="not ready yet.*said: (?s:.*)bad config"):
        apply(journal, [Daemon(LocalNode(), "echo bad config; exec sleep 60",
                               ready="echo not ready yet >&2; exit 1")])
    (entry,) = journal.pending()
    assert journal.configuration()[0]["error"].startswith("not ready yet")
    journal.undo_all()
    assert not alive(entry.data["pid"])


def test_a_daemon_that_exits_at_once_fails_the_change(journal):
    from harness.nodes.local import LocalNode

    with pytest.raises(ApplyFailed, match="exited, said: no such option"):
        apply(journal, [Daemon(LocalNode(), "echo no such option; exit 2",
                               ready="sleep 0.5; true")])
    journal.undo_all()
