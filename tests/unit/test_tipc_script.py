"""The per-node script runner used to probe and configure TIPC on many namespaces at once."""

from __future__ import annotations

from harness.config.tipc import sections_script
from harness.nodes import LocalNode


def test_sections_keep_each_commands_output_apart_and_in_order():
    commands = {i: f"sleep 0.0{9 - i}; echo out-{i}; echo err-{i} >&2" for i in range(10)}
    text = LocalNode("t").run(sections_script(commands, jobs=4), timeout=30).stdout
    parts = text.split("@@node ")[1:]
    assert [int(p.split(None, 1)[0]) for p in parts] == list(range(10))
    for i, part in enumerate(parts):
        assert part.split("\n", 1)[1].split() == [f"out-{i}", f"err-{i}"]


def test_a_failing_command_does_not_stop_the_others():
    text = LocalNode("t").run(sections_script({0: "exit 3", 1: "echo fine"}), timeout=30).stdout
    assert "@@node 1\nfine" in text
