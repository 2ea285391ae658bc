"""S3's points: one reducer run of the fan-in generator with the counters read around it
(the bottleneck FIFO's drops, the mappers' CPU, the reducer machine's CPU), a mapper fleet's
points, and the plan of every fleet of a run in its randomised order.
The study, its lab and its phases: :mod:`.study`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from ... import fanin
from ...nodes import procfs
from ...progress import Progress
from ...run.session import Session
from ..order import MeasuringOrder
from .design import ERROR_TEXT_KEPT, VARIANTS, cpu_bound_period_ms, cpu_period_ms

if TYPE_CHECKING:  # S3's parameters, by their base: this module must not import the study
    from ..parameters import Parameters as Params


def qdisc_counters(node, dev: str) -> dict:
    """Drops/overlimits/backlog of the bottleneck FIFO (handle 10:) and the htb root."""
    return parse_qdisc(node.run(["tc", "-s", "qdisc", "show", "dev", dev], timeout=60).stdout)


def snapshot_command(switch, fleet: fanin.MapperFleet) -> str:
    """ONE shell command, for the switch's machine, that reads the bottleneck qdisc and the
    CPU ticks of every mapper -- when the mappers share that machine (each command costs a
    round trip to a slow TCG VM). Empty when they do not."""
    groups = fleet.pid_groups()
    if not (len(groups) == 1 and groups[0][0] is switch.machine):
        return ""
    return (switch.command_on_machine(["tc", "-s", "qdisc", "show", "dev", "red"])
            + "; echo @@stat; " + procfs.stat_command(groups[0][1]))


def parse_snapshot(text: str) -> tuple[dict, int]:
    qdisc, _, stat = text.partition("@@stat")
    return parse_qdisc(qdisc), procfs.cpu_ticks(stat)


def snapshot(switch, fleet: fanin.MapperFleet) -> tuple[dict, int]:
    """Bottleneck qdisc counters and the mappers' CPU ticks, wherever they are."""
    command = snapshot_command(switch, fleet)
    if command:
        return parse_snapshot(switch.machine.run(command, timeout=60).stdout)
    return qdisc_counters(switch, "red"), fanin.mapper_cpu_ticks(fleet)


def parse_qdisc(text: str) -> dict:
    out = {"fifo_dropped": 0, "fifo_sent_pkts": 0, "htb_overlimits": 0}
    current = None
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["qdisc"]:
            current = "fifo" if len(words) > 2 and words[2] == "10:" else words[1]
        elif words[:1] == ["Sent"] and current:
            # Sent B bytes P pkt (dropped D, overlimits O requeues R)
            pkts = int(words[3])
            dropped = int(words[6].rstrip(","))
            overlimits = int(words[8])
            if current == "fifo":
                out["fifo_dropped"] += dropped
                out["fifo_sent_pkts"] += pkts
            elif current == "htb":
                out["htb_overlimits"] += overlimits
    return out


#: /proc/stat's first line: user nice system idle iowait irq softirq steal guest guest_nice.
#: guest and guest_nice are already inside user and nice, so the total stops at steal.
BUSY_FIELDS = (0, 1, 2, 5, 6)  # user, nice, system, irq, softirq
TOTAL_FIELDS = 8


def system_cpu(samples: list[dict]) -> dict:
    """The reducer machine's CPU over the measured rounds, as ``sar`` computes it.

    ``sar`` reports each /proc/stat field's share of all ticks between two readings,
    over all CPUs, so 100 % is every CPU busy; busy = user + nice + system + irq +
    softirq, while idle, iowait and steal are not the machine's work. The readings are
    the generator's "begin" and "end" marks: the first measured round's start and, with a
    period, the end of the last round's period (rounds x period when none overran).
    Runs from before the marks: the first and the last sample.
    """
    marked = {s.get("mark"): s for s in samples if s.get("mark")}
    a, b = (marked["begin"], marked["end"]) if {"begin", "end"} <= marked.keys() else \
        ((samples[0], samples[-1]) if len(samples) >= 2 else (None, None))
    none = {"system_busy_pct": None, "system_softirq_pct": None, "cpu_interval_s": None,
            "system_ticks": None}
    if a is None or len(a["stat"]) < TOTAL_FIELDS or len(b["stat"]) < TOTAL_FIELDS:
        return none
    delta = [y - x for x, y in zip(a["stat"][:TOTAL_FIELDS], b["stat"][:TOTAL_FIELDS])]
    total = sum(delta)
    if total <= 0:
        return none
    return {"system_busy_pct": 100.0 * sum(delta[i] for i in BUSY_FIELDS) / total,
            "system_softirq_pct": 100.0 * delta[6] / total,
            "cpu_interval_s": (b["t_ns"] - a["t_ns"]) / 1e9,
            "system_ticks": total}  # all CPUs' ticks in the interval: the share's resolution


