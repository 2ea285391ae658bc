"""S0's unshaped relay benchmark: kernel forwarding, socat and our SRD side by side.

Beyond the paper's three methods: what the relays cost when the link does
not limit them. Six paths from a1 to b1 -- direct (kernel forwarding), NAT on fa + a
relay on fb, or a relay on each front -- with srd or socat as the relay, and the sweep's own
two proxies (srdmux: every stream over one shared connection between the fronts), whose
unshaped rate S0's regime gate for the two-proxies claims reads. Per
path: iperf3 throughput, the relays' CPU time (their process groups, via
/proc) and the 1 B / 64 KB ping-pong half round trip; NPtcp once as a
cross-check of the ping-pong tool.

It runs on an unshaped lab of its own (the main one is shaped to the
paper's 100 Mbit/s), or on the main testbed when that is already unshaped
or made of real machines. Ports and the path plan are S0's (:mod:`.design`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from ...config import nat
from ...errors import HarnessError
from ...nodes.facts import wait_listening
from ...progress import progress
from ...relay.process import Relay, relay
from ...relay.trunk import TrunkKey
from ...run.session import Session
from ...run.testbed import InventoryTestbed
from ...tools import pingpong
from ...tools.cpu import group_cpu_seconds
from ...tools.iperf3 import iperf3_client, iperf3_server, settle
from ...tools.registry import Tool
from ..order import MeasuringOrder
from .common import BENCH_PATHS
from .design import (
    IPERF_OFFSET,
    IPERF_PORT,
    MUX_PORT,
    NPTCP_PORT,
    PROXY_PORT,
    SERVER_PORT,
    SOCAT_OFFSET,
    SRD_PORT,
    Measurement,
    Params,
    Plan,
    topology,
)

NPTCP = Tool("NPtcp", "dpkg-query -W netpipe-tcp", "netpipe-tcp")  # NetPIPE's TCP test

#: the benchmark's srdmux pair (the sweep's two proxies) listens this far above the srd ports
MUX_OFFSET = 20
BENCH_ROUTES = {  # path -> (where a1 connects, ping-pong/iperf3 port offset, NAT on fa)
    "direct": ("b1", None, False),
    "nat_srd": ("fb_pub", 0, True), "nat_socat": ("fb_pub", SOCAT_OFFSET, True),
    "proxies_srd": ("fa_priv", 0, False), "proxies_socat": ("fa_priv", SOCAT_OFFSET, False),
    "proxies_srdmux": ("fa_priv", MUX_OFFSET, False),
}


def measure_bench(session: Session, params: Params, main_bed, nat_records: list,
                  order: MeasuringOrder) -> tuple[list[dict], str, float | None]:
    """The benchmark on its testbed: (rows, where it ran, NPtcp's direct 1 B half-RTT in us)."""
    with ExitStack() as stack:
        bench_bed, where = build_bench_bed(session, stack, params, main_bed)
        meas = Measurement(session, bench_bed, Plan.of(bench_bed), nat_records=nat_records,
                           order=order)
        if bench_bed is not main_bed:
            session.note(bench_testbed=bench_bed.record())
        rows = bench(meas, params)
        nptcp_us = nptcp_half_rtt_us(meas, meas.plan.b1)
    return rows, where, nptcp_us


def build_bench_bed(session: Session, stack: ExitStack, params: Params, main_bed):
    """The unshaped lab for the benchmark: the main one if already unshaped, else a new one."""
    if isinstance(main_bed, InventoryTestbed) or not params.rate_mbit:
        return main_bed, "main testbed (" + ("inventory" if isinstance(main_bed, InventoryTestbed)
                                             else "unshaped lab") + ")"
    from ...lab.lab import Lab
    from ...run.testbed import LabTestbed

    # on the machine that holds the main lab (this host, or the VM placement chose)
    main = main_bed.lab
    topo = topology(params, unshaped=True, name="s0-relay-bench")
    lab = stack.enter_context(Lab(topo, session.journal, main.host,
                                  capabilities=main.capabilities))
    return LabTestbed(lab), "second namespace lab, unshaped"


@contextmanager
def bench_relays(meas: Measurement) -> Iterator[dict[tuple[str, str], Relay]]:
    """srd and socat on both fronts at once, and an srdmux pair, for ping-pong and iperf3:
    twelve relays.

    Keys are (node, listen port). Started once, they let the benchmark
    interleave its paths; an idle relay waits in epoll/accept and costs nothing.
    """
    p, j = meas.plan, meas.journal
    relays: dict[tuple[str, str], Relay] = {}
    with ExitStack() as stack:
        for kind, extra in (("srd", 0), ("socat", SOCAT_OFFSET)):
            for offset, server_port in ((0, SERVER_PORT), (IPERF_OFFSET, IPERF_PORT)):
                # check the ping-pong targets (iperf3 would log a refused control connection)
                check = offset == 0
                port_b = SRD_PORT + extra + offset
                relays[("fb", str(port_b))] = stack.enter_context(relay(
                    j, meas.node("fb"), kind, f"{p.fb_pub}:{port_b}", f"{p.b1}:{server_port}",
                    check))
                port_a = PROXY_PORT + extra + offset
                relays[("fa", str(port_a))] = stack.enter_context(relay(
                    j, meas.node("fa"), kind, f"{p.fa_priv}:{port_a}", f"{p.fb_pub}:{port_b}",
                    check))
        for offset, server_port in ((0, SERVER_PORT), (IPERF_OFFSET, IPERF_PORT)):
            pair = TrunkKey.new()  # as the sweep's (measure.main_relays), a pair per target
            port_b = MUX_PORT + MUX_OFFSET + offset
            relays[("fb", str(port_b))] = stack.enter_context(relay(
                j, meas.node("fb"), "mux-exit", f"{p.fb_pub}:{port_b}", f"{p.b1}:{server_port}",
                offset == 0, trunk_key=pair))
            port_a = PROXY_PORT + MUX_OFFSET + offset
            relays[("fa", str(port_a))] = stack.enter_context(relay(
                j, meas.node("fa"), "mux-entry", f"{p.fa_priv}:{port_a}", f"{p.fb_pub}:{port_b}",
                trunk_key=pair))
        yield relays
        for r in relays.values():  # a crash would show as a dead relay here
            if not r.running():
                raise HarnessError(f"{r.kind} relay on {r.node.name} ({r.listen}) died during "
                                   f"the benchmark: {r.process.output()[-300:]}")


def bench_destination(meas: Measurement, path: str, iperf: bool) -> tuple[str, int]:
    """(host, port) a1 connects to on ``path``: all relays run at once, each on its own port."""
    where, offset, _nat = BENCH_ROUTES[path]
    host = getattr(meas.plan, where)
    if offset is None:
        return host, IPERF_PORT if iperf else SERVER_PORT
    base = SRD_PORT if where == "fb_pub" else PROXY_PORT
    return host, base + offset + (IPERF_OFFSET if iperf else 0)


def relays_on_path(meas: Measurement, path: str, relays) -> list[Relay]:
    """The relays an iperf3 test on ``path`` goes through."""
    _where, offset, _nat = BENCH_ROUTES[path]
    if offset is None:
        return []
    exit_port = MUX_PORT if path == "proxies_srdmux" else SRD_PORT  # fb's half of the path
    out = [relays[("fb", str(exit_port + offset + IPERF_OFFSET))]]
    if path.startswith("proxies"):
        out.append(relays[("fa", str(PROXY_PORT + offset + IPERF_OFFSET))])
    return out


def nptcp_half_rtt_us(meas: Measurement, host: str, iterations: int = 2000) -> float | None:
    """NetPIPE's 1 B half round trip on a path (cross-check of the ping-pong tool)."""
    a1, b1 = meas.node("a1"), meas.node("b1")
    if not (a1.has_command("NPtcp") and b1.has_command("NPtcp")):
        return None
    import secrets

    common = f"-l 1 -u 1 -n {iterations} -p 0"
    dirs = []
    for node in (a1, b1):
        path = f"/tmp/harness-nptcp-{secrets.token_hex(4)}"
        dirs.append((meas.journal.record("file", node.machine, path=path), path))
        node.run(["mkdir", path], timeout=10)
    try:
        receiver = f"cd {dirs[1][1]} && exec NPtcp -P {NPTCP_PORT} {common}"
        with meas.journal.process(b1, receiver):
            wait_listening(b1, NPTCP_PORT, 10)
            out = a1.run(f"cd {dirs[0][1]} && NPtcp -h {host} -P {NPTCP_PORT} {common} "
                         f"-o np.out >/dev/null 2>&1; cat np.out", check=False, timeout=60,
                         track=True)
        cols = out.stdout.split()
        return float(cols[2]) * 1e6 if len(cols) >= 3 else None
    finally:
        for entry, _ in dirs:
            meas.journal.undo(entry)


def bench(meas: Measurement, params: Params) -> list[dict]:
    """Kernel forwarding, socat and srd side by side: iperf3, relay CPU, 1 B / 64 KB half-RTT.

    Per repetition: one ping-pong client measures all five paths interleaved
    (fa's NAT table up, as for the sweep); then iperf3 runs path by path, with
    the NAT table only for the NAT paths, so kernel forwarding is measured
    without connection tracking.
    """
    j, a1 = meas.journal, meas.node("a1")
    rows = []
    with pingpong.server(j, meas.node("b1"), meas.plan.b1, SERVER_PORT), \
            iperf3_server(j, meas.node("b1"), meas.plan.b1, IPERF_PORT), \
            bench_relays(meas) as relays, \
            progress(params.bench_repetitions, "s0 benchmark", unit="repetition") as bar:
        for rep in range(1, params.bench_repetitions + 1):
            with nat.nat_applied(j, meas.node("fa"), meas.plan.nat_rules(), "s0b", meas.nat_records):
                order = meas.order.shuffle(BENCH_PATHS)
                lat = pingpong.client(j, a1, {path: bench_destination(meas, path, False)
                                              for path in order},
                                      [1, 65536], 0.2, 0, stream=False, warmup=200,
                                      seed=meas.order.draw_seed())
            meas.session.raw(f"bench-pingpong-r{rep}.json", json.dumps(lat, indent=1))
            nat_first = [pth for pth in order if BENCH_ROUTES[pth][2]] + \
                [pth for pth in order if not BENCH_ROUTES[pth][2]]
            for path in nat_first:
                with ExitStack() as stack:
                    if BENCH_ROUTES[path][2]:
                        stack.enter_context(nat.nat_applied(j, meas.node("fa"),
                                                            meas.plan.nat_rules(), "s0b",
                                                            meas.nat_records))
                    host, port = bench_destination(meas, path, True)
                    groups = relays_on_path(meas, path, relays)
                    cpu0 = sum(group_cpu_seconds(r.node, r.pgid) for r in groups)
                    t0 = time.monotonic()
                    tput = iperf3_client(a1, host, port, seconds=params.bench_seconds)
                    elapsed = time.monotonic() - t0
                    cpu = sum(group_cpu_seconds(r.node, r.pgid) for r in groups) - cpu0
                meas.session.raw(f"bench-{path}-r{rep}-iperf3.json", json.dumps(tput.raw))
                by_size = {pt["size"]: pt["latency"] for pt in lat["targets"][path]["points"]}
                gbytes = tput.bytes_received / 1e9
                rows.append({
                    "path": path, "relay": path.split("_")[1] if "_" in path else "kernel",
                    "hops": 0 if path == "direct" else 2 if path.startswith("proxies") else 1,
                    "nat": BENCH_ROUTES[path][2], "repetition": rep,
                    "iperf_mbit": tput.received_bps / 1e6, "retransmits": tput.retransmits,
                    "relay_cpu_s": cpu if groups else None,
                    "relay_cpu_cores": cpu / elapsed if groups else None,
                    "relay_cpu_s_per_gb": cpu / gbytes if groups and gbytes else None,
                    "half_rtt_1b_us": by_size[1]["median_us"],
                    "half_rtt_1b_p90_us": by_size[1]["p90_us"],
                    "half_rtt_64k_us": by_size[65536]["median_us"],
                })
                settle(0.1)
            bar.step(f"repetition {rep}")
    return rows
