"""S1's measurement: every repetition, CPU level, method and size, each in an order shuffled
from the run's seed; one method over its sizes (perftest, qperf, msgcount or the ping-pong
tool); the qperf cross-check point; and the devices' ``ibv_devinfo`` behind Table 1.

:meth:`harness.studies.s1.study.S1.measure` calls :func:`measure` once the lab is configured.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd

from ... import msgcount
from ...errors import HarnessError
from ...progress import progress
from ...run.session import Session
from ...tools import ibverbs, perftest, perftest_sweep, pingpong, qperf
from ..order import MeasuringOrder
from .cpus import cpu_level, host_cores
from .design import METHODS, MSGCOUNT_PORT, PERFTEST_PORT, QPERF_PORT, RXE, TCP_PORT, WIRE, Params
from .rows import bandwidth_rows, latency_rows, qperf_rows, tcp_rows


@dataclass
class Pair:
    """The two ends: the client (a) measures against the server (b)."""

    client: object
    server: object
    server_ip: str
    gid_index: int | None
    msgcount_client: str = ""  # the msgcount binary's path on the client


def measure(session: Session, bed, params: Params, configured: dict) -> None:
    """Measure on the configured lab ``bed``: Table 1 from both devices, then every method of
    every CPU level the machines can run (``configured["levels"]``) in each repetition, the
    qperf cross-check point; archives the results and notes what ran in what order."""
    started = time.monotonic()
    a, b = bed.node("a"), bed.node("b")
    devices = {label: read_devices(session, node, label) for label, node in
               (("a", a), ("b", b))}
    port_a = devices["a"][0].ports[0]
    gid_a, gid_b = port_a.ipv4_gid_index(), devices["b"][0].ports[0].ipv4_gid_index()
    if gid_a != gid_b:
        raise HarnessError(f"the two ends' IPv4 RoCE v2 GIDs have different indexes "
                           f"({gid_a}, {gid_b}); perftest takes one -x for both")
    facts = ibverbs.read_socket_facts(a, bed.device("a", WIRE))
    columns = [ibverbs.device_column(devices["a"][0], label=f"Soft-RoCE ({RXE})"),
               ibverbs.tcp_column(facts)]
    session.results(pd.DataFrame(ibverbs.table1(columns)), "table1")
    server_ip = bed.address("b", WIRE)
    pair = Pair(a, b, server_ip, gid_a, msgcount.build_on(a))
    order = MeasuringOrder(params.seed)
    rows: list[dict] = []
    timings: dict[str, float] = {}
    notes: dict = {"online_cpus": []}
    levels = tuple(configured.get("levels") or params.cpus)
    notes["levels"] = list(levels)
    skipped = [c for c in params.cpus if c not in levels]
    if skipped:
        notes["levels_skipped"] = {
            str(c): f"the machines have CPUs {configured.get('present_cpus')} present: "
                    f"no CPU 1 to bring online (VMs of 1 vCPU: two 2-vCPU VMs would need "
                    f"{2 * 2} host cores, this host has {host_cores()})" for c in skipped}
    steps = params.repetitions * sum(len(params.level_methods(c)) for c in levels)
    with pingpong.server(session.journal, b, server_ip, TCP_PORT, timeout=60), \
            qperf.server(session.journal, b, QPERF_PORT, timeout=30), \
            msgcount.server(session.journal, b, msgcount.build_on(b), server_ip,
                            MSGCOUNT_PORT), \
            progress(steps, "s1 methods") as bar:
        for rep in range(1, params.repetitions + 1):
            for level_position, cpus in enumerate(order.shuffle(levels)):
                t_level = time.monotonic()
                with cpu_level(session, (a, b), cpus) as online:
                    notes["online_cpus"].append({"repetition": rep, "cpus": cpus,
                                                 "online": online})
                    for position, method in enumerate(
                            order.shuffle(params.level_methods(cpus))):
                        t0 = time.monotonic()
                        sizes = tuple(order.shuffle(params.method_sizes(method)))
                        rows += [{**row, "order": position, "cpus_position": level_position,
                                  "size_position": sizes.index(row["size"])}
                                 for row in measure_method(session, pair, params, method,
                                                           rep, sizes, cpus)]
                        key = method if cpus == 1 else f"{method}@{cpus}cpu"
                        timings[key] = round(timings.get(key, 0.0) + time.monotonic() - t0,
                                             1)
                        bar.step(f"{method}, {cpus} CPU, repetition {rep}")
                key = f"level {cpus} cpu (switch and measure)"
                timings[key] = round(timings.get(key, 0.0) + time.monotonic() - t_level, 1)
        if params.qperf_size:
            try:
                session.results(pd.DataFrame(measure_qperf(session, pair, params)),
                                "qperf")
            except HarnessError as exc:  # a cross-check: its failure is said, not fatal
                notes["qperf_error"] = exc.message
    session.results(pd.DataFrame(rows))
    notes |= {"order": order.record(
                  "the CPU levels in a new random order in each repetition; within "
                  "each level its methods in a new random order, and the sizes in a "
                  "new random order for each method"),
              "method_seconds": timings,
              "rdma": {"device": RXE, "gid_index": gid_a,
                       "active_mtu": port_a.active_mtu,
                       "links": configured.get("links")},
              "wire_mtu": params.mtu, "socket_facts": vars(facts)}
    notes["measure_s"] = round(time.monotonic() - started, 1)
    session.note(s1=notes)


def measure_method(session: Session, pair: Pair, params: Params, method: str, rep: int,
                   sizes: tuple[int, ...] | None = None, cpus: int = 1) -> list[dict]:
    """One method over every size (in the order given: shuffled per repetition), one sweep
    (verbs) or one ping-pong client run (TCP), at the CPU level ``cpus`` (its raw files say
    which: ``-2cpu`` for level 2)."""
    tag = f"r{rep}" + ("" if cpus == 1 else f"-{cpus}cpu")
    family, kind, tool, completion, nagle = METHODS[method]
    sizes = tuple(sizes or params.method_sizes(method))
    if tool == "qperf-rc":
        return _qperf_rc(session, pair, params, method, rep, tag, sizes, cpus)
    started = time.monotonic()
    if family == "verbs":
        run = perftest.PerftestRun(tool, iterations=params.iterations if kind == "latency"
                                   else params.bw_iterations, events=completion == "events",
                                   device=RXE, gid_index=pair.gid_index, port=PERFTEST_PORT)
        # each size is an invocation of its own in the sweep's script, in the shuffled order
        plan = perftest_sweep.PerftestSweep(run, sizes)
        budget = 120 + len(sizes) * (10 + run.iterations * 0.05) + plan.longest_s()
        # two fresh attempts for the sizes a client could not finish: the one retry gave out
        # at repetition ~11 of a verdict run at host load 7 (the client's connect window
        # over before the server of that size listened); each retry is marked in the archive
        swept = perftest_sweep.sweep(session.journal, pair.server, pair.client, plan,
                                     pair.server_ip, timeout=budget, retries=2)
        reports = swept.reports
        session.raw(f"{method}-{tag}.client.txt", swept.client_out)
        session.raw(f"{method}-{tag}.server.txt", swept.server_out)
        rows = latency_rows(reports) if kind == "latency" else bandwidth_rows(reports)
        info = reports[0].info
        extra = {"rdma_mtu": info.get("mtu"), "link_type": info.get("link_type")}
    elif tool == "qperf":
        # the 2-CPU level needs tcp_lat only (no claim reads its bandwidth)
        plan = qperf.QperfSweep(sizes, params.qperf_seconds, QPERF_PORT,
                                tests=("tcp_lat", "tcp_bw") if cpus == 1 else ("tcp_lat",))
        res = pair.client.run(["sh", "-c", plan.client_command(pair.server_ip)], check=False,
                              track=True, timeout=plan.timeout_s())
        session.raw(f"{method}-{tag}.txt", res.stdout + res.stderr)
        if not res.ok:
            raise HarnessError(f"qperf sweep failed (exit {res.exit_status}): "
                               f"{(res.stderr or res.stdout).strip()[-300:]}",
                               "is the qperf server on b still running?")
        rows = qperf_rows(qperf.parse_sweep(res.stdout))
        extra = {}
    elif tool == "msgcount":
        run = msgcount.CountRun(params.bw_iterations, sizes, nodelay=not nagle)
        res = pair.client.run(run.client_argv(pair.msgcount_client, pair.server_ip,
                                              MSGCOUNT_PORT),
                              check=False, track=True, timeout=run.timeout_s())
        session.raw(f"{method}-{tag}.txt", res.stdout + res.stderr)
        # a size that failed is a row without a rate (a failed point, shown and judged
        # invalid), never left out; output that is not the program's stops the run
        rows = [r.row() for r in msgcount.parse_output(res.stdout, sizes)]
        extra = {}
    else:
        result = pingpong.client(session.journal, pair.client,
                                 {"tcp": (pair.server_ip, TCP_PORT)}, list(sizes),
                                 params.tcp_budget_s, params.tcp_budget_s, stream=True,
                                 warmup=5, nagle=bool(nagle),
                                 timeout=120 + len(sizes) * params.tcp_budget_s * 2 * 40)
        session.raw(f"{method}-{tag}.json", _json(result))
        rows = tcp_rows(result)
        extra = {}
    seconds = time.monotonic() - started
    return [{"repetition": rep, "cpus": cpus, "method": method, "family": family, "kind": kind,
             "tool": tool, "completion": completion, "nagle": nagle, **row, **extra,
             "method_s": seconds} for row in rows]


def _qperf_rc(session: Session, pair: Pair, params: Params, method: str, rep: int, tag: str,
              sizes: tuple[int, ...], cpus: int) -> list[dict]:
    """qperf's rc_lat and rc_bw at every size, through the RDMA CM (-cm1): the second verbs
    tool. A cross-check: where Soft-RoCE refuses it, its rows are empty and the refusal is
    archived and returned in each row's note (nothing rests on it)."""
    family, kind, tool, completion, nagle = METHODS[method]
    started = time.monotonic()
    plan = qperf.QperfSweep(sizes, params.qperf_seconds, QPERF_PORT, tests=("rc_lat", "rc_bw"),
                            use_cm=True)
    res = pair.client.run(["sh", "-c", plan.client_command(pair.server_ip)], check=False,
                          track=True, timeout=plan.timeout_s())
    session.raw(f"{method}-{tag}.txt", res.stdout + res.stderr)
    common = {"repetition": rep, "cpus": cpus, "method": method,
              "family": family, "kind": kind, "tool": tool, "completion": completion,
              "nagle": nagle}
    try:
        if not res.ok:
            raise HarnessError(f"exit {res.exit_status}: "
                               f"{(res.stderr or res.stdout).strip()[-300:]}")
        rows = qperf_rows(qperf.parse_sweep(res.stdout), "rc_lat", "rc_bw")
        note = ""
    except HarnessError as exc:
        rows = [{"size": size, "latency_us": None, "latency_mean_us": None,
                 "bw_mbit": None} for size in sizes]
        note = f"qperf RC over Soft-RoCE failed: {exc.message}"
    seconds = time.monotonic() - started
    return [{**common, **row, "note": note, "method_s": seconds} for row in rows]