def measure_point(session: Session, bed, fleet: fanin.MapperFleet, binary: str, variant: str,
                  point: Point, repetition: int, params: Params,
                  before: tuple[dict, int] | None = None
                  ) -> tuple[dict, pd.DataFrame, tuple[dict, int]]:
    """One point. Returns its row, its rounds, and the counters read after it.

    Counters (bottleneck qdisc, mappers' CPU ticks) are read inside the reducer's
    command when reducer, switch and mappers share a machine. Otherwise they take a
    command of their own (one per machine), and ``before`` may pass the previous
    point's closing read: nothing runs between two points of one mapper fleet."""
    proto, cc = VARIANTS[variant]
    n, size, experiment = point.mappers, point.size_kb * 1024, point.experiment
    period_us = round(point.period_ms * 1000)
    reducer, switch = bed.node("reducer"), bed.node("switch")
    # the machine's CPU is read at the generator's own marks (no sampling thread: it would
    # wake the reducer's machine between rounds and count in the share it measures)
    spec = fanin.ReduceSpec(proto, size, point.rounds, point.warmup, period_us,
                            fanin.SocketOptions(params.sndbuf, params.rcvbuf, cc),
                            round_timeout_s=params.round_timeout_s)
    same_machine = reducer.machine is switch.machine
    bracket = snapshot_command(switch, fleet) if same_machine else ""
    if bracket:  # counters read in the reducer's own command
        result = fanin.run_reducer(reducer, binary, spec, fleet.listens[:n], check=False,
                                   bracket=bracket)
        (before_q, before_m), (after_q, after_m) = map(parse_snapshot, result.bracket)
    else:
        before_q, before_m = before or snapshot(switch, fleet)
        result = fanin.run_reducer(reducer, binary, spec, fleet.listens[:n], check=False)
        after_q, after_m = snapshot(switch, fleet)
    tag = f"{experiment}-{variant}-n{n:02d}-{size // 1024}k"
    tag += f"-p{point.period_paper_ms}ms" if point.period_paper_ms else ""
    session.raw(f"{tag}-r{repetition}.jsonl", result.stdout + result.stderr)
    out = result.output
    measured = out.measured()
    summary = out.summary or {}
    start = out.start or {}
    clk = int(start.get("clk_tck") or 100)
    wall_s = (summary.get("wall_ns") or 0) / 1e9
    busy = summary.get("rounds_utime_s", 0) + summary.get("rounds_stime_s", 0)
    rates = pd.Series([r["rate_mbit"] for r in measured], dtype=float)
    durations = pd.Series([r["duration_ns"] / 1e6 for r in measured], dtype=float)
    row = {
        "experiment": experiment, "protocol": variant, "transport": proto,
        "congestion": start.get("congestion") or None, "mappers": n, "size_kb": size // 1024,
        "size_bytes": size, "period_ms": point.period_ms,
        "period_paper_ms": point.period_paper_ms, "repetition": repetition,
        "rounds": len(measured), "rounds_asked": point.rounds, "ok": result.ok,
        "error": "; ".join(out.errors)[:ERROR_TEXT_KEPT] or None,
        # whose failure stopped it, if one did: the protocol's (a result, counted by the
        # registered rule) or the apparatus's (the point is invalid): fanin.spec.failure_kind
        "failure": out.failure(result.exit_status),
        "rate_mbit_mean": rates.mean(), "rate_mbit_median": rates.median(),
        "rate_mbit_p5": rates.quantile(0.05) if len(rates) else None,
        "rate_mbit_p95": rates.quantile(0.95) if len(rates) else None,
        "rate_mbit_bytes_over_time": summary.get("mean_rate_mbit"),
        "round_ms_mean": durations.mean(), "round_ms_max": durations.max(),
        "overruns": summary.get("overruns"),
        "reducer_cpu_pct": 100.0 * busy / wall_s if wall_s else None,
        # the same work every round: CPU per round compares protocols also where rounds
        # overran the period (utilisation = CPU per round / period only while it is kept)
        "reducer_cpu_ms_per_round": 1000.0 * busy / len(out.rounds) if out.rounds else None,
        "reducer_utime_s": summary.get("rounds_utime_s"),
        "reducer_stime_s": summary.get("rounds_stime_s"),
        "mapper_cpu_pct": 100.0 * (after_m - before_m) / clk / result.wall_s
        if result.wall_s else None,
        **system_cpu(out.cpu),
        "queue_drops": after_q["fifo_dropped"] - before_q["fifo_dropped"],
        "queue_pkts": after_q["fifo_sent_pkts"] - before_q["fifo_sent_pkts"],
        # Share of the payload that really crossed the bottleneck (full-size packets assumed):
        # ~1 when the traffic goes through the switch, ~0 when the kernel short-cuts it (TIPC
        # between namespaces of one kernel delivers directly, bypassing its bearers).
        # (none when no round ran: nothing was asked for, so there is nothing to compare with)
        "wire_share": (after_q["fifo_sent_pkts"] - before_q["fifo_sent_pkts"]) * 1448
        / (n * size * len(out.rounds)) if out.rounds else None,
        "sndbuf_effective": start.get("sndbuf_effective"),
        "rcvbuf_effective": start.get("rcvbuf_effective"),
        "connect_ms": (start.get("connect_ns") or 0) / 1e6,
        "run_s": wall_s, "tool_s": result.wall_s,
    }
    per_round = round_frame(measured, experiment=experiment, protocol=variant, mappers=n,
                            size_kb=size // 1024, period_ms=point.period_ms,
                            repetition=repetition)
    return row, per_round, (after_q, after_m)


