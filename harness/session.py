"""One measurement session: a run folder, its journal, a testbed, and their records.

Notebooks use it like this::

    with open_session("s4", params, run_dir=run_dir, inventory=inventory) as s:
        bed = s.testbed(topology, features={"mptcp"})
        ... measure, s.raw(...), s.results(frame) ...

Whatever happens inside the block, every change recorded in the journal is
undone on the way out, and run.json receives the configuration records,
capabilities, testbed and link verification. A session that created its run
folder also closes it: ``complete`` after a clean exit, else ``incomplete``.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from . import provenance
from .archive import COMPLETE, INCOMPLETE, Run, project_root
from .config.record import ChangeRecord, ConfigLog
from .errors import Interrupted
from .inventory import Inventory
from .journal import Journal
from .lab import Lab
from .nodes import LocalNode, Node
from .placement import (
    Scaling,
    VMOffer,
    decide,
    fit_to_ceiling,
    guest_capabilities,
    measure_ceiling,
    measure_wire_ceiling,
    vm_offer,
)
from .probe import Capabilities, probe, require
from .testbed import InventoryTestbed, LabTestbed
from .topology import Topology
from .verify import LinkCheck, summarise


@dataclass
class Session:
    run: Run
    journal: Journal
    inventory: str = ""
    stack: ExitStack = field(default_factory=ExitStack)
    config: ConfigLog = field(default_factory=ConfigLog)
    capabilities: dict[str, Capabilities] = field(default_factory=dict)
    checks: list[LinkCheck] = field(default_factory=list)
    bed: LabTestbed | InventoryTestbed | None = None
    timings: dict[str, float] = field(default_factory=dict)
    scaling: Scaling | None = None
    _placement: dict = field(default_factory=dict)

    def testbed(self, topology: Topology, features: set[str] = frozenset(),
                tools: set[str] = frozenset(),
                node_features: dict[str, set[str]] | None = None) -> LabTestbed | InventoryTestbed:
        """Build the lab (or reach the inventory machines) after checking every requirement.

        ``features``/``tools`` are needed on every node; ``node_features`` adds
        per-node needs. Nothing is changed anywhere if a check fails.
        """
        started = time.monotonic()
        topology.validate()
        if self.inventory:
            bed = InventoryTestbed(topology, Inventory.load(self.inventory))
            self.stack.callback(bed.close)
            bed.connect()
            for name, node in bed.nodes.items():
                caps = self.capabilities[name] = probe(node)
                need = set(features) | (node_features or {}).get(name, set())
                require(caps, need, tools, purpose=f"study {self.run.study} on node {name}")
        else:
            bed = self._local_testbed(topology, set(features), set(tools), node_features)
        self.bed = bed
        self.timings["testbed_s"] = time.monotonic() - started
        self.run.update(testbed=bed.record(), placement=self.placement(),
                        capabilities={k: v.to_dict() for k, v in self.capabilities.items()})
        return bed

    def _local_testbed(self, topology: Topology, features: set[str], tools: set[str],
                       node_features: dict[str, set[str]] | None) -> LabTestbed:
        """A namespace lab on this host, or inside a VM when the host kernel lacks a feature."""
        host = LocalNode("local")
        caps = self.capabilities["local"] = probe(host)
        need = features | topology.required_features()
        for extra in (node_features or {}).values():
            need |= set(extra)
        purpose = f"study {self.run.study}"
        machines = topology.machines()
        offer = (vm_offer() if caps.missing(need) or len(machines) > 1
                 else VMOffer(False, reason="not needed"))
        decision = decide(need, caps, offer, purpose, machines=len(machines))
        self._placement = decision.to_dict()
        hosts: dict[str, Node] = {}
        nics: dict[tuple[str, str], str] = {}
        if decision.where == "host":
            require(caps, need, tools, purpose=f"{purpose} in a namespace lab")
            lab_host: Node = host
        else:
            from .vm.fleet import boot_lab_vms

            vms, nics = boot_lab_vms(topology, self.run.study, self.journal, self.stack)
            lab_host = vms[""]
            self._placement["vm"] = lab_host.boot.to_dict()
            host_caps = caps
            for label, vm in vms.items():
                key = "vm" if not label else f"vm-{label}"
                caps = guest_capabilities(vm, host_caps, decision)
                self.capabilities[key] = caps
                require(caps, need, tools, purpose=f"{purpose} in a VM lab ({vm.name})")
            caps = self.capabilities["vm"]
            if len(vms) > 1:
                self._placement["vms"] = {label: vm.boot.to_dict() for label, vm in vms.items()
                                          if label}
            started = time.monotonic()
            ceiling = measure_ceiling(self.journal, lab_host, caps)
            wire_ceilings = {}
            for link in topology.wires():
                ends = (link.a, link.b)
                la, lb = (topology.machine_of(e.node) for e in ends)
                wire_ceilings[link.name] = measure_wire_ceiling(
                    self.journal, vms[la], vms[lb], nics[(link.a.node, link.a.ifname)],
                    nics[(link.b.node, link.b.ifname)], caps)
            self.timings["ceiling_s"] = time.monotonic() - started
            if wire_ceilings:
                self._placement["wire_ceilings_mbit"] = wire_ceilings
            topology, scaling = fit_to_ceiling(
                topology, ceiling,
                wire_ceiling_mbit=min(wire_ceilings.values()) if wire_ceilings else None)
            self.scaling = scaling
            self._placement["scaling"] = scaling.to_dict()
            hosts = {label: vm for label, vm in vms.items() if label}
        lab = Lab(topology, self.journal, lab_host, capabilities=caps, config=self.config,
                  hosts=hosts, nics=nics)
        self.stack.enter_context(lab)
        return LabTestbed(lab)

    def placement(self) -> dict:
        if self.inventory:
            return {"where": "inventory", "reason": f"machines from {self.inventory}"}
        return self._placement

    def verify(self, seconds: int = 2) -> list[LinkCheck]:
        started = time.monotonic()
        self.checks = self.bed.verify(self.journal, seconds)
        self.timings["verify_s"] = time.monotonic() - started
        self.run.update(link_verification=[c.to_dict() for c in self.checks])
        return self.checks

    def configure(self, record: ChangeRecord | list[ChangeRecord]) -> None:
        for r in record if isinstance(record, list) else [record]:
            self.config.add(r)

    def raw(self, name: str, content: str | bytes):
        return self.run.add_raw(name, content)

    def results(self, frame, name: str = "results"):
        return self.run.write_table(frame, name)

    def note(self, **fields) -> None:
        self.run.update(**fields)

    def close(self, error: BaseException | None) -> None:
        try:
            self.stack.close()  # lab teardown, connections
        finally:
            try:
                self.journal.undo_all()  # anything recorded outside the lab's scope
            finally:
                lab_record = self.bed.record() if self.bed else None
                self.run.update(
                    configuration=self.config.to_list(),
                    testbed=lab_record,
                    session_timings=self.timings,
                    measurement_error=None if error is None else format_error(error),
                )


def format_error(error: BaseException) -> str:
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (SIGINT/SIGTERM)"
    return "".join(traceback.format_exception_only(type(error), error)).strip()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Let SIGTERM unwind the stack like Ctrl-C, so teardown runs."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    owner = os.getpid()

    def handler(signum, frame):
        if os.getpid() != owner:
            # A forked helper (pyroute2 forks to open sockets in namespaces)
            # inherits this handler: it must die as by default, never unwind
            # the parent's stack and run its teardown.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def open_session(study: str, parameters: dict, run_dir: str = "", inventory: str = "",
                 root=None) -> Iterator[Session]:
    owner = not run_dir
    run = Run.create(study, parameters, root) if owner else Run.open(run_dir)
    run.update(provenance=provenance.collect(project_root()),
               inventory=inventory or None)
    session = Session(run, run.journal, inventory)
    error: BaseException | None = None
    with sigterm_as_interrupt():
        try:
            yield session
        except BaseException as exc:
            error = exc
            raise
        finally:
            session.close(error)
            if owner:
                run.finish(COMPLETE if error is None else INCOMPLETE,
                           None if error is None else format_error(error))


__all__ = ["Session", "open_session", "summarise", "Interrupted", "Node"]
