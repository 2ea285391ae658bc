"""S0's three methods measured on a testbed: the interleaved sweep, connection counts, NAT proof.

For each method (:data:`.design.METHODS`) a1 connects somewhere else --
b1 itself, fa's proxy, or fb's SRD through fa's NAT (:func:`method_path`).
The sweep measures all three in one ping-pong client run per repetition, so
a shared machine's load falls on them alike; the connection count is the
paper's Table 1; the NAT evidence proves that method 3 was translated and
method 1 was not. Relays, ports and addresses are S0's (:mod:`.design`).

A repetition is an independent sample: its relays are started for it (the
proxies' one shared connection is fresh too), its client opens fresh
connections, and the order of both factors -- the sizes, and the methods
within each size -- is drawn for it from the run's recorded seed.
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from ...config import nat
from ...errors import HarnessError, SpecError
from ...lab.serialisation import WireProbe, probe_path
from ...progress import progress
from ...relay.process import Relay, relay, srd_clients
from ...relay.trunk import TrunkKey
from ...tools import pingpong
from ...tools.cpu import ContextSwitches, group_context_switches
from ...tools.iperf3 import settle
from ...tools.sockets import ss_established
from .common import relay_counts
from .design import (
    LABELS,
    METHODS,
    MUX_PORT,
    PROXY_PORT,
    SERVER_PORT,
    SRD_PORT,
    Measurement,
    Params,
    lab_mtu,
)
from .validity import CAPACITY_SIZE

CAPACITY_TRANSFERS = 3  # bulk transfers per path; its capacity is the fastest
#: the relays each relayed method's messages cross (keys of :func:`main_relays`)
METHOD_RELAYS = {"proxies": ("fa_proxy", "fb_proxy"), "nat_srd": ("fb_srd",)}
#: the context-switch point: 1 B ping-pongs for this long per relayed method, after this many
#: unrecorded round trips (the relays' switches are read before and after the whole client run)
SWITCH_SIZE, SWITCH_BUDGET_S, SWITCH_WARMUP = 1, 0.2, 200


@contextmanager
def main_relays(meas: Measurement, check: bool = True) -> Iterator[dict[str, Relay]]:
    """The SRD on fb (method 3) and the proxy pair (method 2: fa's half carries every stream
    over one connection to fb's half). The ping-pong server on b1 must be up already;
    ``check``: each relay first checks that it answers (a Python start on fb: seconds in a
    TCG VM, where the distance sweep checks it once)."""
    p, j = meas.plan, meas.journal
    pair = TrunkKey.new()  # the proxies' trunk proves it (harness.relay.trunk)
    with relay(j, meas.node("fb"), "srd", f"{p.fb_pub}:{SRD_PORT}",
               f"{p.b1}:{SERVER_PORT}", check) as srd, \
            relay(j, meas.node("fb"), "mux-exit", f"{p.fb_pub}:{MUX_PORT}",
                  f"{p.b1}:{SERVER_PORT}", check, trunk_key=pair) as proxy_b, \
            relay(j, meas.node("fa"), "mux-entry", f"{p.fa_priv}:{PROXY_PORT}",
                  f"{p.fb_pub}:{MUX_PORT}", trunk_key=pair) as proxy_a:
        yield {"fb_srd": srd, "fa_proxy": proxy_a, "fb_proxy": proxy_b}


@dataclass
class Way:
    """Where a1 connects for one method, and the NAT table if the method uses one."""

    host: str
    port: int
    table: nat.NatTable | None = None


@contextmanager
def method_path(meas: Measurement, method: str) -> Iterator[Way]:
    """Make ``method`` the way from a1 to b1's server (the NAT table exists only inside)."""
    p = meas.plan
    if method == "direct":
        yield Way(p.b1, SERVER_PORT)
    elif method == "proxies":
        yield Way(p.fa_priv, PROXY_PORT)
    elif method == "nat_srd":
        fa = meas.node("fa")
        with nat.nat_applied(meas.journal, fa, p.nat_rules(), "s0", meas.nat_records) as table:
            yield Way(p.fb_pub, SRD_PORT, table)
    else:
        raise SpecError(f"unknown method {method!r}", f"use one of {METHODS}")


def nat_evidence(meas: Measurement, table: nat.NatTable, tag: str, client: str) -> dict:
    """Proof that ``client``'s connection was translated: NAT counters and fa's conntrack.

    ``client`` is the ip:port a1 connected from. Its conntrack entry must show
    the reply going to fa's public address; the table's counters show the
    translating rule was hit and how many bytes of translated connections fa
    forwarded. conntrack text and the table listing are archived raw.
    """
    p, fa = meas.plan, meas.node("fa")
    counters = table.counters()
    text = nat.conntrack_text(fa)
    ip, port = client.rsplit(":", 1)
    entries = [e for e in nat.parse_conntrack(text)
               if e.original.src == ip and e.original.sport == int(port)
               and e.original.dst == p.fb_pub and e.original.dport == SRD_PORT]
    translated = [e for e in entries if e.source_translated and e.reply.dst == p.fa_pub]
    meas.session.raw(f"nat-{tag}-conntrack.txt", text)
    meas.session.raw(f"nat-{tag}-table.txt", table.text())
    snat = next((v for k, v in counters.items() if k.startswith("snat")), {"packets": 0})
    fwd = counters.get(nat.TRANSLATED_COUNTER, {"packets": 0, "bytes": 0})
    return {"phase": tag, "table": table.name, "client": client,
            "rule_packets": snat["packets"], "translated_packets": fwd["packets"],
            "translated_bytes": fwd["bytes"], "conntrack_entries": len(entries),
            "conntrack_translated": len(translated),
            "translated_to": translated[0].reply.dst if translated else None}


def probe_wire(meas: Measurement, params: Params) -> WireProbe:
    """Whether the wire serialises each of the run's sizes: a ping-pong over the direct path
    (a1 -> b1: the three links every method crosses, routed by both fronts), each size against
    what a path of three serialising links of the rate carries (:mod:`harness.lab.serialisation`).
    The ping-pong server on b1 must be up."""
    return probe_path(meas.journal, meas.node("a1"), "direct", meas.plan.b1, SERVER_PORT,
                      params.sizes, params.rate_mbit or None, lab_mtu(meas.bed),
                      params.latency_budget_s, links=3, seed=meas.order.draw_seed())


def measure_capacity(meas: Measurement, params: Params) -> dict:
    """Each method's path capacity: :data:`CAPACITY_TRANSFERS` bulk transfers of its own (1 MB
    messages back to back for ``capacity_seconds`` each) through the same relays and NAT as
    the sweep's, the paths interleaved in a shuffled order; the capacity is the fastest of
    them (a shared machine's load only slows a transfer: seen at load 12-22, one transfer of
    NAT + SRD read 85.9 Mbit/s where its streaming points read 94.8). The ping-pong server on
    b1 must be up; the raw output is archived."""
    with main_relays(meas), ExitStack() as stack:
        ways = {m: stack.enter_context(method_path(meas, m)) for m in METHODS}
        result = pingpong.client(meas.journal, meas.node("a1"),
                                 {m: (w.host, w.port) for m, w in ways.items()},
                                 [CAPACITY_SIZE] * CAPACITY_TRANSFERS, 0.0,
                                 params.capacity_seconds, latency=False,
                                 seed=meas.order.draw_seed())
    meas.session.raw("capacity.json", json.dumps(result, indent=1))
    paths = {}
    for method, target in result["targets"].items():
        transfers = [p["stream"] for p in target["points"]]
        best = max(transfers, key=lambda st: st["mbit"])
        paths[method] = {"mbit": best["mbit"], "bytes": best["bytes"], "seconds": best["seconds"],
                         "transfers_mbit": [st["mbit"] for st in transfers]}
    return {"tool": "harness.tools.pingpong --no-latency (bulk transfers per path)",
            "message_bytes": CAPACITY_SIZE, "seconds_asked": params.capacity_seconds,
            "transfers": CAPACITY_TRANSFERS, "paths": paths}


def sweep(meas: Measurement, params: Params) -> list[dict]:
    """Ping-pong latency and streaming bandwidth per size, the three methods interleaved.

    One client run per repetition holds a connection for each method and
    measures them size by size in a shuffled order (seeded, recorded), so the load of a shared
    machine falls on all three alike. fa's NAT table exists during the whole
    repetition: it masquerades only cluster A's traffic to the public segment,
    so the direct connection (to B's private prefix) is tracked by conntrack
    but not translated.
    """
    a1 = meas.node("a1")
    rows = []
    with progress(params.repetitions, "s0 sizes x methods", unit="repetition") as bar:
        for rep in range(1, params.repetitions + 1):
            with main_relays(meas) as relays:
                rows += sweep_repetition(meas, params, a1, rep, relays)
                dead = [name for name, r in relays.items() if not r.running()]
                if rep == params.repetitions:
                    meas.relays_seen = {"records": [r.record() for r in relays.values()],
                                        "srd_on_fb": srd_clients(relays["fb_srd"])}
            if dead:
                raise HarnessError(f"relays {', '.join(dead)} died during repetition {rep}",
                                   "see the relays' output in the journal's process records")
            bar.step(f"repetition {rep}")
    return rows


def sweep_repetition(meas: Measurement, params: Params, a1, rep: int,
                     relays: dict[str, Relay] | None = None) -> list[dict]:
    """One repetition of :func:`sweep`: every size, the three methods in a shuffled order; with
    ``relays`` (:func:`main_relays`), then the relays' context switches per round trip
    (:func:`context_switch_point`, into ``meas.switch_rows``)."""
    rows = []
    started = time.monotonic()
    ways: dict[str, Way] = {}
    with ExitStack() as stack:
        for method in METHODS:
            ways[method] = stack.enter_context(method_path(meas, method))
        sizes = meas.order.shuffle(params.sizes)  # the sizes' order, drawn per repetition
        result = pingpong.client(meas.journal, a1,
                                 {m: (w.host, w.port) for m, w in ways.items()},
                                 sizes, params.latency_budget_s,
                                 params.stream_budget_s, seed=meas.order.draw_seed())
        for way in ways.values():
            if way.table is not None:
                meas.nat_rows.append(nat_evidence(
                    meas, way.table, f"r{rep}", result["targets"]["nat_srd"]["local"]))
        direct_local = result["targets"]["direct"]["local"]
        meas.nat_rows[-1]["direct_translated"] = any(
            e.source_translated for e in nat.conntrack_entries(meas.node("fa"))
            if f"{e.original.src}:{e.original.sport}" == direct_local)
        if relays is not None:
            meas.switch_rows += context_switch_point(meas, a1, ways, relays, rep)
    wall = time.monotonic() - started
    meas.session.raw(f"pingpong-r{rep}.json", json.dumps(result, indent=1))
    for method, target in result["targets"].items():
        for point in target["points"]:
            lat, st = point["latency"], point.get("stream") or {}
            rows.append({
                "method": method, "label": LABELS[method], "repetition": rep,
                "order": point["order"], "size_order": sizes.index(point["size"]),
                "size": point["size"],
                "half_rtt_us": lat["median_us"], "half_rtt_mean_us": lat["mean_us"],
                "half_rtt_p10_us": lat["p10_us"], "half_rtt_p90_us": lat["p90_us"],
                "half_rtt_min_us": lat["min_us"], "iterations": lat["n"],
                "pingpong_mbit": lat["pingpong_mbit"], "stream_mbit": st.get("mbit"),
                "stream_bytes": st.get("bytes"), "stream_s": st.get("seconds"),
                "stream_messages": st.get("messages"), "client": target["local"],
                "wall_s": wall,
            })
    settle(0.1)
    return rows


def context_switch_point(meas: Measurement, a1, ways: dict[str, Way], relays: dict[str, Relay],
                         rep: int) -> list[dict]:
    """The relays' context switches per round trip of each relayed method (000:27, 000:88).

    One ping-pong client run of 1 B messages over the two relayed methods (interleaved, as
    the sweep), the context switches of each method's relays (:data:`METHOD_RELAYS`, their
    process groups, :func:`harness.tools.cpu.group_context_switches`, voluntary and involuntary
    apart) read before and after it; each relay serves one method only, so its switches are
    that method's. The claims read both together (a relay's switch counts as involuntary when the
    shared machine preempts it before it sleeps, voluntary otherwise: preemption moves a switch
    between the columns, not out of their sum); both are kept apart beside it (:mod:`.switches`).
    Round trips:
    the recorded ones plus the warm-up; the few messages of connecting and of the batches'
    headers are counted in the switches but not as round trips (a few in thousands)."""
    groups = {m: [relays[name] for name in names] for m, names in METHOD_RELAYS.items()}

    def read(rs) -> ContextSwitches:
        return sum((group_context_switches(r.node, r.pgid) for r in rs), ContextSwitches())

    before = {m: read(rs) for m, rs in groups.items()}
    result = pingpong.client(meas.journal, a1, {m: (ways[m].host, ways[m].port) for m in groups},
                             [SWITCH_SIZE], SWITCH_BUDGET_S, 0, stream=False, warmup=SWITCH_WARMUP,
                             seed=meas.order.draw_seed())
    after = {m: read(rs) for m, rs in groups.items()}
    meas.session.raw(f"switches-r{rep}.json", json.dumps(result, indent=1))
    rows = []
    for method, rs in groups.items():
        round_trips = result["targets"][method]["points"][0]["latency"]["n"] + SWITCH_WARMUP
        switches = after[method] - before[method]
        rows.append({"method": method, "label": LABELS[method], "repetition": rep,
                     "relays": len(rs), "size": SWITCH_SIZE, "round_trips": round_trips,
                     "context_switches": switches.total, "voluntary": switches.voluntary,
                     "involuntary": switches.involuntary,
                     "per_round_trip": switches.total / round_trips,
                     "voluntary_per_round_trip": switches.voluntary / round_trips,
                     "involuntary_per_round_trip": switches.involuntary / round_trips})
    return rows


def count_connections(meas: Measurement, params: Params) -> list[dict]:
    """Hold ``flows`` connections per method open and count where TCP connections end.

    The paper's Table 1 counts connections between the front nodes; here every
    established connection on fa, fb and b1 that belongs to the study's ports
    is counted while the flows are open, and fa's conntrack says which ones
    were translated.
    """
    p = meas.plan
    rows = []
    for method in METHODS:
        with main_relays(meas), method_path(meas, method) as path:
            with pingpong.hold_connections(meas.journal, meas.node("a1"), path.host, path.port,
                                           params.flows):
                seen = {n: ss_established(meas.node(n)) for n in ("fa", "fb", "b1")}
                snat = 0
                if method == "nat_srd":
                    snat = sum(1 for e in nat.conntrack_entries(meas.node("fa"))
                               if e.state == "ESTABLISHED" and e.original.dst == p.fb_pub
                               and e.reply.dst == p.fa_pub and e.original.src != p.fa_pub)
        meas.session.raw(f"connections-{method}.json", json.dumps(seen, indent=1))
        fa_in = sum(1 for c in seen["fa"] if c[1] == PROXY_PORT and method == "proxies")
        # only this method's relay port: the other methods' relays run too (the proxy's
        # shared connection is open from its start, whoever measures)
        port = {"proxies": MUX_PORT, "nat_srd": SRD_PORT}.get(method)
        fa_out = sum(1 for c in seen["fa"] if c[3] == port and c[2] == p.fb_pub)
        fb_in = [c for c in seen["fb"] if c[1] == port]
        fb_out = sum(1 for c in seen["fb"] if c[3] == SERVER_PORT and port is not None)
        b1_in = [c for c in seen["b1"] if c[1] == SERVER_PORT]
        a_net = ipaddress.ip_network(p.a_private)
        b1_from_a = sum(1 for c in b1_in if ipaddress.ip_address(c[2]) in a_net)
        fb_from_public = sum(1 for c in fb_in if c[2] == p.fa_pub)
        fb_from_private_a = sum(1 for c in fb_in if ipaddress.ip_address(c[2]) in a_net)
        total = fa_in + len(fb_in) + len(b1_in)
        rows.append({
            "method": method, "label": LABELS[method], "flows": params.flows,
            # connections whose packets cross the public segment between the fronts
            "public_segment_connections": fb_from_public + fb_from_private_a + b1_from_a,
            "front_to_front_connections": fa_out + fb_from_public,
            "terminated_at_fa": fa_in, "opened_by_fa": fa_out,
            "terminated_at_fb": len(fb_in), "opened_by_fb": fb_out,
            "b1_peers_in_cluster_a": b1_from_a, "fb_peers_fa_public": fb_from_public,
            "fb_peers_in_cluster_a": fb_from_private_a, "snat_entries_fa": snat,
            "tcp_connections_per_flow": total / params.flows,
            **relay_counts(fa_in, len(fb_in), params.flows),
        })
    return rows