ROUND_FIELDS = ("round", "duration_ns", "first_ns", "rate_mbit", "overrun")


def round_frame(measured: list[dict], **point) -> pd.DataFrame:
    """One point's rounds as columns of numbers, led by the point's own fields.

    Kept so rather than as a dict per round: a paper-scale run (1000 rounds a point, hundreds
    of points) then holds no Python objects per round between points."""
    frame = pd.DataFrame.from_records(measured, columns=ROUND_FIELDS)
    for position, (key, value) in enumerate(point.items()):
        frame.insert(position, key, value)
    return frame


class Point(NamedTuple):
    """One point of a fleet's grid: the reducer asks ``mappers`` mappers for ``size_kb`` each,
    ``rounds`` times after ``warmup`` rounds; every ``period_ms`` (0: back to back), which
    carries the paper's ``period_paper_ms`` over to our port (0: no period)."""

    experiment: str  # "rate" or "cpu"
    mappers: int
    size_kb: int
    rounds: int
    warmup: int
    period_ms: float = 0.0
    period_paper_ms: int = 0

    def label(self, variant: str, rep: int) -> str:
        if self.experiment == "cpu":
            return (f"{variant} CPU {self.period_paper_ms} ms (ours {self.period_ms:g} ms) "
                    f"{self.size_kb} KB, CPU repetition {rep}")
        return f"{variant} 1:{self.mappers} {self.size_kb} KB, repetition {rep}"

    def key(self) -> str:
        """The point in a fleet's recorded order: 'n48-16k' or 'n48-16k-p25ms'."""
        tail = f"-p{self.period_paper_ms}ms" if self.period_paper_ms else ""
        return f"n{self.mappers:02d}-{self.size_kb}k{tail}"


def rate_points(params: Params) -> list[Point]:
    return [Point("rate", n, size, params.rounds, params.warmup)
            for n in params.mappers for size in params.sizes_kb]


def cpu_points(params: Params, port_mbit: float) -> list[Point]:
    """The CPU phase's grid at the paper's periods carried over to a ``port_mbit`` port
    (:func:`.design.cpu_period_ms`); one warm-up round, to start on the period.
    Empty: no CPU phase."""
    if not params.cpu_rounds:
        return []
    return [Point("cpu", params.cpu_mappers, size, params.cpu_rounds, 1,
                  cpu_period_ms(paper, port_mbit, params.cpu_mappers), paper)
            for paper in params.cpu_periods_paper_ms for size in params.cpu_sizes_kb]


def round_times_ms(rows: list[dict], mappers: int, experiments=("rate", "calibration")
                   ) -> dict[tuple[str, int], float]:
    """Back-to-back round times measured at fan-in ``mappers``: per (protocol, size_kb) the
    median over its repetitions of each point's mean round time; points that stopped
    before their last round (a failure of the protocol: its round time is not a time a
    period could keep) are left out."""
    times: dict[tuple[str, int], list[float]] = {}
    for row in rows:
        if row.get("experiment") not in experiments or row.get("mappers") != mappers:
            continue
        done, asked = row.get("rounds"), row.get("rounds_asked")
        value = row.get("round_ms_mean")
        if done is None or asked is None or done < asked or value is None or not value > 0:
            continue
        times.setdefault((row["protocol"], int(row["size_kb"])), []).append(float(value))
    return {key: float(pd.Series(values).median()) for key, values in times.items()}


