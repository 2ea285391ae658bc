"""A real namespace lab: build, verify by measurement, tear down, also on errors and signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import group_alive, interruptible, needs_root, needs_tools, netns_names

from harness.errors import CapabilityMissing
from harness.journal.journal import Journal
from harness.lab.lab import Lab
from harness.lab.probe import probe
from harness.lab.verify import verify_lab
from harness.net.netlink import NetlinkError
from harness.nodes import LocalNode
from harness.topology.topology import TopologyBuilder

pytestmark = [pytest.mark.integration, needs_root, needs_tools("iperf3", "ping")]


def three_nodes(rate=200, **extra):
    return (TopologyBuilder("t3").node("a").node("r", forwarding=True).node("b")
            .link(("a", "eth0", "198.18.1.2/24"), ("r", "eth0", "198.18.1.1/24"),
                  rate_mbit=rate, **extra)
            .link(("b", "eth0", "198.18.2.2/24"), ("r", "eth1", "198.18.2.1/24"), rate_mbit=rate)
            .route("a", "198.18.0.0/15", via="198.18.1.1")
            .route("b", "198.18.0.0/15", via="198.18.2.1")
            .build())


def mine(prefix: str) -> set[str]:
    return {n for n in netns_names() if n.startswith(prefix + "-")}


def test_build_verify_teardown(journal):
    lab = Lab(three_nodes(), journal)
    with lab:
        assert mine(lab.prefix) == {f"{lab.prefix}-{n}" for n in ("a", "r", "b")}
        # routed end to end through the forwarding node
        ping = lab.node("a").run(["ping", "-c", "1", "-W", "2", "198.18.2.2"], check=False)
        assert ping.ok, ping.stdout
        # A measurement on a shared machine: a link gets up to three tries, its best must
        # meet the target (a wrong shaper fails all three, and the upper bound every time).
        best: dict[str, float] = {}
        for _ in range(3):
            for check in verify_lab(journal, lab, seconds=2, both_directions=False):
                assert check.goodput_mbit < check.link_layer_mbit  # headers are not goodput
                assert check.rate_ratio <= 1.03, check
                best[check.link] = max(best.get(check.link, 0.0), check.rate_ratio)
            if min(best.values()) >= 0.97:
                break
        assert min(best.values()) >= 0.97, best
        assert lab.node("r").run(["sysctl", "-n", "net.ipv4.ip_forward"]).stdout.strip() == "1"
    assert mine(lab.prefix) == set()
    assert journal.pending() == []
    assert lab.timings.build_s is not None and lab.timings.teardown_s is not None


def test_netem_is_refused_before_anything_changes_when_the_kernel_lacks_it(journal):
    if probe(LocalNode()).has("netem"):
        pytest.skip("this kernel has netem")
    lab = Lab(three_nodes(delay_ms=10), journal)
    with pytest.raises(CapabilityMissing, match="netem"):
        lab.build()
    assert mine(lab.prefix) == set()
    assert journal.entries() == []


def test_a_failure_half_way_removes_what_was_built(journal):
    topo = (TopologyBuilder("bad").node("a").node("b")
            .link(("a", "eth0", "198.18.1.2/24"), ("b", "eth0", "198.18.1.1/24"))
            # a gateway that is on no connected subnet: the kernel refuses the route
            .route("a", "198.18.0.0/15", via="203.0.113.1")
            .build())
    lab = Lab(topo, journal)
    # one error, with the kernel's refusal and the request it refused
    with pytest.raises(NetlinkError, match=r"route 198\.18\.0\.0/15 via 203\.0\.113\.1"):
        lab.build()
    assert mine(lab.prefix) == set()
    assert journal.pending() == []


def test_star_is_built_in_few_requests_every_change_journalled_and_undone(journal):
    """A star of 8 hosts (the benchmark's topology, smaller): one socket write per
    namespace, the records on disk in one write before anything is made, every host
    reaches its port and the others through the switch, and nothing is left."""
    n = 8
    b = TopologyBuilder("star").node("sw", forwarding=True)
    for i in range(1, n + 1):
        b.node(f"h{i}").link((f"h{i}", "eth0", f"198.18.{i}.2/24"),
                             ("sw", f"p{i}", f"198.18.{i}.1/24"), rate_mbit=100)
        b.route(f"h{i}", "198.18.0.0/15", via=f"198.18.{i}.1")
    lab = Lab(b.build(), journal)
    before = os.readlink("/proc/thread-self/ns/net")
    with lab:
        kinds = [e.kind for e in journal.entries()]
        assert kinds.count("netns") == n + 1 and kinds.count("veth") == n
        assert kinds.count("qdisc") == 2 * n and kinds.count("route") == n
        assert lab.timings.requests["netns"] == n + 1
        assert lab.timings.requests["veth"] == n
        # 9 namespaces configured + the veths from the root namespace
        assert lab.timings.requests["socket write"] == n + 2
        assert lab.timings.requests["qdisc/class"] == 4 * n  # htb root + class per end
        for i in (1, n):
            assert lab.node(f"h{i}").run(["ping", "-c", "1", "-W", "2",
                                          f"198.18.{i}.1"], check=False).ok
        across = lab.node("h1").run(["ping", "-c", "1", "-W", "2", f"198.18.{n}.2"],
                                    check=False)
        assert across.ok, across.stdout
        classes = lab.node(f"h{n}").run(["tc", "class", "show", "dev", "eth0"]).stdout
        assert "rate 100Mbit ceil 100Mbit" in classes, classes
        ports = lab.node("sw").run(["ip", "-o", "link", "show"]).stdout
        assert all(f" p{i}@" in ports for i in range(1, n + 1)), ports
    assert os.readlink("/proc/thread-self/ns/net") == before
    assert mine(lab.prefix) == set()
    assert journal.pending() == []
    lines = [json.loads(line) for line in journal.path.read_text().splitlines()]
    assert sum(line["op"] == "undone" for line in lines) == len(journal.entries())


def test_existing_namespace_name_is_refused(journal):
    lab = Lab(three_nodes(), journal)
    with lab:
        clash = Lab(three_nodes(), Journal(journal.path.with_name("other.jsonl")),
                    prefix=lab.prefix)
        with pytest.raises(Exception, match="already exist"):
            clash.build()
        # the clash changed nothing: the first lab is intact
        assert len(mine(lab.prefix)) == 3
    assert mine(lab.prefix) == set()


CHILD = r"""
import sys, time
from harness.journal.journal import Journal
from harness.lab.lab import Lab
from harness.net.netlink import NetlinkError
from harness.run.session import sigterm_as_interrupt
from harness.tools.iperf3 import iperf3_server
sys.path.insert(0, {tests!r})
from integration.test_lab import three_nodes
j = Journal({journal!r})
with sigterm_as_interrupt():
    with Lab(three_nodes(), j, prefix={prefix!r}) as lab:
        with iperf3_server(j, lab.node("b"), "198.18.2.2"):
            with j.process(lab.node("a"), ["iperf3", "-c", "198.18.2.2", "-t", "60"]) as p:
                print("measuring", p.pid, flush=True)
                time.sleep(120)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_measurement_leaves_nothing(tmp_path, sig):
    prefix = f"hsig{os.getpid() % 10000}{sig}"
    journal = tmp_path / "j.jsonl"
    code = CHILD.format(tests=os.path.dirname(os.path.dirname(__file__)), journal=str(journal),
                        prefix=prefix)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             preexec_fn=interruptible)
    line = child.stdout.readline()
    assert line.startswith("measuring"), line
    client_pid = int(line.split()[1])
    time.sleep(1.0)
    child.send_signal(sig)
    child.wait(timeout=60)
    assert mine(prefix) == set()
    assert Journal(journal).pending() == []
    assert not group_alive(client_pid)


