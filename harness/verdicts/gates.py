"""Regime gates: named checks, computed from what a run measured and recorded, that a claim
must pass before it is judged at all.

A paper's claim holds in the paper's regime: its machines (a uniprocessor kernel, a CPU the
protocol keeps busy), its wire (frames serialised at the link's rate). A lab that is not in
that regime measures something else, and a verdict on it says more than the lab supports.
A claim therefore names, in its registration, the gates its regime needs (``gates`` of a
:class:`~harness.verdicts.claims.Claim`); every study's claims table passes through :func:`apply`
(not opt-in: :class:`~harness.studies.base.Study` wraps each study's ``claims``), and a claim
whose gate fails is *not testable here*, with the measured figures. Its estimate stays
beside it (what the lab gave) but decides nothing.

A gate reads facts the run recorded (``run.json``: the controller's CPUs, the VMs' vCPUs and
accelerator) or a table it measured; never a setting the lab was merely asked for. A fact
the run did not record fails the gate ("not recorded"), so an old run never passes by
omission.

The gates (:data:`GATES`):

- ``no_oversubscription``: all vCPUs of the run's VMs fit on the host cores the run had
  (two VMs of 2 vCPUs on a 2-core host time-share four emulator threads on two cores: the
  host, not the kernel under study, sets the figures; ``vcpus_per_vm``: the vCPUs per VM
  the claim's rows need, when more than the run booted);
- ``accelerated_virtualisation``: VMs run under a hardware accelerator (KVM), for claims
  about CPU time or latency measured inside VMs (under TCG every guest instruction is
  emulated, so a guest's CPU time and its per-message latency are the emulator's);
- ``uniprocessor``: one vCPU per VM, the paper's uniprocessor kernel model (or VMs whose
  kernel booted on one CPU, ``maxcpus=1``/``nosmp``, the claim reading that level's rows);
- ``cpu_bound``: a measured busy share of a CPU at least a registered level
  (``table``, ``column``, ``min_pct``; ``rows`` = ``"column=value"`` selects the rows the
  claim rests on), for claims about the CPU cost of a protocol;
- ``serialising_wire``: the run's wire probe (run.json ``wire_probe``,
  :mod:`harness.lab.serialisation`) shows the wire serialising at least one of the message
  sizes ``min_size``..``max_size`` (bytes) the claim counts, for per-message latency and
  ping-pong throughput claims: a size the probe measured faster than a serialising wire
  of the link's rate carries is one the lab cannot show, and the claim's analysis leaves
  it out; with none left the claim is not testable here, with the probe's figures.
- ``links_verified``: every direction of the run's links whose name contains ``link``
  (e.g. ``wan``) passed the link verification before measuring (``run.json``'s
  ``link_verification``: rate and RTT against the topology), for claims that rest on that
  link being what the topology declares; a failed direction is named with its figures;
  ``direction`` (optional, e.g. ``switch->reducer``): only the direction the claim's data
  crosses counts;
- ``at_least``: a measured quantity at least a registered level on every row the claim
  rests on (``table``, ``column``, ``min``; ``rows`` as for ``cpu_bound``; ``what`` names
  the quantity in the figures; ``per`` a column to divide it by, row by row), e.g. the
  TCP window a socket reached against the BDP;
- ``at_most``: the same with ``max``, a registered ceiling, e.g. S0's relayed path carrying
  no more unshaped than the wire (the paper's relays were its bottleneck) or S4's sender
  throttled in fewer than a registered share of its CFS periods (limited, not starved).
- ``congestion_control``: a transport's points ran the paper's congestion control
  (``transport``, ``controller``; ``what`` names it in the figures, e.g. "coupled
  controller"), read from run.json's ``controllers``: what the measuring tool reported for
  that transport's points, and what the kernel offers
  (``net.ipv4.tcp_available_congestion_control``), for claims a different controller can
  move (S4: the paper's MPTCP ran the coupled BALIA, upstream Linux has no coupled one).

A run on namespaces of the host kernel, or on a user's machines, has no VMs: the two VM
gates pass there (the kernel is a real one), ``uniprocessor`` needs the machines' CPU
count, which only VMs record today, and fails with that reason elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from ..lab.serialisation import size_text
from .claims import INVALID, NOT_TESTABLE
from .intervals import mean_estimate


@dataclass(frozen=True)
class Gate:
    """A gate as a claim registers it: its name and its parameters (registered levels)."""

    name: str
    params: Mapping[str, float | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in GATES:
            raise ValueError(f"gate {self.name!r} is not one of {sorted(GATES)}: name a gate "
                             "harness.verdicts.gates defines")
        spec = GATES[self.name]
        unknown = set(self.params) - set(spec.params) - set(spec.optional)
        missing = set(spec.params) - set(self.params)
        if unknown or missing:
            raise ValueError(f"gate {self.name}: parameters {sorted(self.params)} do not match "
                             f"what it takes {sorted(spec.params)} (optional "
                             f"{sorted(spec.optional)}; unknown {sorted(unknown)}, "
                             f"missing {sorted(missing)})")

    def registration(self) -> dict:
        return {"name": self.name, **{k: self.params[k] for k in sorted(self.params)}}


@dataclass(frozen=True)
class GateResult:
    """A gate evaluated on one run: passed or not, with the figures it read."""

    gate: str
    passed: bool
    figures: str

    def text(self) -> str:
        return f"{self.gate}: {'passed' if self.passed else 'FAILED'} ({self.figures})"


@dataclass(frozen=True)
class RunFacts:
    """The facts of a run the machine gates read, from its run.json."""

    host_cores: int | None  # the CPUs the controller could run on
    vms: int  # VMs of the run's lab (0: namespaces on the host kernel, or a user's machines)
    vcpus_per_vm: int | None
    accel: str | None  # "kvm", "tcg"; None without VMs
    kernel_args: tuple[str, ...] = ()  # what the VMs' kernels were booted with beyond ours

    @property
    def booted_one_cpu(self) -> str:
        """The kernel argument that booted each VM's kernel on one CPU ("" if none did):
        ``nosmp``, ``maxcpus=0`` or ``maxcpus=1``."""
        for arg in self.kernel_args:
            if arg in ("nosmp", "maxcpus=0", "maxcpus=1"):
                return arg
        return ""
    #: run.json's link verification, one record per link direction (empty: not recorded)
    links: tuple[Mapping, ...] = ()

    @classmethod
    def from_meta(cls, meta: Mapping) -> RunFacts:
        placement = meta.get("placement") or {}
        vm = placement.get("vm") or {}
        controller = (meta.get("provenance") or {}).get("controller") or {}
        cores = controller.get("cpus")
        if cores is None:
            cores = (meta.get("machine_activity") or {}).get("cpus")
        vms = int(placement.get("machines") or 0) if vm else 0
        return cls(host_cores=int(cores) if cores else None, vms=vms,
                   vcpus_per_vm=int(vm["cpus"]) if vm.get("cpus") else None,
                   accel=vm.get("accel") if vm else None,
                   kernel_args=tuple(vm.get("kernel_args") or ()),
                   links=tuple(meta.get("link_verification") or ()))


GateCheck = Callable[..., GateResult]  # (facts, tables, params[, meta])


@dataclass(frozen=True)
class GateSpec:
    check: GateCheck
    params: tuple[str, ...] = ()  # required
    what: str = ""
    optional: tuple[str, ...] = ()
    meta: bool = False  # the check reads run.json itself (a probe's record), not only RunFacts
    region: bool = False  # the check compares a measured figure with the claim's region


def _no_oversubscription(facts: RunFacts, _tables, params) -> GateResult:
    """All vCPUs within the host's cores. ``vcpus_per_vm`` (optional): the vCPUs per VM the
    claim's rows need (S1's SMP level: 2), counted in place of what the run booted when
    more -- a run that booted fewer, because the host could not hold them, did not measure
    that level, and the gate says with what counts."""
    name = "no_oversubscription"
    if facts.vms == 0:
        return GateResult(name, True, "no VMs: the nodes run on a real kernel")
    if facts.vcpus_per_vm is None or facts.host_cores is None:
        return GateResult(name, False, "the VMs' vCPUs or the host's cores were not recorded")
    need = int(params.get("vcpus_per_vm") or 0)
    per_vm = max(facts.vcpus_per_vm, need)
    total = facts.vms * per_vm
    level = (f", the claim's level; the run booted {facts.vcpus_per_vm}"
             if per_vm != facts.vcpus_per_vm else "")
    return GateResult(name, total <= facts.host_cores,
                      f"{total} vCPUs ({facts.vms} VMs x {per_vm}{level}) on "
                      f"{facts.host_cores} host cores")


def _accelerated(facts: RunFacts, _tables, params, meta: Mapping) -> GateResult:
    """VMs under KVM. ``placement`` (optional): where in run.json the claim's own lab recorded
    its placement (dotted, e.g. ``s0.far_placement``: S0's distance sweep boots a VM of its own
    while the main sweep runs on the host), read in place of the run's main placement."""
    name = "accelerated_virtualisation"
    where = str(params.get("placement") or "")
    if where:
        record: object = meta
        for key in where.split("."):
            record = record.get(key) if isinstance(record, Mapping) else None
        if not isinstance(record, Mapping):
            return GateResult(name, False, f"the placement of the claim's lab ({where}) was not "
                              "recorded")
        facts = RunFacts.from_meta({"placement": record})
    if facts.vms == 0:
        return GateResult(name, True, "no VMs: the nodes run on a real kernel")
    if not facts.accel:
        return GateResult(name, False, "the VMs' accelerator was not recorded")
    if facts.accel == "kvm":
        return GateResult(name, True, "VMs under KVM")
    return GateResult(name, False, f"VMs under {facts.accel.upper()}: every guest instruction "
                      "is emulated, so CPU time and latency inside a guest are the emulator's")


