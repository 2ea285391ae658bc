"""One way to change a machine: fact -> diff -> journal -> apply -> record.

Every configuration operation (a sysctl, an MPTCP endpoint, a NAT table, a
TIPC bearer...) has the same shape, borrowed from pyinfra:

* a :class:`Fact` is a shell command plus a parser: what the node is now;
* an :class:`Operation` checks its arguments (:meth:`Operation.check`), names
  the facts it needs (:meth:`Operation.facts`) and, given their values,
  returns the :class:`Change` list that makes the node as asked
  (:meth:`Operation.diff`) -- a change carries its command, its undo data
  and its record; a change without a command is "already as asked";
* :func:`apply` does the rest for any number of operations at once.

Because facts and changes are plain commands, :func:`apply` reads every fact
of every operation in one round trip per machine, and makes every change in
one more (S3 configures TIPC in 49 namespaces inside an emulated VM, where one
round trip costs 0.1-0.3 s). All facts are read and all diffs computed before
the first change, so a bad argument or an unexpected state stops everything
with nothing changed. Each change is journalled (and fsynced) with its undo
data and its record before its command runs; a no-op is journalled as a
``noted`` line; a failed command is marked on its entry. The run's
configuration list is a view of the journal (:meth:`Journal.configuration`).

A dry run (:func:`plan`) is the same minus the journal and the changes: facts
are read where the node exists, and where it does not (a lab that a dry run
does not build) the fact is :data:`UNKNOWN` and the change is planned from
the asked value.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import HarnessError
from ..journal.journal import Journal
from ..nodes import Node, Result
from ..nodes.group import Call, run_group
from .record import ChangeRecord

FACT_TIMEOUT = 30.0
APPLY_TIMEOUT = 60.0


class Unknown:
    """The value of a fact on a node that does not exist yet (a dry run builds nothing)."""

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __str__(self) -> str:
        return "unknown: not built in a dry run"


UNKNOWN = Unknown()


@dataclass(frozen=True)
class Fact:
    """What a node is now: ``command`` run on ``node``, its Result read by ``parse``.

    ``parse`` raises (SpecError, CapabilityMissing) when the state forbids the
    operation altogether, e.g. no such sysctl or no ``tipc`` tool.
    """

    node: Node
    command: str
    parse: Callable[[Result], Any]

    def read(self) -> Any:
        return self.parse(self.node.run(self.command, check=False, timeout=FACT_TIMEOUT))


@dataclass
class Change:
    """One change an operation makes (or found made): its record, command and undo.

    ``command`` None: the node already is as asked (recorded, nothing to undo).
    ``undo_kind``/``undo`` are the journal entry's kind and data, from which
    that kind's undo handler restores ``before``. ``kind`` is the record's kind
    (usually the same).

    ``background``: ``command`` is a daemon kept in the foreground (``glusterd
    -N``, ``rpc.mountd -F``), started by :meth:`Journal.start` -- its journal
    entry is a ``process`` (pid and start time) carrying this change's record,
    and its undo stops exactly that process -- instead of run to completion;
    ``undo_kind``/``undo`` are not used. ``ready`` is then a command that
    succeeds once the daemon serves (it may wait; it runs with the apply
    timeout); a failed ``ready`` or a daemon that has exited fails the change.
    """

    node: Node
    kind: str
    target: str
    before: Any
    after: Any
    command: str | None = None
    undo_kind: str = ""
    undo: dict = field(default_factory=dict)
    background: bool = False
    ready: str | None = None

    @property
    def changed(self) -> bool:
        return self.command is not None

    def record(self) -> ChangeRecord:
        return ChangeRecord(self.node.name, self.kind, self.target, _text(self.before),
                            _text(self.after), self.changed)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return str(value)


class Operation(ABC):
    """A desired state on a node. Subclasses say what to read and what to change; no I/O."""

    def check(self) -> None:
        """Refuse bad arguments (SpecError) before any fact is read. Default: nothing to check."""

    @abstractmethod
    def facts(self) -> dict[str, Fact]:
        """The facts :meth:`diff` needs, by name."""

    @abstractmethod
    def diff(self, facts: dict[str, Any]) -> list[Change]:
        """The changes that make the node as asked (may raise SpecError: nothing has changed).

        A value is :data:`UNKNOWN` when its node does not exist (dry run):
        plan the change from the asked value then.
        """


def built(node: Node) -> bool:
    """False for a node a dry run only planned (see :mod:`harness.run.dryrun`)."""
    return not (getattr(node, "planned", False) or getattr(node.machine, "planned", False))


def run_calls(calls: list[tuple[Node, str]], timeout: float) -> list[Result]:
    """Run each (node, command) with the group runner: one round trip per machine, one
    Result per call in order, a failed command is data (not an exception).

    The calls of one machine may run side by side (in batches): they must not
    depend on each other -- :func:`apply` sends dependent changes in rounds.
    """
    return run_group([Call(node, cmd, timeout) for node, cmd in calls]) if calls else []


def read_facts(ops: list[Operation], exists: Callable[[Node], bool] = built
               ) -> list[dict[str, Any]]:
    """Every operation's facts, read in one batch (one round trip per machine)."""
    wanted = [op.facts() for op in ops]
    calls = [(f.node, f.command) for facts in wanted for f in facts.values() if exists(f.node)]
    results = iter(run_calls(calls, FACT_TIMEOUT))
    values = []
    for facts in wanted:
        values.append({name: f.parse(next(results)) if exists(f.node) else UNKNOWN
                       for name, f in facts.items()})
    return values