def test_lab_clean_finishes_a_killed_run(tmp_path):
    """SIGKILL leaves everything; `harness lab clean` removes it from the run's journal."""
    from harness.archive.archive import Run

    run = Run.create("t", {}, tmp_path)
    prefix = f"hkill{os.getpid() % 10000}"
    code = CHILD.format(tests=os.path.dirname(os.path.dirname(__file__)),
                        journal=str(run.path / "journal.jsonl"), prefix=prefix)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("measuring"), line
        child.kill()
        child.wait(timeout=30)
        assert len(mine(prefix)) == 3  # a hard kill undoes nothing
        out = subprocess.run([sys.executable, "-m", "harness", "lab", "clean", "--data",
                              str(tmp_path)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "undoing" in out.stdout
        assert mine(prefix) == set()
        assert Journal(run.path / "journal.jsonl").pending() == []
        again = subprocess.run([sys.executable, "-m", "harness", "lab", "clean", "--data",
                                str(tmp_path)], capture_output=True, text=True, timeout=60)
        assert "nothing to clean" in again.stdout
    finally:
        if child.poll() is None:
            child.kill()
        for name in mine(prefix):  # only if the test failed: leave the machine clean
            subprocess.run(["ip", "netns", "delete", name])


def test_lab_record_is_json(journal):
    lab = Lab(three_nodes(), journal)
    with lab:
        rec = json.loads(json.dumps(lab.record()))
    assert rec["namespaces"]["a"] == f"{lab.prefix}-a"
    assert rec["egress_plans"]["a:eth0"]["rate_bit"] == 200_000_000


def test_command_backend_builds_the_same_lab(journal, monkeypatch):
    """The iproute2-command path (used for VMs and remote hosts), exercised on this host."""
    from harness.net.backend import CommandBackend

    lab = Lab(three_nodes(), journal)
    monkeypatch.setattr(lab, "_backend", lambda host: CommandBackend(host))
    with lab:
        assert len(mine(lab.prefix)) == 3
        qdisc = lab.node("a").run(["tc", "class", "show", "dev", "eth0"]).stdout
        assert "rate 200Mbit" in qdisc
        checks = verify_lab(journal, lab, seconds=1, both_directions=False)
        # shaped at its rate: a shaper missing or wrong is far outside this; the 0.97 target
        # is test_build_verify_teardown's (three tries), and the suite's other workers'
        # VMs can hold a 1 s test at ~0.96 here
        assert all(0.9 <= c.rate_ratio <= 1.03 for c in checks), checks
    assert mine(lab.prefix) == set()


@pytest.mark.parametrize("queue, kind", [({"queue_packets": 20}, "pfifo 10: parent 1:1 limit 20p"),
                                         ({"queue_bytes": 30000}, "bfifo 10: parent 1:1 limit 30000b")])
def test_bottleneck_queue_sits_under_the_shaper(journal, queue, kind):
    lab = Lab(three_nodes(**queue), journal)
    with lab:
        qdiscs = lab.node("a").run(["tc", "qdisc", "show", "dev", "eth0"]).stdout
        assert kind in qdiscs, qdiscs
