"""One measurement session: a run folder, its journal, a testbed, and their records.

Notebooks use it like this::

    with open_session("s4", params, run_dir=run_dir, inventory=inventory) as s:
        bed = s.testbed(topology, features={"mptcp"})
        ... measure, s.raw(...), s.results(frame) ...

Configuration goes through ``s.apply(operation, ...)`` (see
:mod:`harness.config.operation`): facts read, diffs computed, each change
journalled with its undo and its record, then made.

Whatever happens inside the block, every change recorded in the journal is
undone on the way out, and run.json receives the configuration records (a
view of the journal), capabilities, testbed and link verification. A session
that created its run folder also closes it: ``complete`` after a clean exit,
else ``incomplete``.

``open_session(..., dry_run=True)`` makes no run folder and changes nothing:
``testbed`` checks requirements and placement and returns a planned testbed,
``apply`` plans, and :meth:`Session.planned_changes` / :meth:`Session.describe`
give the plan (see :mod:`harness.run.dryrun`).
"""

from __future__ import annotations

import logging
import os
import signal
import time
import traceback
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

from ..archive import provenance
from ..archive.archive import COMPLETE, INCOMPLETE, Run, project_root
from ..config.operation import Operation, apply, describe, plan
from ..config.record import ChangeRecord
from ..errors import CeilingTooLow, Interrupted, SpecError, WireStalled
from ..journal.journal import Journal
from ..journal.tracked import journalled
from ..lab.placement import Scaling
from ..lab.probe import Capabilities, probe, require
from ..lab.verify import LinkCheck, summarise
from ..machines.as_found import NO_LOCK, AsFound
from ..machines.as_found import capabilities as found_capabilities
from ..machines.inventory import Inventory
from ..machines.privileges import AS_FOUND, read_access
from ..machines.privileges import decide as decide_access
from ..nodes import Node
from ..topology.topology import Topology
from . import dryrun
from .kernel_death import quiet_own_death
from .machinelock import LocalLock, held_for, remote_lock, sharing_requested, this_process
from .machinewatch import MachineWatch
from .testbed import InventoryTestbed, LabTestbed
from .testbed_build import Placing, build_lab, place, planned_lab

log = logging.getLogger(__name__)


