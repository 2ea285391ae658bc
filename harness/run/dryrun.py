"""A dry run: every change a run would make, printed, and nothing changed.

Operations compute their facts and diffs as usual (:func:`harness.config.plan`)
but apply nothing. Facts are read on machines that exist (this host, inventory
machines); a lab or VM that a dry run does not build is made of *planned*
nodes: reading a fact there gives ``UNKNOWN`` and the change is shown from the
asked value. A planned node refuses to run anything, so a study step that
would change a machine outside the operations fails loudly instead of acting.
"""

from __future__ import annotations

from ..config.record import ChangeRecord
from ..errors import SpecError
from ..lab.lab import Lab
from ..nodes import NamespaceNode, Node

HINT = "a dry run only plans: run without --dry-run to do it"


def refuse(what: str) -> SpecError:
    return SpecError(f"dry run: {what} is not done in a dry run (it would need a built testbed "
                     "or change the run's archive)", HINT)


class PlannedMachine(Node):
    """A machine (VM) that a dry run does not boot."""

    planned = True

    def __init__(self, name: str):
        self.name = name

    def describe(self) -> dict:
        return {"type": "planned", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        raise refuse(f"running `{cmd[:80]}` on {self.name}")

    def spawn(self, cmd, *, cgroup=None):
        raise refuse(f"starting a process on {self.name}")

    def put(self, local_path, remote_path):
        raise refuse(f"copying a file to {self.name}")

    def get(self, remote_path, local_path):
        raise refuse(f"copying a file from {self.name}")


class PlannedNamespace(NamespaceNode):
    """A lab node (network namespace) that a dry run does not create."""

    planned = True

    def _execute(self, cmd, timeout, stdin):
        raise refuse(f"running `{cmd[:80]}` in {self.name}")

    def spawn(self, cmd, *, cgroup=None):
        raise refuse(f"starting a process in {self.name}")


class NoJournal:
    """Stands for the journal in a dry run: changes go through ``session.apply`` only."""

    def __getattr__(self, name: str):
        raise SpecError("dry run: there is no journal; nothing may be changed",
                        "apply configuration with session.apply(operation, ...), which a dry "
                        "run turns into a plan")


class PlannedTestbed:
    """What a namespace lab would be: its nodes (planned), addresses and build plan."""

    kind = "planned-lab"

    def __init__(self, lab: Lab, changes: list[ChangeRecord], placement: dict):
        self.lab = lab
        self.topology = lab.topology
        self.placement = placement
        self.changes = changes
        whole = set(lab.topology.whole_machine_nodes())  # a planned machine already
        self.nodes = {name: n if name in whole else PlannedNamespace(n.netns, n.parent, n.name)
                      for name, n in lab.nodes.items()}

    def node(self, name: str) -> Node:
        self.lab.node(name)  # the same error for an unknown name
        return self.nodes[name]

    def address(self, node: str, ifname: str) -> str:
        return self.lab.address(node, ifname)

    def device(self, node: str, ifname: str) -> str:
        self.topology.interface(node, ifname)
        return ifname

    def verify(self, journal, seconds: int = 2):
        raise refuse("link verification")

    def record(self) -> dict:
        return {"kind": self.kind, "placement": self.placement,
                "topology": self.topology.to_dict(),
                "changes": [c.to_dict() for c in self.changes]}