def _uniprocessor(facts: RunFacts, _tables, _params) -> GateResult:
    name = "uniprocessor"
    if facts.vms == 0:
        return GateResult(name, False, "no VMs: the machines' CPU counts are not recorded, so "
                          "the paper's uniprocessor kernel cannot be confirmed")
    if facts.vcpus_per_vm is None:
        return GateResult(name, False, "the VMs' vCPUs were not recorded")
    if facts.vcpus_per_vm > 1 and facts.booted_one_cpu:
        return GateResult(name, True, f"{facts.vcpus_per_vm} vCPUs per VM, the kernel booted "
                          f"{facts.booted_one_cpu}: one CPU online unless a level brings "
                          "another up (the claim's rows are the one-CPU level's)")
    return GateResult(name, facts.vcpus_per_vm == 1,
                      f"{facts.vcpus_per_vm} vCPU{'s' if facts.vcpus_per_vm != 1 else ''} per VM")


def _cpu_bound(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params) -> GateResult:
    name = "cpu_bound"
    table, column, level = params["table"], params["column"], float(params["min_pct"])
    frame = tables.get(table)
    if frame is None or column not in frame:
        return GateResult(name, False, f"no measured busy share ({table}.{column}) in the run")
    if params.get("rows"):  # "column=value": the rows the claim rests on
        key, _, value = str(params["rows"]).partition("=")
        if key not in frame:
            return GateResult(name, False, f"no column {key} in {table} to select {params['rows']}")
        frame = frame[frame[key].astype(str) == value]
    shares = pd.to_numeric(frame[column], errors="coerce").dropna()
    shares = shares[shares.map(math.isfinite)]
    if shares.empty:
        return GateResult(name, False, f"no measured busy share ({table}.{column}) in the run")
    median = float(shares.median())
    return GateResult(name, median >= level,
                      f"busy {shares.min():.1f}-{shares.max():.1f} %, median {median:.1f} % "
                      f"against at least {level:g} % registered ({len(shares)} points)")


