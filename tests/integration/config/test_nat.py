"""The NAT configuration operation on a real namespace lab: created, counted, removed exactly.

Lab: client c (private 10.9.0.0/24) -- router r -- server s (198.18.5.0/24). The
server has no route back to the private prefix, so a connection from c to s
works only if r translates it: a test that passes without NAT is impossible.
"""

from __future__ import annotations

import json
import shutil
import socket

import pytest
from conftest import needs_root, needs_tools

from harness.config import nat
from harness.errors import SpecError
from harness.lab.lab import Lab
from harness.relay.line import netns_socket
from harness.topology.topology import TopologyBuilder

pytestmark = [pytest.mark.integration, needs_root, needs_tools("nft", "conntrack")]

RULES = nat.NatRules(masquerade=(nat.Masquerade("10.9.0.0/24", "out", "198.18.5.0/24"),))


@pytest.fixture
def lab(journal):
    topo = (TopologyBuilder("nat-test").node("c").node("r", forwarding=True).node("s")
            .link(("c", "eth0", "10.9.0.2/24"), ("r", "in", "10.9.0.1/24"))
            .link(("r", "out", "198.18.5.1/24"), ("s", "eth0", "198.18.5.2/24"))
            .route("c", "198.18.5.0/24", via="10.9.0.1")
            .build())
    with Lab(topo, journal) as built:
        yield built


def tables(node) -> set[tuple[str, str]]:
    out = node.run(["nft", "-j", "list", "tables"], timeout=10).stdout
    return {(t["table"]["family"], t["table"]["name"])
            for t in json.loads(out)["nftables"] if "table" in t}


def exchange(lab, timeout: float = 2.0) -> str | None:
    """Connect c -> s:9000, send 64 KB and get it back; return the peer address s saw."""
    server = netns_socket(lab.node("s"))
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("198.18.5.2", 9000))
    server.listen(1)
    server.settimeout(timeout)
    client = netns_socket(lab.node("c"))
    client.settimeout(timeout)
    try:
        client.connect(("198.18.5.2", 9000))
        conn, peer = server.accept()
        with conn:
            client.sendall(b"x" * 65536)
            got = 0
            while got < 65536:
                got += len(conn.recv(65536))
            conn.sendall(b"ok")
            assert client.recv(2) == b"ok"
        return peer[0]
    except OSError:
        return None
    finally:
        client.close()
        server.close()


def test_masquerade_translates_counts_and_is_removed_exactly(journal, lab):
    router = lab.node("r")
    # Someone else's table in the same namespace must survive our removal untouched.
    router.run(["nft", "add", "table", "ip", "someone_else"], timeout=10)
    assert exchange(lab, timeout=1.0) is None  # no route back without NAT
    records: list = []
    with nat.nat_applied(journal, router, RULES, "test", records) as table:
        assert ("ip", table.name) in tables(router)
        assert table.name.startswith("harness_test_")
        # journalled before it was created, with what the undo needs
        entry = [e for e in journal.entries() if e.kind == "nat-table"][-1]
        assert entry.data == {"family": "ip", "table": table.name}
        assert exchange(lab) == "198.18.5.1"  # the server saw the router's public address
        counters = table.counters()
        snat = counters[RULES.masquerade[0].counter]
        assert snat["packets"] == 1  # the first packet of the one connection
        assert counters[nat.TRANSLATED_COUNTER]["bytes"] > 65536
        translated = [e for e in nat.conntrack_entries(router)
                      if e.original.src == "10.9.0.2" and e.original.dport == 9000]
        assert translated and all(e.reply.dst == "198.18.5.1" for e in translated)
        assert records[0].kind == "nat-table" and records[0].changed
    assert ("ip", table.name) not in tables(router)
    assert ("ip", "someone_else") in tables(router)
    assert not table.exists()
    assert exchange(lab, timeout=1.0) is None  # translation really gone


def test_undo_from_the_journal_alone_removes_the_table(journal, lab):
    router = lab.node("r")
    table, _record = nat.apply_nat(journal, router, RULES, "crash")
    assert table.exists()
    journal.undo_all(after_seq=table.entry.seq - 1)  # as `harness lab clean` would
    assert not table.exists()
    journal.undo(table.entry)  # repeating is harmless


def test_missing_device_is_refused_before_any_change(journal, lab):
    router = lab.node("r")
    before = tables(router)
    bad = nat.NatRules(masquerade=(nat.Masquerade("10.9.0.0/24", "wan0"),))
    with pytest.raises(SpecError, match="no interface wan0"):
        nat.apply_nat(journal, router, bad, "bad")
    assert tables(router) == before
    assert not [e for e in journal.entries() if e.kind == "nat-table"]


@pytest.mark.skipif(shutil.which("nft") is None, reason="nft missing")
def test_probe_reports_tables_devices_and_forwarding(lab):
    probe = nat.probe_nat(lab.node("r"))
    assert probe.nft_version.startswith("nftables")
    assert {"in", "out", "lo"} <= set(probe.devices)
    assert probe.ip_forward == "1"