def cpu_bound_points(points: list[Point], round_ms: dict[tuple[str, int], float],
                     protocols: Sequence[str]) -> tuple[list[Point], dict]:
    """The CPU points with the CPU-bound period (:func:`.design.cpu_bound_period_ms`) from
    the slowest of ``protocols``' back-to-back round times at each size, and the record of
    it for run.json. A size no protocol completed back to back keeps no period: KeyError."""
    out, record = [], {}
    for point in points:
        measured = {p: round_ms[(p, point.size_kb)] for p in protocols
                    if (p, point.size_kb) in round_ms}
        if not measured:
            raise KeyError(f"no back-to-back round of {', '.join(protocols)} at "
                           f"1:{point.mappers} x {point.size_kb} KB to set its period from")
        slowest = max(measured, key=measured.get)
        period = cpu_bound_period_ms(measured[slowest], point.period_paper_ms)
        out.append(point._replace(period_ms=period))
        record[point.key()] = {"round_ms": {p: round(v, 2) for p, v in measured.items()},
                               "slowest": slowest, "period_ms": period}
    return out, record


class Fleet(NamedTuple):
    """One mapper fleet of a run: its protocol, its repetition, the points it serves in order."""

    experiment: str
    repetition: int
    position: int  # the protocol's place in its repetition's order (0 first)
    variant: str
    nodes: list
    points: list[Point]


def fleet_plan(order: MeasuringOrder, phases: Sequence[tuple[list[Point], list, int,
                                                                 Sequence[str]]]) -> list[Fleet]:
    """Every fleet of a run in measuring order, drawn from ``order`` before the first starts.

    ``phases``: (points, mapper nodes, repetitions, protocols) each, measured one after
    the other. Per repetition the protocols are shuffled; per fleet its points are, so that
    a slow drift of the emulated machines (a TCG VM warming up, another job starting) falls
    on every protocol and point alike instead of on whichever always ran last.
    """
    plan = []
    for points, nodes, repetitions, protocols in phases:
        if not points:
            continue
        for rep in range(1, repetitions + 1):
            for position, variant in enumerate(order.shuffle(protocols)):
                plan.append(Fleet(points[0].experiment, rep, position, variant, nodes,
                                  order.shuffle(points)))
    return plan


def protocol_orders(plan: list[Fleet], experiment: str) -> list[list[str]]:
    """The protocols' order in each repetition of one phase, as run.json keeps it."""
    out: dict[int, list[str]] = {}
    for fleet in plan:
        if fleet.experiment == experiment:
            out.setdefault(fleet.repetition, []).append(fleet.variant)
    return [out[rep] for rep in sorted(out)]


def phase_seconds(fleets: list[dict], experiment: str) -> dict[str, float]:
    """Seconds per protocol in one phase, fleet starts included, over its repetitions."""
    out: dict[str, float] = {}
    for fleet in fleets:
        if fleet["experiment"] == experiment:
            out[fleet["protocol"]] = round(out.get(fleet["protocol"], 0.0) + fleet["seconds"], 1)
    return out


def measure_fleet(session: Session, bed, params: Params, variant: str, mapper_nodes: list,
                  listens: list[str], binary: str, points: list[Point], rep: int = 1,
                  bar: Progress | None = None) -> tuple[list[dict], pd.DataFrame, dict]:
    """``points`` in this order for one protocol, repetition ``rep``, with a mapper fleet
    started for them on ``mapper_nodes`` listening on ``listens``: (rows, rounds, the
    fleet's record); each point is a step of ``bar``."""
    proto, cc = VARIANTS[variant]
    experiment = points[0].experiment
    sockets = fanin.SocketOptions(params.sndbuf, params.rcvbuf, cc)
    rows, rounds = [], []
    started = time.monotonic()
    with fanin.mapper_fleet(session.journal, mapper_nodes, listens, proto, binary,
                            sockets) as fleet:
        start_s = time.monotonic() - started
        last = None  # counters after the previous point of this fleet
        for point in points:
            row, per_round, last = measure_point(session, bed, fleet, binary, variant, point,
                                                 rep, params, last)
            rows.append(row)
            rounds.append(per_round)
            if bar:
                bar.step(point.label(variant, rep))
    name = "mappers" if experiment == "rate" else f"mappers-{experiment}"
    session.raw(f"{name}-{variant}-r{rep}.jsonl", fleet.output)
    record = {"experiment": experiment, "repetition": rep, "protocol": variant,
              "mappers": len(mapper_nodes), "start_s": round(start_s, 1),
              "points": [point.key() for point in points],
              "seconds": round(time.monotonic() - started, 1)}
    return rows, pd.concat(rounds, ignore_index=True) if rounds else round_frame([]), record
