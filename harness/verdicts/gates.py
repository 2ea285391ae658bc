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
  host, not the kernel under study, sets the figures);
- ``accelerated_virtualisation``: VMs run under a hardware accelerator (KVM), for claims
  about CPU time or latency measured inside VMs (under TCG every guest instruction is
  emulated, so a guest's CPU time and its per-message latency are the emulator's);
- ``uniprocessor``: one vCPU per VM, the paper's uniprocessor kernel model;
- ``cpu_bound``: a measured busy share of a CPU at least a registered level
  (``table``, ``column``, ``min_pct``; ``rows`` = ``"column=value"`` selects the rows the
  claim rests on), for claims about the CPU cost of a protocol;
- ``links_verified``: every direction of the run's links whose name contains ``link``
  (e.g. ``wan``) passed the link verification before measuring (``run.json``'s
  ``link_verification``: rate and RTT against the topology), for claims that rest on that
  link being what the topology declares; a failed direction is named with its figures;
- ``at_least``: a measured quantity at least a registered level on every row the claim
  rests on (``table``, ``column``, ``min``; ``rows`` as for ``cpu_bound``; ``what`` names
  the quantity in the figures), e.g. the TCP window a socket reached against the BDP.

A run on namespaces of the host kernel, or on a user's machines, has no VMs: the two VM
gates pass there (the kernel is a real one), ``uniprocessor`` needs the machines' CPU
count, which only VMs record today, and fails with that reason elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from .claims import NOT_TESTABLE


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
                   links=tuple(meta.get("link_verification") or ()))


GateCheck = Callable[[RunFacts, Mapping[str, pd.DataFrame], Mapping], GateResult]


@dataclass(frozen=True)
class GateSpec:
    check: GateCheck
    params: tuple[str, ...] = ()  # required
    what: str = ""
    optional: tuple[str, ...] = ()


def _no_oversubscription(facts: RunFacts, _tables, _params) -> GateResult:
    name = "no_oversubscription"
    if facts.vms == 0:
        return GateResult(name, True, "no VMs: the nodes run on a real kernel")
    if facts.vcpus_per_vm is None or facts.host_cores is None:
        return GateResult(name, False, "the VMs' vCPUs or the host's cores were not recorded")
    total = facts.vms * facts.vcpus_per_vm
    return GateResult(name, total <= facts.host_cores,
                      f"{total} vCPUs ({facts.vms} VMs x {facts.vcpus_per_vm}) on "
                      f"{facts.host_cores} host cores")


def _accelerated(facts: RunFacts, _tables, _params) -> GateResult:
    name = "accelerated_virtualisation"
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


def _link_failure(record: Mapping) -> str:
    """One failed link direction in words: what was measured against what it had to be."""
    parts = []
    if record.get("rate_ok") is False:
        tries = record.get("attempts") or []
        ratio = record.get("rate_ratio")
        parts.append(f"rate {_num(record.get('link_layer_mbit'))} of "
                     f"{_num(record.get('configured_mbit'))} Mbit/s configured"
                     + (f" ({ratio:.3f}" if ratio is not None else " (")
                     + (f"; tries {', '.join(f'{t:.3f}' for t in tries)}" if tries else "")
                     + "; below the verification's tolerance)")
    if record.get("rtt_ok") is False:
        parts.append(f"RTT {_num(record.get('rtt_ms'))} ms against "
                     f"{_num(record.get('expected_rtt_ms'))} ms expected")
    return f"{record.get('link')} {record.get('direction')}: " + (
        "; ".join(parts) or "failed")


def _num(value) -> str:
    return "?" if value is None else f"{float(value):.2f}"


def _links_verified(facts: RunFacts, _tables, params) -> GateResult:
    name = "links_verified"
    part = str(params["link"])
    mine = [r for r in facts.links if part in str(r.get("link", ""))]
    if not mine:
        return GateResult(name, False, f"no verification of a link named *{part}* was recorded")
    failed = [r for r in mine if r.get("ok") is False
              or r.get("rate_ok") is False or r.get("rtt_ok") is False]
    if failed:
        return GateResult(name, False, "verification failed: " + "; ".join(
            _link_failure(r) for r in failed) + " (the run measured on past it)")
    return GateResult(name, True, f"{len(mine)} direction{'s' if len(mine) != 1 else ''} of "
                      f"*{part}* verified: " + ", ".join(
                          f"{r.get('direction')} {r.get('rate_ratio') or 0:.3f} of its rate"
                          if r.get("rate_ratio") is not None else f"{r.get('direction')}"
                          for r in mine))


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