def _serialising_wire(_facts: RunFacts, _tables, params, meta: Mapping) -> GateResult:
    name = "serialising_wire"
    lo, hi = int(params["min_size"]), int(params["max_size"])
    probe = meta.get("wire_probe")
    if not probe:
        return GateResult(name, False, "the run recorded no wire probe (run.json wire_probe): "
                          "whether its wire serialises a message is unknown")
    where = f"probe on {probe.get('path', '?')}"
    if not probe.get("rate_mbit"):
        return GateResult(name, False, f"{where}: {probe.get('note') or 'no wire rate'}")
    sizes = [p for p in probe.get("sizes") or () if lo <= int(p["size"]) <= hi]
    if not sizes:
        return GateResult(name, False, f"{where}: no size of {lo}-{hi} B probed")
    slack = float(probe.get("slack", 0.0))

    def text(p) -> str:  # against the bound the probe applied: the wire's rate + the slack
        return size_text(int(p["size"]), float(p["pingpong_mbit"]), float(p["wire_mbit"]), slack,
                         bool(p["serialises"]))

    yes = [p for p in sizes if p["serialises"]]
    no = [p for p in sizes if not p["serialises"]]
    figures = (f"{where}, {probe.get('links', 1)} links of {probe['rate_mbit']:g} Mbit/s, "
               f"ping-pong against what a serialising path carries + {slack * 100:g} %: ")
    figures += "; ".join(part for part in (
        "serialises " + ", ".join(map(text, yes)) if yes else "",
        "does not serialise " + ", ".join(map(text, no)) if no else "") if part)
    if params.get("every"):  # every size the claim counts, not one a slow moment let through
        return GateResult(name, not no, figures + f" (every size of {lo}-{hi} B must serialise)")
    return GateResult(name, bool(yes), figures)


