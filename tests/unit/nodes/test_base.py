"""What a node tells about itself: its machine, whether it is local, how to reach into it."""

from __future__ import annotations

import shlex

from harness.nodes import LocalNode, NamespaceNode
from harness.nodes.ssh import SSHNode


def test_a_machine_is_its_own_machine_and_namespaces_find_theirs_through_layers():
    local, remote = LocalNode(), SSHNode("r", "192.0.2.1")
    outer = NamespaceNode("outer", remote)
    inner = NamespaceNode("inner", outer)
    assert local.machine is local and remote.machine is remote
    assert outer.machine is remote and inner.machine is remote
    assert NamespaceNode("x", local).machine is local


def test_local_means_this_controlling_machine_also_through_namespaces():
    local, remote = LocalNode(), SSHNode("r", "192.0.2.1")
    assert local.is_local and NamespaceNode("x", NamespaceNode("y", local)).is_local
    assert not remote.is_local and not NamespaceNode("x", remote).is_local


def test_netns_path_only_for_namespaces():
    assert LocalNode().netns_path is None
    assert SSHNode("r", "192.0.2.1").netns_path is None
    assert NamespaceNode("lab-a").netns_path == "/run/netns/lab-a"


def test_command_on_machine_wraps_once_per_namespace_layer():
    local = LocalNode()
    assert local.command_on_machine("echo $x") == "echo $x"
    assert local.command_on_machine(["echo", "a b"]) == "echo 'a b'"
    inner = NamespaceNode("in", NamespaceNode("out", local))
    # a shell line gets sh -c inside the innermost namespace
    argv = shlex.split(inner.command_on_machine("echo $x"))
    assert argv[:3] == ["nsenter", "--net=/run/netns/out", "--"]
    nested = shlex.split(argv[-1])
    assert nested == ["nsenter", "--net=/run/netns/in", "--", "sh", "-c", "echo $x"]
    # an argv is exec'd by nsenter, no shell in between
    assert shlex.split(NamespaceNode("a", local).command_on_machine(["prog", "a b"])) == [
        "nsenter", "--net=/run/netns/a", "--", "prog", "a b"]
