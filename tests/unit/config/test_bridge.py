"""A switch node's ports joined in one bridge (S3's Ethernet bearer): checks, the refusals
before any change, and on a real kernel the bridge made and undone (a namespace of this
test's own, removed by its exact name)."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from conftest import CommandOnlyNode, is_root

from harness.config import operation
from harness.config.bridge import UNDO_KIND, L2Switch
from harness.config.operation import apply, plan
from harness.errors import SpecError
from harness.journal.journal import _HANDLERS


@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch):
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


ADDR = json.dumps([
    {"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]},
    {"ifname": "red", "addr_info": [{"family": "inet", "local": "198.19.0.1", "prefixlen": 24},
                                    {"family": "inet6", "local": "fe80::1", "prefixlen": 64}]},
    {"ifname": "m01", "addr_info": [{"family": "inet", "local": "198.18.1.1", "prefixlen": 24}]},
])


class Switch(CommandOnlyNode):
    """Answers ``ip -j addr show`` with ``text``; remembers every command."""

    def __init__(self, text=ADDR, namespace=""):
        self.name, self.text, self.namespace, self.commands = "switch", text, namespace, []

    def describe(self):
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        if self.namespace:
            done = subprocess.run(["ip", "netns", "exec", self.namespace, "sh", "-c", cmd],
                                  capture_output=True, text=True, timeout=60)
            return done.returncode, done.stdout, done.stderr
        if cmd == "ip -j addr show":
            return 0, self.text, ""
        return 0, "", ""


def test_the_change_records_each_ports_addresses_and_moves_them_to_the_bridge():
    node = Switch()
    (change,) = plan([L2Switch(node, "s3sw", ("red", "m01"), isolated=("m01",))])
    assert change.kind == "l2-switch" and change.undo_kind == UNDO_KIND
    assert change.before == {"red": ["198.19.0.1/24"], "m01": ["198.18.1.1/24"]}
    assert change.undo == {"name": "s3sw", "addresses": change.before}
    assert "link set dev m01 master s3sw" in change.command
    assert "'addr add 198.19.0.1/24 dev s3sw'" in change.command
    assert change.command.endswith("'link set dev m01 isolated on' | bridge -batch -")
    assert "red isolated" not in change.command  # the reducer's port reaches every mapper


@pytest.mark.parametrize("op, message", [
    (dict(ports=()), "has no ports"),
    (dict(ports=("red", "red")), "names a port twice"),
    (dict(ports=("red",), isolated=("m01",)), "not among its ports"),
    (dict(ports=("red; rm -rf /",)), "ifname"),
    (dict(name="x" * 16, ports=("red",)), "name"),
])
def test_bad_arguments_are_refused_before_any_fact(op, message):
    node = Switch()
    with pytest.raises(Exception, match=message):
        plan([L2Switch(node, **{"name": "s3sw", **op})])
    assert node.commands == []


@pytest.mark.parametrize("text, message", [
    (json.dumps([{"ifname": "s3sw"}, {"ifname": "red"}]), "already has an interface s3sw"),
    (json.dumps([{"ifname": "red"}]), "has no interface m01"),
])
def test_a_node_not_as_expected_is_refused_with_nothing_changed(journal, text, message):
    node = Switch(text)
    with pytest.raises(SpecError, match=message):
        apply(journal, [L2Switch(node, "s3sw", ("red", "m01"))])
    assert node.commands == ["ip -j addr show"] and journal.entries() == []


@pytest.mark.skipif(not is_root(), reason="needs root for a network namespace")
def test_on_a_real_kernel_the_bridge_is_made_and_the_undo_gives_the_ports_back(journal):
    namespace = f"s3brtest-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        def ip(*args):
            return subprocess.run(["ip", "-n", namespace, *args], check=True,
                                  capture_output=True, text=True).stdout

        ip("link", "add", "red", "type", "veth", "peer", "name", "r2")
        ip("link", "add", "m01", "type", "veth", "peer", "name", "x01")
        ip("addr", "add", "198.19.0.1/24", "dev", "red")
        ip("addr", "add", "198.18.1.1/24", "dev", "m01")
        node = Switch(namespace=namespace)
        (record,) = apply(journal, [L2Switch(node, "s3sw", ("red", "m01"), isolated=("m01",))])
        assert record.changed
        addrs = {e["ifname"]: [a["local"] for a in e.get("addr_info", [])
                               if a["family"] == "inet"]
                 for e in json.loads(ip("-j", "addr", "show"))}
        assert addrs["s3sw"] == ["198.19.0.1", "198.18.1.1"]
        assert addrs["red"] == [] and addrs["m01"] == []
        links = {e["ifname"]: e for e in json.loads(subprocess.run(
            ["ip", "netns", "exec", namespace, "bridge", "-d", "-j", "link", "show"],
            check=True, capture_output=True, text=True).stdout)}
        assert links["m01"].get("isolated") is True and links["red"].get("isolated") is False
        (entry,) = journal.entries()
        _HANDLERS[UNDO_KIND](node, entry.data)
        addrs = {e["ifname"]: [a["local"] for a in e.get("addr_info", [])
                               if a["family"] == "inet"]
                 for e in json.loads(ip("-j", "addr", "show"))}
        assert "s3sw" not in addrs
        assert addrs["red"] == ["198.19.0.1"] and addrs["m01"] == ["198.18.1.1"]
    finally:
        subprocess.run(["ip", "netns", "del", namespace], check=False)
