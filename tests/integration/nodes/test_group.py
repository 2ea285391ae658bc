"""The group runner on real namespaces: wrapping, separate streams, exit codes, mounts kept."""

from __future__ import annotations

import os

import pytest
from conftest import needs_root, netns_names

from harness.lab.lab import Lab
from harness.nodes import LocalNode
from harness.nodes.group import Call, run_group
from harness.topology.topology import TopologyBuilder

pytestmark = [pytest.mark.integration, needs_root]


def pair():
    return (TopologyBuilder("g2").node("a").node("b")
            .link(("a", "eth0", "198.18.7.1/24"), ("b", "eth0", "198.18.7.2/24"))
            .build())


def test_calls_run_inside_their_namespaces_with_separate_streams_and_statuses(journal):
    local = LocalNode()
    root_ns = os.readlink("/proc/self/ns/net")
    with Lab(pair(), journal) as lab:
        a, b = lab.node("a"), lab.node("b")
        results = run_group([
            Call(a, "readlink /proc/self/ns/net; ip -br addr show dev eth0"),
            Call(b, ["ping", "-n", "-c", "1", "-W", "2", "198.18.7.1"]),
            Call(local, "readlink /proc/self/ns/net"),
            Call(b, "echo to-err >&2; printf partial; exit 7"),
            Call(a, ["ip", "link", "show", "dev", "nonexistent0"]),
        ], jobs=2)
        ns_a, addr = results[0].stdout.splitlines()
        assert ns_a != root_ns and "198.18.7.1/24" in addr and results[0].node == "a"
        assert results[1].ok and "1 received" in results[1].stdout
        assert results[2].stdout.strip() == root_ns
        assert (results[3].stdout, results[3].stderr, results[3].exit_status) == \
            ("partial", "to-err\n", 7)
        assert results[4].exit_status != 0 and "nonexistent0" in results[4].stderr
        assert results[4].stdout == ""
        # the namespace wrapping keeps the machine's mount namespace (ip netns exec would not)
        mounts = run_group([Call(a, "readlink /proc/self/ns/mnt")])[0].stdout.strip()
        assert mounts == os.readlink("/proc/self/ns/mnt")
    assert not {n for n in netns_names() if n.startswith(lab.prefix + "-")}


def test_no_work_directory_is_left_behind(journal, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with Lab(pair(), journal) as lab:
        results = run_group([Call(lab.node("a"), "echo $TMPDIR"), Call(lab.node("b"), "exit 1")])
        assert results[0].stdout.strip() == str(tmp_path)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("harness-group-")]
