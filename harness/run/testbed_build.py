"""Choosing and building a study's local testbed: a namespace lab on this host, or in VMs
when the host lacks a feature, the lab needs several machines or a whole machine.

:func:`place` reads this host (a probe) and decides where the lab goes, every requirement
checked, changing nothing. :func:`planned_lab` is the lab a dry run describes (nothing
booted or created); :func:`build_lab` builds it, booting the VMs, measuring their
ceilings and scaling the lab's rates to them (:func:`fit_vm_lab`). The session
(:mod:`harness.run.session`) calls them and records what they found in run.json.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field

from ..config.record import ChangeRecord
from ..errors import CeilingTooLow
from ..journal.journal import Journal
from ..lab.lab import Lab
from ..lab.placement import (
    Decision,
    Scaling,
    VMOffer,
    decide,
    fit_to_ceiling,
    guest_capabilities,
    measure_ceiling,
    measure_wire_ceiling,
    vm_offer,
)
from ..lab.probe import Capabilities, probe, require
from ..nodes import LocalNode, Node
from ..topology.topology import Topology
from . import dryrun
from .testbed import LabTestbed


@dataclass
class Placing:
    """Where a study's lab goes and what it needs there (read, nothing changed)."""

    host: LocalNode
    capabilities: Capabilities  # this host's
    need: set[str]  # every feature the lab and the study need on its nodes
    tools: set  # the programs the study needs
    purpose: str  # "study NAME", for the errors
    decision: Decision


@dataclass
class BuiltLab:
    """A lab built for a run, and what building it found out for run.json."""

    bed: LabTestbed
    capabilities: dict[str, Capabilities] = field(default_factory=dict)  # the VMs', by key
    placement: dict = field(default_factory=dict)  # the VMs' boots, ceilings, scaling, disks
    scaling: Scaling | None = None  # None: on this host, nothing scaled
    ceiling_s: float | None = None  # time spent measuring the VMs' ceilings
    wired_consoles: list = field(default_factory=list)  # vm.txstall.WiredConsole per wired VM


def place(study: str, topology: Topology, features: set[str], tools: set,
          node_features: dict[str, set[str]] | None) -> Placing:
    """Where the lab goes (host or VMs), every requirement checked; reads, changes nothing."""
    host = LocalNode("local")
    caps = probe(host)
    need = features | topology.required_features()
    for extra in (node_features or {}).values():
        need |= set(extra)
    purpose = f"study {study}"
    machines = topology.machines()
    whole = bool(topology.whole_machine_nodes())
    offer = (vm_offer() if caps.missing(need) or len(machines) > 1 or whole
             else VMOffer(False, reason="not needed"))
    decision = decide(need, caps, offer, purpose, machines=len(machines),
                      whole_machines=whole)
    if decision.where == "host":
        require(caps, need, tools, purpose=f"{purpose} in a namespace lab")
    return Placing(host, caps, need, tools, purpose, decision)


def planned_lab(placing: Placing, topology: Topology, placement: dict) -> dryrun.PlannedTestbed:
    """The lab a run would build, and its build plan (``.changes``); nothing booted or
    created. ``placement``: the decision as run.json would record it."""
    changes: list[ChangeRecord] = []
    machines = topology.machines()
    host = placing.host
    if placing.decision.where == "host":
        hosts: dict[str, Node] = {label: host for label in machines}
    else:
        hosts = {label: dryrun.PlannedMachine("vm" if not label else f"vm-{label}")
                 for label in machines}
        changes.append(ChangeRecord(
            "local", "vm", "lab machines", None,
            f"would boot {len(machines)} VM(s) ({placing.decision.reason}); link rates may be "
            "scaled to the VMs' measured ceiling", True))
    nics = {(end.node, end.ifname): "(the VM's NIC)"
            for link in topology.wires() for end in (link.a, link.b)}
    lab = Lab(topology, dryrun.NoJournal(), hosts.get("", host),
              capabilities=placing.capabilities, hosts={k: v for k, v in hosts.items() if k},
              nics=nics)
    changes += lab.plan()
    return dryrun.PlannedTestbed(lab, changes, placement)