_BELOW_TOLERANCE = "below the verification's tolerance"


def _link_failure(record: Mapping) -> str:
    """One failed link direction in words: what was measured against what it had to be."""
    parts = []
    if record.get("rate_ok") is False:
        tries = record.get("attempts") or []
        ratio = record.get("rate_ratio")
        parts.append(f"rate {_two_decimals(record.get('link_layer_mbit'))} of "
                     f"{_two_decimals(record.get('configured_mbit'))} Mbit/s configured"
                     + (f" ({ratio:.3f}" if ratio is not None else " (")
                     + (f"; tries {', '.join(f'{t:.3f}' for t in tries)}" if tries else "")
                     + _past_slow_start(record)
                     + f"; {record.get('note') or _BELOW_TOLERANCE})")
    if record.get("rtt_ok") is False:
        parts.append(f"RTT {_two_decimals(record.get('rtt_ms'))} ms against "
                     f"{_two_decimals(record.get('expected_rtt_ms'))} ms expected")
    return f"{record.get('link')} {record.get('direction')}: " + (
        "; ".join(parts) or "failed")


def _two_decimals(value) -> str:
    """A link verification's figure (Mbit/s, ms: a known scale) to two decimals, ``?`` when
    the record has none. Not :func:`_figure`, whose three significant digits suit a quantity
    of any scale: a failed check reads "22.18 of 23.39 Mbit/s" (S2's reference WAN, 0.948 of
    its rate) and an RTT "9.00 ms against 4.80 ms", as the reports have said since the gate
    came (tests/unit/test_gates.py holds both)."""
    return "?" if value is None else f"{float(value):.2f}"


def _links_verified(facts: RunFacts, _tables, params) -> GateResult:
    name = "links_verified"
    part = str(params["link"])
    # ``direction`` (optional): only that direction counts, the one the claim's data crosses
    # (S3: switch->reducer; the other carries only requests and acks)
    way = str(params.get("direction") or "")
    mine = [r for r in facts.links if part in str(r.get("link", ""))
            and (not way or r.get("direction") == way)]
    if not mine:
        return GateResult(name, False, f"no verification of a link named *{part}*"
                          + (f" in direction {way}" if way else "") + " was recorded")
    failed = [r for r in mine if r.get("ok") is False
              or r.get("rate_ok") is False or r.get("rtt_ok") is False]
    if failed:
        return GateResult(name, False, "verification failed: " + "; ".join(
            _link_failure(r) for r in failed) + " (the run measured on past it)")
    return GateResult(name, True, f"{len(mine)} direction{'s' if len(mine) != 1 else ''} of "
                      f"*{part}* verified: " + ", ".join(
                          f"{r.get('direction')} {r.get('rate_ratio') or 0:.3f} of its rate"
                          + _past_slow_start(r)
                          if r.get("rate_ratio") is not None else f"{r.get('direction')}"
                          for r in mine))