def diffs(ops: Iterable[Operation], exists: Callable[[Node], bool] = built
          ) -> list[list[Change]]:
    """Check every operation, read every fact, then diff: each operation's changes."""
    ops = list(ops)
    for op in ops:
        op.check()
    return [op.diff(facts) for op, facts in zip(ops, read_facts(ops, exists))]


def plan(ops: Iterable[Operation], exists: Callable[[Node], bool] = built) -> list[Change]:
    """The changes ``ops`` would make, in order; nothing changed (a dry run)."""
    return [change for changes in diffs(ops, exists) for change in changes]


class ApplyFailed(HarnessError):
    """Some changes' commands failed; the journal holds the record of every change."""


def apply(journal: Journal, ops: Iterable[Operation]) -> list[ChangeRecord]:
    """Make the nodes as ``ops`` ask; return one record per change, no-ops included.

    Order: every check, every fact, every diff (any refusal: nothing changed).
    Then in rounds -- round k holds each operation's k-th change, because an
    operation's later change may need its earlier one (the machine's allowed
    congestion controls before a namespace's default; the cgroup controller
    before the cgroup) while different operations are independent: each
    change of the round is journalled (fsynced) with its undo and its record,
    a no-op noted, then the round's commands run, one round trip per machine.
    A failed command is marked on its journal entry; after that round no more
    rounds run and :class:`ApplyFailed` names each failed change. The undo of
    every journalled change stays pending (undo tolerates changes not made).
    """
    per_op = diffs(ops)
    records: list[ChangeRecord] = []
    for k in range(max((len(c) for c in per_op), default=0)):
        calls: list[tuple[Node, str]] = []
        entries = []
        daemons: list[tuple[Change, dict]] = []
        for change in (changes[k] for changes in per_op if len(changes) > k):
            rec = asdict(change.record())
            rec.pop("changed")
            records.append(change.record())
            if not change.changed:
                journal.note(change.node, rec)
            elif change.background:
                daemons.append((change, rec))
            else:
                entries.append(journal.record_change(change.undo_kind or change.kind,
                                                     change.node, change.undo, rec))
                calls.append((change.node, change.command))
        failures = []
        results = run_calls(calls, APPLY_TIMEOUT)
        started = [(journal.start(change.node, change.command, record=rec), change)
                   for change, rec in daemons]
        checks = iter(run_calls([(change.node, change.ready) for _p, change in started
                                 if change.ready], APPLY_TIMEOUT))
        for proc, change in started:
            result = next(checks) if change.ready else None
            if (result is None or result.ok) and proc.poll() is not None:
                result = Result(change.node.name, change.command, "", "it exited at start",
                                proc.poll() or 1, 0.0)
            if result is not None:
                entries.append(journal.entry(proc.info.extra["journal_seq"]))
                results.append(result)
        for entry, result in zip(entries, results):
            if result.ok:
                continue
            message = (result.stderr or result.stdout).strip()[-300:] or \
                f"exit status {result.exit_status}"
            if entry.kind == "process":  # the daemon's own words say more than its probe's
                proc = next(p for p, _c in started if p.info.extra["journal_seq"] == entry.seq)
                message += f"; the daemon {'exited, ' if proc.poll() is not None else ''}" \
                    f"said: {proc.output().strip()[-300:] or '(nothing)'}"
            journal.failed(entry, message)
            failures.append(f"{entry.record['node']}: {entry.record['kind']} "
                            f"{entry.record['target']}: {message}")
        if failures:
            raise ApplyFailed("configuration failed:\n  " + "\n  ".join(failures),
                              "the run's configuration records say what was applied; the "
                              "journal undoes all of it")
    return records


def describe(records: Iterable[ChangeRecord | dict]) -> str:
    """Planned or made changes as text, one line each (``harness ... --dry-run`` prints it)."""
    lines = []
    for r in records:
        d = r if isinstance(r, dict) else asdict(r)
        mark = "change" if d.get("changed") else "as is "
        before = "absent" if d.get("before") is None else d["before"]
        lines.append(f"{mark} {d['node']}: {d['kind']} {d['target']}: {before} -> {d['after']}")
    return "\n".join(lines)