@dataclass
class Session:
    run: Run | None  # None in a dry run
    journal: Journal | dryrun.NoJournal
    inventory: str = ""
    stack: ExitStack = field(default_factory=ExitStack)
    dry_run: bool = False
    study: str = ""
    capabilities: dict[str, Capabilities] = field(default_factory=dict)
    checks: list[LinkCheck] = field(default_factory=list)
    earlier_checks: list[list[dict]] = field(default_factory=list)  # verifications before
    bed: LabTestbed | InventoryTestbed | None = None
    timings: dict[str, float] = field(default_factory=dict)
    scaling: Scaling | None = None
    _placement: dict = field(default_factory=dict)
    _planned: list[ChangeRecord] = field(default_factory=list)
    machine_locks: dict[str, dict] = field(default_factory=dict)  # machine -> lock record
    _lock: LocalLock | None = None
    _watch: MachineWatch | None = None
    #: set when a login is not root and may not sudo: nothing is changed (:mod:`harness.machines.as_found`)
    as_found: AsFound | None = None
    #: a VM lab's consoles and wire interfaces, read when a measurement fails (:mod:`harness.vm.txstall`)
    wired_consoles: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.study:
            self.study = self.run.study

    def apply(self, *ops: Operation) -> list[ChangeRecord]:
        """Make the nodes as ``ops`` ask (one batch: one round trip per machine for the facts,
        one for the changes); return one record per change, no-ops included.

        The records are also in the journal, from which run.json's
        ``configuration`` is written. In a dry run: planned, nothing changed.
        """
        if self.dry_run:
            records = [c.record() for c in plan(ops)]
            self._planned += records
            return records
        if self.as_found is not None:  # planned from the facts, recorded, not made
            records = self.as_found.plan(plan(ops))
            self.run.update(as_found=self.as_found.to_dict())
            return records
        return apply(self.journal, ops)

    def planned_changes(self) -> list[ChangeRecord]:
        """Every change this dry run would make: the testbed's build plan, then each apply's."""
        if not self.dry_run:
            raise SpecError("planned_changes() belongs to a dry run",
                                   "open the session with dry_run=True; a real run's changes "
                                   "are in run.json's `configuration`")
        return list(self._planned)

    def describe(self) -> str:
        """The dry run's plan as text, one change per line."""
        head = f"dry run of {self.study}: placement {self._placement.get('where', '?')}"
        if self._placement.get("reason"):
            head += f" ({self._placement['reason']})"
        return head + "\n" + describe(self.planned_changes())

    def _refuse_in_dry_run(self, what: str) -> None:
        if self.dry_run:
            raise dryrun.refuse(what)

    def testbed(self, topology: Topology, features: set[str] = frozenset(),
                tools: set[str] = frozenset(),
                node_features: dict[str, set[str]] | None = None,
                as_found_ok: bool = False) -> LabTestbed | InventoryTestbed:
        """Build the lab (or reach the inventory machines) after checking every requirement.

        ``features``/``tools`` are needed on every node; ``node_features`` adds
        per-node needs. Nothing is changed anywhere if a check fails. ``as_found_ok``: the
        study can measure inventory machines as found when a login is not root and may not
        sudo (:mod:`harness.machines.as_found`); otherwise such a login is refused.
        """
        started = time.monotonic()
        topology.validate()
        if self.dry_run and not self.inventory:
            bed = self._planned_testbed(topology, set(features), set(tools), node_features)
            self.bed = bed
            return bed
        if self.inventory:
            bed = InventoryTestbed(topology, Inventory.load(self.inventory))
            self.stack.callback(bed.close)
            bed.connect()
            # who the harness is on each machine, before the probe (it needs root too)
            access = [read_access(name, node) for name, node in bed.nodes.items()]
            if not self.dry_run:
                self.run.update(access={a.node: a.to_dict() for a in access})
            mode = decide_access(self.study, set(features).union(*(node_features or {}).values()),
                          access, as_found_ok)
            if mode == AS_FOUND:
                return self._as_found_testbed(bed, access, tools)
            # every machine's features and tools checked before its lock is taken: a machine
            # that lacks one is refused, naming it, before anything changes anywhere
            for name, node in bed.nodes.items():
                caps = self.capabilities[name] = probe(node)
                need = set(features) | (node_features or {}).get(name, set())
                require(caps, need, tools, purpose=f"study {self.study} on node {name}")
            if not self.dry_run:
                self._take_inventory_machines(bed)
            if self.dry_run:  # the machines exist: operations read their facts
                self.bed = bed
                return bed
        else:
            bed = self._local_testbed(topology, set(features), set(tools), node_features)
        self.bed = bed
        self.timings["testbed_s"] = time.monotonic() - started
        self.run.update(testbed=bed.record(), placement=self.placement(),
                        capabilities={k: v.to_dict() for k, v in self.capabilities.items()})
        return bed

    def _as_found_testbed(self, bed: InventoryTestbed, access, tools) -> InventoryTestbed:
        """Machines measured as found: programs checked, no feature probe, no lock, and from
        here on every ``apply`` planned and recorded, never made (:mod:`harness.machines.as_found`)."""
        started = time.monotonic()
        self.as_found = AsFound([a for a in access if not a.root])
        for name, node in bed.nodes.items():
            caps = self.capabilities[name] = found_capabilities(name, node, bed.found[name],
                                                                tools)
            require(caps, set(), tools, purpose=f"study {self.study} on node {name}")
        self.bed = bed
        if not self.dry_run:
            self.machine_locks.update({name: {"machine": name, "mode": "not taken",
                                              "reason": NO_LOCK} for name in bed.nodes})
            self.timings["testbed_s"] = time.monotonic() - started
            self.run.update(as_found=self.as_found.to_dict(), machine_lock=self.machine_locks,
                            testbed=bed.record(), placement=self.placement(),
                            capabilities={k: v.to_dict() for k, v in self.capabilities.items()})
        return bed

    def _placing(self, topology: Topology, features: set[str], tools: set[str],
                 node_features: dict[str, set[str]] | None) -> Placing:
        """Where the lab goes (:func:`.testbed_build.place`), recorded for run.json."""
        placing = place(self.study, topology, features, tools, node_features)
        self.capabilities["local"] = placing.capabilities
        self._placement = placing.decision.to_dict()
        return placing

    def _planned_testbed(self, topology: Topology, features: set[str], tools: set[str],
                         node_features: dict[str, set[str]] | None) -> dryrun.PlannedTestbed:
        """The lab a run would build, and its build plan; nothing booted or created."""
        placing = self._placing(topology, features, tools, node_features)
        bed = planned_lab(placing, topology, self._placement)
        self._planned += bed.changes
        self.apply(*bed.lab.sysctls(bed.nodes))
        return bed

    def _local_testbed(self, topology: Topology, features: set[str], tools: set[str],
                       node_features: dict[str, set[str]] | None) -> LabTestbed:
        """A namespace lab on this host, or inside VMs (:func:`.testbed_build.build_lab`)."""
        placing = self._placing(topology, features, tools, node_features)
        try:
            built = build_lab(placing, topology, self.study, self.journal, self.stack)
        except CeilingTooLow as exc:  # refused before any point: run.json keeps what it measured
            self._placement.update(exc.record)
            self.run.update(placement=self.placement())
            raise
        self.capabilities.update(built.capabilities)
        self._placement.update(built.placement)
        self.wired_consoles = list(built.wired_consoles)
        if built.ceiling_s is not None:
            self.timings["ceiling_s"] = built.ceiling_s
        if built.scaling is not None:
            self.scaling = built.scaling
        return built.bed

    # -- one measuring run per machine (harness.run.machinelock, harness.run.machinewatch) ---------
    def take_machine(self) -> None:
        """Take this machine's lock (or join its holder when sharing was asked) and start
        watching its load; refused with one error, before any change, when it is taken."""
        held = held_for(self.run.run_id)  # `harness run` took it for this run already
        if held is not None:
            lock, record = held
            self.machine_locks["local"] = (self.run.meta.get("machine_lock") or {}).get(
                "local") or record
        else:
            share = sharing_requested()
            lock = LocalLock()
            owner = this_process(self.run.run_id, self.study, str(self.run.path), share)
            self.machine_locks["local"] = lock.acquire(owner, share)
        self._lock = lock
        self.run.update(machine_lock=self.machine_locks)
        self._watch = MachineWatch(lock).start()

    def _take_inventory_machines(self, bed: InventoryTestbed) -> None:
        """The same lock on every inventory machine, held by a journalled process there."""
        owner = self._lock.owner if self._lock else this_process(
            self.run.run_id, self.study, str(self.run.path))
        for name, node in bed.nodes.items():
            self.machine_locks[name] = remote_lock(self.journal, node, owner,
                                                   sharing_requested())
        self.run.update(machine_lock=self.machine_locks)

    def mark(self, phase: str) -> None:
        """Samples of the machine's load from now on belong to ``phase`` (e.g. ``measure``)."""
        if self._watch is not None:
            self._watch.mark(phase)

    def give_back_machine(self) -> None:
        """Stop watching and release the lock; the watch's summary goes to run.json."""
        try:
            if self._watch is not None:
                self.run.update(machine_activity=self._watch.stop())
                self._watch = None
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def placement(self) -> dict:
        if self.inventory:
            return {"where": "inventory", "reason": f"machines from {self.inventory}"}
        return self._placement

    def verify(self, seconds: int = 2) -> list[LinkCheck]:
        self._refuse_in_dry_run("link verification (session.verify)")
        started = time.monotonic()
        if self.checks:  # verified before in this run: keep that pass, archive this apart
            self.earlier_checks.append([c.to_dict() for c in self.checks])
        self.checks = self.bed.verify(self.journal, seconds)
        self.timings["verify_s"] = time.monotonic() - started
        self.run.update(link_verification=[c.to_dict() for c in self.checks],
                        **({"link_verification_earlier": self.earlier_checks}
                           if self.earlier_checks else {}))
        # the first pass's raw files keep their names; a later pass's are prefixed with its
        # number (archived files are never replaced: a second pass under the same names was
        # refused, "exists already")
        prefix = f"pass{len(self.earlier_checks) + 1}-" if self.earlier_checks else ""
        for check in self.checks:
            for name, text in check.raw_files().items():
                self.raw(prefix + name, text)
        return self.checks

    def raw(self, name: str, content: str | bytes):
        self._refuse_in_dry_run("archiving raw output (session.raw)")
        return self.run.add_raw(name, content)

    def results(self, frame, name: str = "results"):
        self._refuse_in_dry_run("archiving results (session.results)")
        return self.run.write_table(frame, name)

    def note(self, **fields) -> None:
        self._refuse_in_dry_run("writing run.json (session.note)")
        self.run.update(**fields)

    def wire_stall(self, error: BaseException) -> WireStalled | None:
        """When ``error`` ended a run in a VM lab whose wire's TX queue stalled (QEMU's
        virtio-net bug, :mod:`harness.vm.txstall`): the stall, recorded in run.json's
        ``wire_stall``, and the one error that names it. Read before the VMs stop (their
        consoles go with them); None when no wire stalled."""
        from ..vm.txstall import stalled_wire

        if self.dry_run:
            return None
        if isinstance(error, WireStalled):  # a VM node stopped the command waiting on it
            self.run.update(wire_stall=error.record)
            self._keep_stall_evidence(error.record.get("vm", ""))
            return None
        if not self.wired_consoles:
            return None
        found = stalled_wire(self.wired_consoles)
        if found is None:
            if isinstance(error, Exception):  # not Ctrl-C: keep what the VMs said
                self._keep_consoles()
            return None
        stalled = WireStalled(*found, cause=error)
        self.run.update(wire_stall=stalled.record)
        self._keep_stall_evidence(found[0])
        return stalled

    def _keep_consoles(self) -> None:
        """Every VM's console, as raw files, for a run that failed without a stall."""
        from ..vm.stall_evidence import failure_consoles

        self._keep_raw(lambda: failure_consoles(self.wired_consoles), "the VMs' consoles")

    def _keep_stall_evidence(self, vm: str) -> None:
        """The stalled VM's console and its QEMU's output, as raw files (they go with the VM)."""
        from ..vm.stall_evidence import stall_evidence

        self._keep_raw(lambda: stall_evidence(vm, self.wired_consoles, self.journal.pending()),
                       "the wire stall's console and QEMU output")

    def _keep_raw(self, files, what: str) -> None:
        """Archive ``files()`` (name -> text) as raw files; never in the way of the error that
        ends the run: evidence is a bonus, the error and any stall are recorded already."""
        try:
            for name, text in files().items():
                self.run.add_raw(name, text)
        except Exception as exc:  # noqa: BLE001 -- see the docstring
            log.warning("could not keep %s: %s", what, exc)

    def close(self, error: BaseException | None) -> None:
        if self.dry_run:
            self.stack.close()  # connections to inventory machines
            return
        try:
            self.stack.close()  # lab teardown, connections
        finally:
            try:
                self.journal.undo_all()  # anything recorded outside the lab's scope
            finally:
                lab_record = self.bed.record() if self.bed else None
                left = [f"{e.kind} on {e.node.get('name')}: {_short(e.data)}"
                        for e in self.journal.pending()]
                self.run.update(
                    configuration=self.journal.configuration(),
                    testbed=lab_record,
                    session_timings=self.timings,
                    measurement_error=None if error is None else format_error(error),
                    # what could not be undone (a node lost, ...): `harness lab clean` retries
                    not_undone=left or None,
                    # of those, what was undone and seen still there, with why and how to finish
                    left_behind=self.journal.left_behind() or None,
                )