def _past_slow_start(record: Mapping) -> str:
    """What a long link's rate check covered (harness.lab.rate_plan), or nothing: a short
    link's check, or a run from before checks omitted slow start."""
    if not record.get("omitted_s"):
        return ""
    return (f" over {record.get('steady_rtts') or 0:.0f} RTTs after {record['omitted_s']} s of "
            "slow start")


def _rows(frame: pd.DataFrame, params) -> pd.DataFrame | str:
    """The rows ``params['rows']`` ("column=value[,column=value]") selects, or why not."""
    for clause in filter(None, str(params.get("rows") or "").split(",")):
        key, _, value = clause.partition("=")
        if key not in frame:
            return f"no column {key} to select {params['rows']}"
        column = frame[key]
        if pd.api.types.is_numeric_dtype(column):  # 1024 selects 1024.0 of a column with gaps
            try:
                frame = frame[column == float(value)]
                continue
            except ValueError:
                pass
        frame = frame[column.astype(str) == value]
    return frame


def _figure(value: float) -> str:
    """Three significant digits, a large figure in whole units (3713 Mbit/s, not 3.71e+03)."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _bounded(name: str, below: bool):
    """The gate ``name``: a measured quantity at least (``below`` False: ``min``) or at most
    (``below`` True: ``max``) a registered level on every row the claim rests on. ``per``
    (optional) names a column the quantity is divided by, row by row (e.g. throttled CFS
    periods per period)."""
    key = "max" if below else "min"

    def check(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params) -> GateResult:
        table, column, level = params["table"], params["column"], float(params[key])
        per = params.get("per")
        what = str(params.get("what") or (f"{table}.{column}" + (f" / {per}" if per else "")))
        frame = tables.get(table)
        if frame is None or column not in frame or (per and per not in frame):
            return GateResult(name, False, f"{what} was not measured in this run "
                              f"({table}.{column}{' / ' + str(per) if per else ''})")
        frame = _rows(frame, params)
        if isinstance(frame, str):
            return GateResult(name, False, frame)
        values = pd.to_numeric(frame[column], errors="coerce")
        if per:
            values = values / pd.to_numeric(frame[per], errors="coerce")
        values = values.dropna()
        values = values[values.map(math.isfinite)]
        if values.empty:
            return GateResult(name, False, f"{what} was not measured on the rows the claim rests on")
        outside = values > level if below else values < level
        worst = int(values.idxmax() if below else values.idxmin())
        count = int(outside.sum())
        figures = (f"{what} {_figure(values.min())}..{_figure(values.max())} against at "
                   f"{'most' if below else 'least'} {level:g} registered ({len(values)} points, "
                   f"{count} {'above' if below else 'below'})")
        if count:
            row = frame.loc[worst]
            named = ", ".join(f"{k} {row[k]}" for k in (
                "repetition", "window_kib", "mtu", "direction", "path", "transport", "streams",
                "sender_cpus") if k in row and pd.notna(row[k]))
            figures += f"; {'highest' if below else 'lowest'}: {named}" if named else ""
        return GateResult(name, count == 0, figures)
    return check


def _reachable(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params,
               region: tuple[float, float]) -> GateResult:
    """A gain of one path over ``over`` (in %) can be no larger than ``ceiling`` over ``over``
    when no path beats ``ceiling`` (S0: no relayed path is faster than the direct one): that
    ceiling, measured per repetition over the claim's sizes (a geometric mean, then its 95 %
    interval over repetitions), must reach the claim's region, else the lab -- not the
    system under test -- decides the verdict (S0's links at 100 Mbit/s with relays 110x
    faster: direct over two proxies +3-5 % against a region from +8.6 %)."""
    name = "reachable"
    table, column, by = params["table"], params["column"], str(params.get("by") or "method")
    top, over = str(params["ceiling"]), str(params["over"])
    lo, hi = int(params["min_size"]), int(params["max_size"])
    frame = tables.get(table)
    if frame is None or not {column, by, "size", "repetition"} <= set(frame):
        return GateResult(name, False, f"{table}.{column} by {by}, size and repetition was not "
                          "measured in this run")
    rows = frame[(frame["size"] >= lo) & (frame["size"] <= hi) & frame[by].isin([top, over])]
    wide = rows.pivot_table(index=["repetition", "size"], columns=by, values=column, aggfunc="mean")
    if not {top, over} <= set(wide.columns):
        return GateResult(name, False, f"{top} and {over} were not both measured at {lo}-{hi} B")
    ratio = (wide[top] / wide[over]).dropna()
    ratio = ratio[ratio > 0]
    per_rep = ratio.groupby(level="repetition").apply(lambda r: math.exp(float(r.map(math.log).mean())))
    est = mean_estimate(per_rep, log=True)
    if est is None:
        return GateResult(name, False, f"no {top}/{over} pair measured at {lo}-{hi} B")
    est = est.as_gain_pct()
    high = est.high if est.high is not None else est.value
    low_bound, high_bound = region
    figures = (f"{top} over {over}, {column} at {lo}-{hi} B: {est.value:+.1f} % "
               f"[{est.low if est.low is not None else est.value:+.1f}, {high:+.1f}] over "
               f"{est.n} repetitions, the most a path slower than {top} can gain over {over}; "
               f"the region {low_bound:+.4g}..{high_bound:+.4g} %")
    return GateResult(name, high >= low_bound, figures)


def _congestion_control(_facts: RunFacts, _tables, params, meta: Mapping) -> GateResult:
    """The ``transport``'s points ran ``controller``: every point of that transport reported it
    (run.json ``controllers.reported_by_iperf3``), a controller the kernel offers
    (``controllers.client_kernel``). A run that recorded neither fails ("not recorded")."""
    name = "congestion_control"
    transport, want = str(params["transport"]), str(params["controller"]).lower()
    what = str(params.get("what") or "congestion control")
    paper = f"the paper's {what} ({want.upper()})"
    record = meta.get("controllers")
    if not isinstance(record, Mapping):
        return GateResult(name, False, f"the run recorded no congestion controls (run.json "
                          f"controllers), so whether its {transport.upper()} points ran {paper} "
                          "is unknown")
    kernel = record.get("client_kernel") or {}
    offered = str(kernel.get("net.ipv4.tcp_available_congestion_control") or "").split()
    reported = (record.get("reported_by_iperf3") or {}).get(transport)
    ran = sorted({str(c).lower() for c in reported or ()})
    if ran == [want]:
        return GateResult(name, True, f"every {transport.upper()} point ran {want} (as the tool "
                          f"reported), {paper}")
    if not offered:
        kernel_says = f"{paper}: the kernel's congestion controls were not recorded"
    elif want in offered:
        kernel_says = f"{paper} is available in this kernel, but the points did not run it"
    else:
        kernel_says = f"{paper} is not available in this kernel (it offers {', '.join(offered)})"
    how = str(record.get(transport) or "")
    said = (f"ran {', '.join(ran)} (as the tool reported)" if ran
            else "reported no controller")
    return GateResult(name, False, f"{kernel_says}; the {transport.upper()} points {said}"
                      + (f": {how}" if how and how.lower() not in ran else ""))


GATES: dict[str, GateSpec] = {
    "no_oversubscription": GateSpec(_no_oversubscription, (), "all VMs' vCPUs within the host's cores",
                                    ("vcpus_per_vm",)),
    "accelerated_virtualisation": GateSpec(_accelerated, (), "VMs under a hardware accelerator",
                                           ("placement",), meta=True),
    "uniprocessor": GateSpec(_uniprocessor, (), "one vCPU per VM (the paper's UP kernel)"),
    "cpu_bound": GateSpec(_cpu_bound, ("table", "column", "min_pct"),
                          "a measured CPU busy share at least a registered level", ("rows",)),
    "serialising_wire": GateSpec(_serialising_wire, ("min_size", "max_size"),
                                 "the run's wire probe shows the wire serialising a size the "
                                 "claim counts (with every = true: every size it counts)",
                                 ("every",), meta=True),
    "reachable": GateSpec(_reachable, ("table", "column", "ceiling", "over", "min_size", "max_size"),
                          "the most the lab lets a gain be (its ceiling, measured) reaches the "
                          "claim's region", ("by",), region=True),
    "links_verified": GateSpec(_links_verified, ("link",),
                               "the link verification passed on every direction of the link "
                               "(with direction: on that one)", ("direction",)),
    "at_least": GateSpec(_bounded("at_least", below=False), ("table", "column", "min"),
                         "a measured quantity at least a registered level on every row",
                         ("rows", "what", "per")),
    "at_most": GateSpec(_bounded("at_most", below=True), ("table", "column", "max"),
                        "a measured quantity at most a registered level on every row",
                        ("rows", "what", "per")),
    "congestion_control": GateSpec(_congestion_control, ("transport", "controller"),
                                   "the transport's points ran the paper's congestion control, "
                                   "as recorded", ("what",), meta=True),
}


def evaluate(gate: Gate, facts: RunFacts, tables: Mapping[str, pd.DataFrame],
             meta: Mapping | None = None,
             region: tuple[float, float] = (-math.inf, math.inf)) -> GateResult:
    spec = GATES[gate.name]
    if spec.region:
        return spec.check(facts, tables, gate.params, region)
    if spec.meta:
        return spec.check(facts, tables, gate.params, meta or {})
    return spec.check(facts, tables, gate.params)


def apply(frame: pd.DataFrame, meta: Mapping, tables: Mapping[str, pd.DataFrame],
          gates: Mapping[str, tuple[Gate, ...]],
          regions: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """``frame`` (a claims table) with a ``gates`` column (each gate of each claim with its
    figures) and each claim with a failed gate *not testable here*, the failed gates' figures
    its reason. A claim already not testable keeps its reason, the gates added to it (also one
    its analysis made not testable per point: it rests on points beyond the paper's regime that
    this lab's own apparatus makes possible, :func:`harness.verdicts.claims.judge`'s ``outside``,
    its estimate shown as measured anyway); a claim already invalid (it rests on a point
    impossible *in this lab*, not merely outside the paper's regime) stays invalid, the failed
    gates added to its reason: invalid takes precedence, so no estimate over impossible points
    is shown as "measured anyway". Which points are which is decided per point by the study
    (S0: :func:`harness.studies.s0.validity.checked_points`), never here."""
    frame = frame.copy()
    facts = RunFacts.from_meta(meta)
    texts: list[str] = []
    for i, claim_id in frame["claim_id"].items():
        region = (regions or {}).get(claim_id, (-math.inf, math.inf))  # the registered one
        results = [evaluate(g, facts, tables, meta, region) for g in gates.get(claim_id, ())]
        texts.append("; ".join(r.text() for r in results))
        failed = [r for r in results if not r.passed]
        if not failed:
            continue
        why = "the lab is not in the paper's regime: " + "; ".join(
            f"{r.gate} failed ({r.figures})" for r in failed)
        if frame.at[i, "outcome"] in (NOT_TESTABLE, INVALID):  # invalid stays invalid: a claim
            # resting on a point impossible in this lab is never shown as a measurement, also
            # when the regime fails too; a point the lab makes possible outside the paper's
            # regime is not invalid (the study's analysis made it not testable, per point)
            frame.at[i, "reason"] = f"{frame.at[i, 'reason']}; and {why}"
        else:
            ours = frame.at[i, "ours"] if "ours" in frame else ""
            frame.at[i, "outcome"] = NOT_TESTABLE
            frame.at[i, "reason"] = f"{why}; measured anyway: {ours}" if ours else why
        if "more_needed" in frame:
            frame.at[i, "more_needed"] = pd.NA
    frame["gates"] = texts
    return frame