def _at_least(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params) -> GateResult:
    name = "at_least"
    table, column, level = params["table"], params["column"], float(params["min"])
    what = str(params.get("what") or f"{table}.{column}")
    frame = tables.get(table)
    if frame is None or column not in frame:
        return GateResult(name, False, f"{what} was not measured in this run ({table}.{column})")
    frame = _rows(frame, params)
    if isinstance(frame, str):
        return GateResult(name, False, frame)
    values = pd.to_numeric(frame[column], errors="coerce").dropna()
    values = values[values.map(math.isfinite)]
    if values.empty:
        return GateResult(name, False, f"{what} was not measured on the rows the claim rests on")
    low = int(values.idxmin())
    below = int((values < level).sum())
    figures = (f"{what} {values.min():.3g}..{values.max():.3g} against at least {level:g} "
               f"registered ({len(values)} points, {below} below)")
    if below:
        row = frame.loc[low]
        named = ", ".join(f"{k} {row[k]}" for k in ("repetition", "window_kib", "mtu",
                                                      "direction") if k in row and pd.notna(row[k]))
        figures += f"; lowest: {named}" if named else ""
    return GateResult(name, below == 0, figures)


GATES: dict[str, GateSpec] = {
    "no_oversubscription": GateSpec(_no_oversubscription, (), "all VMs' vCPUs within the host's cores"),
    "accelerated_virtualisation": GateSpec(_accelerated, (), "VMs under a hardware accelerator"),
    "uniprocessor": GateSpec(_uniprocessor, (), "one vCPU per VM (the paper's UP kernel)"),
    "cpu_bound": GateSpec(_cpu_bound, ("table", "column", "min_pct"),
                          "a measured CPU busy share at least a registered level", ("rows",)),
    "links_verified": GateSpec(_links_verified, ("link",),
                               "the link verification passed on every direction of the link"),
    "at_least": GateSpec(_at_least, ("table", "column", "min"),
                         "a measured quantity at least a registered level on every row",
                         ("rows", "what")),
}


def evaluate(gate: Gate, facts: RunFacts, tables: Mapping[str, pd.DataFrame]) -> GateResult:
    return GATES[gate.name].check(facts, tables, gate.params)


def apply(frame: pd.DataFrame, meta: Mapping, tables: Mapping[str, pd.DataFrame],
          gates: Mapping[str, tuple[Gate, ...]]) -> pd.DataFrame:
    """``frame`` (a claims table) with a ``gates`` column (each gate of each claim with its
    figures) and each claim with a failed gate *not testable here*, the failed gates' figures
    its reason. A claim already not testable keeps its reason, the gates added to it."""
    frame = frame.copy()
    facts = RunFacts.from_meta(meta)
    texts: list[str] = []
    for i, claim_id in frame["claim_id"].items():
        results = [evaluate(g, facts, tables) for g in gates.get(claim_id, ())]
        texts.append("; ".join(r.text() for r in results))
        failed = [r for r in results if not r.passed]
        if not failed:
            continue
        why = "the lab is not in the paper's regime: " + "; ".join(
            f"{r.gate} failed ({r.figures})" for r in failed)
        if frame.at[i, "outcome"] == NOT_TESTABLE:
            frame.at[i, "reason"] = f"{frame.at[i, 'reason']}; and {why}"
        else:
            ours = frame.at[i, "ours"] if "ours" in frame else ""
            frame.at[i, "outcome"] = NOT_TESTABLE
            frame.at[i, "reason"] = f"{why}; measured anyway: {ours}" if ours else why
        if "more_needed" in frame:
            frame.at[i, "more_needed"] = pd.NA
    frame["gates"] = texts
    return frame