def build_lab(placing: Placing, topology: Topology, study: str, journal: Journal,
              stack: ExitStack) -> BuiltLab:
    """A namespace lab on this host, or inside VMs when the placement says so; entered on
    ``stack`` (torn down, VMs stopped, when it closes)."""
    built = BuiltLab(bed=None)
    caps = placing.capabilities
    hosts: dict[str, Node] = {}
    nics: dict[tuple[str, str], str] = {}
    if placing.decision.where == "host":
        lab_host: Node = placing.host
    else:
        from ..vm.fleet import boot_lab_vms, cap_disks, pin_lab_vcpus, wired_consoles
        from ..vm.txstall import WireWatch

        vms, nics = boot_lab_vms(topology, study, journal, stack)
        built.wired_consoles = wired_consoles(topology, vms, nics)
        watch = WireWatch(tuple(built.wired_consoles))
        for vm in vms.values():  # a command on any of them stops when a wire stalls
            vm.wire_watch = watch
        lab_host = vms[""]
        built.placement["vm"] = lab_host.boot.to_dict()
        if topology.vms.pin:
            built.placement["vcpu_pinning"] = pin_lab_vcpus(vms)
        for label, vm in vms.items():
            key = "vm" if not label else f"vm-{label}"
            built.capabilities[key] = guest_capabilities(vm, placing.capabilities,
                                                         placing.decision)
            require(built.capabilities[key], placing.need, placing.tools,
                    purpose=f"{placing.purpose} in a VM lab ({vm.name})")
        caps = built.capabilities["vm"]
        if len(vms) > 1:
            built.placement["vms"] = {label: vm.boot.to_dict() for label, vm in vms.items()
                                      if label}
        started = time.monotonic()
        topology, scaling, wire_ceilings = fit_vm_lab(journal, topology, vms, nics, lab_host,
                                                      caps)
        built.ceiling_s = time.monotonic() - started
        if wire_ceilings:
            built.placement["wire_ceilings_mbit"] = wire_ceilings
        built.scaling = scaling
        built.placement["scaling"] = scaling.to_dict()
        disks = cap_disks(topology, vms, scaling.factor)
        if disks:
            built.placement["disks"] = disks
        hosts = {label: vm for label, vm in vms.items() if label}
    lab = Lab(topology, journal, lab_host, capabilities=caps, hosts=hosts, nics=nics,
              machines_end_with_run=placing.decision.where != "host")
    stack.enter_context(lab)
    built.bed = LabTestbed(lab)
    return built


def fit_vm_lab(journal: Journal, topology: Topology, vms: dict, nics: dict, lab_host: Node,
               caps: Capabilities) -> tuple[Topology, Scaling, dict[str, float]]:
    """The lab's ceilings, and its rates scaled to them (:func:`fit_to_ceiling`).

    The ceiling between namespaces of one VM limits only links inside one machine: a lab
    of wires alone skips it (~10 s into a TCG VM). A lab with no shaped link at all (S1)
    has nothing to scale: it measures no ceiling (~15 s for two TCG VMs)."""
    if not any(link.rate_mbit for link in topology.links):
        return topology, Scaling(1.0, None, None, "no scaling: no link of the lab is "
                                 "shaped (its links carry what the machines carry)"), {}
    all_wires = bool(topology.wires()) and all(map(topology.is_wire, topology.links))
    ceiling = None if all_wires else measure_ceiling(journal, lab_host, caps)
    wire_ceilings = {}
    for link in topology.wires():
        la, lb = (topology.machine_of(e.node) for e in (link.a, link.b))
        wire_ceilings[link.name] = measure_wire_ceiling(
            journal, vms[la], vms[lb], nics[(link.a.node, link.a.ifname)],
            nics[(link.b.node, link.b.ifname)], caps)
    try:
        topology, scaling = fit_to_ceiling(
            topology, ceiling,
            wire_ceiling_mbit=min(wire_ceilings.values()) if wire_ceilings else None)
    except CeilingTooLow as exc:  # registered rates the lab cannot carry: run.json says so
        if wire_ceilings:
            exc.record["wire_ceilings_mbit"] = wire_ceilings
        raise
    return topology, scaling, wire_ceilings