def _short(data: dict, limit: int = 160) -> str:
    text = ", ".join(f"{k}={v}" for k, v in data.items())
    return text if len(text) <= limit else text[:limit - 3] + "..."


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
        quiet_own_death()  # in a kernel: the reply after the undo may find no channel
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def open_session(study: str, parameters: dict, run_dir: str = "", inventory: str = "",
                 root=None, dry_run: bool = False) -> Iterator[Session]:
    """A session for ``study``; ``dry_run``: no run folder, nothing changed, a plan instead."""
    if dry_run:
        session = Session(None, dryrun.NoJournal(), inventory, dry_run=True, study=study)
        try:
            yield session
        finally:
            session.close(None)
        return
    owner = not run_dir
    run = Run.create(study, parameters, root) if owner else Run.open(run_dir)
    run.update(provenance=provenance.collect(project_root()),
               inventory=inventory or None)
    session = Session(run, run.journal, inventory)
    error: BaseException | None = None
    with sigterm_as_interrupt():
        try:
            session.take_machine()
            with journalled(session.journal):
                yield session
        except BaseException as exc:
            error = exc
            if isinstance(exc, KeyboardInterrupt):
                # Ctrl-C reaches the kernel as nbclient's interrupt, followed by its shutdown
                # request: the cell's reply after the undo finds the channels closed
                quiet_own_death()
            try:
                stalled = session.wire_stall(exc)
            except Exception as problem:  # noqa: BLE001 -- the run's own error stays the one raised
                exc.add_note(f"and then, reading the VMs' consoles: {format_error(problem)}")
                stalled = None
            if stalled is not None and isinstance(exc, Exception):  # Ctrl-C stays Ctrl-C
                error = stalled
                raise stalled from exc
            raise
        finally:
            # Every step runs whatever the others did; the first failure decides the outcome,
            # and the block's own error, if any, stays the one raised (the rest become notes).
            problems: list[BaseException] = []
            for step in (lambda: session.close(error), session.give_back_machine):
                try:
                    step()
                except BaseException as exc:  # noqa: BLE001 -- kept, see below
                    problems.append(exc)
            failure = error or (problems[0] if problems else None)
            if owner:
                try:
                    run.finish(COMPLETE if failure is None else INCOMPLETE,
                               None if failure is None else format_error(failure))
                except BaseException as exc:  # noqa: BLE001 -- e.g. the disk is full
                    problems.append(exc)
            if error is not None:
                for exc in problems:
                    error.add_note(f"and then: {format_error(exc)}")
            elif problems:
                raise problems[0]


__all__ = ["Session", "open_session", "summarise", "Interrupted", "Node"]