def _json(value) -> str:
    import json

    return json.dumps(value, indent=1)


def read_devices(session: Session, node, label: str) -> list[ibverbs.VerbsDevice]:
    """``ibv_devinfo -v`` of the node's RXE device, archived as it is."""
    res = node.run(["ibv_devinfo", "-v", "-d", RXE], check=False, timeout=60)
    session.raw(f"ibv_devinfo-{label}.txt", res.stdout + res.stderr)
    devices = ibverbs.parse_devinfo(res.stdout) if res.ok else []
    if not devices:
        raise HarnessError(f"{node.name}: ibv_devinfo shows no {RXE}: "
                           f"{(res.stderr or res.stdout).strip()[-300:]}",
                           "is the Soft-RoCE link up (`rdma link show`)?")
    return devices



def measure_qperf(session: Session, pair: Pair, params: Params) -> list[dict]:
    """One cross-check point: qperf's rc_lat, rc_bw, tcp_lat, tcp_bw at ``qperf_size`` (its
    server is the one the tcp-qperf method uses, running for the whole measurement)."""
    run = qperf.QperfRun(("rc_lat", "rc_bw", "tcp_lat", "tcp_bw"), params.qperf_size,
                         params.qperf_seconds, QPERF_PORT, use_cm=True)
    res = pair.client.run(run.client_argv(pair.server_ip), check=False, track=True,
                          timeout=60 + 4 * (params.qperf_seconds + 10))
    session.raw("qperf.txt", res.stdout + res.stderr)
    if not res.ok:  # qperf's RC tests on Soft-RoCE (without -cm1: "failed to modify QP to
        rc_error = (res.stderr or res.stdout).strip()[-300:]  # RTR", no RoCE v2 GID)
        run = qperf.QperfRun(("tcp_lat", "tcp_bw"), params.qperf_size,
                             params.qperf_seconds, QPERF_PORT)
        res = pair.client.run(run.client_argv(pair.server_ip), check=False, track=True,
                              timeout=60 + 2 * (params.qperf_seconds + 10))
        session.raw("qperf-tcp.txt", res.stdout + res.stderr)
        if not res.ok:
            raise HarnessError(f"qperf failed (exit {res.exit_status}): "
                               f"{(res.stderr or res.stdout).strip()[-300:]}")
        rows = [r.row() for r in qperf.parse_output(res.stdout)]
        return [{**row, "note": f"rc tests failed: {rc_error}"} for row in rows]
    return [r.row() for r in qperf.parse_output(res.stdout)]

