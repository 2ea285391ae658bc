"""A network namespace, entered through a parent node (local, VM or remote host).

Commands enter only the network namespace (``nsenter --net``), never a fresh
mount namespace, so mounts made for one command stay visible to the next
(``ip netns exec`` would hide them).
"""

from __future__ import annotations

import shlex

from .base import Command, Node, Process, command_text
from .local import LocalNode


class NamespaceNode(Node):
    def __init__(self, netns: str, parent: Node | None = None, name: str | None = None):
        self.netns = netns
        self.parent = parent or LocalNode()
        self.name = name or netns

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"

    @property
    def machine(self) -> Node:
        return self.parent.machine

    @property
    def is_local(self) -> bool:
        return self.parent.is_local

    def command_on_machine(self, cmd: Command) -> str:
        if isinstance(cmd, str):
            inner = self._wrap(cmd)
        else:  # an argv: nsenter execs it, no shell in between (its pid is the program's)
            inner = shlex.join(["nsenter", f"--net={self.netns_path}", "--",
                                *(str(part) for part in cmd)])
        return self.parent.command_on_machine(inner)

    def describe(self) -> dict:
        return {
            "type": "netns",
            "name": self.name,
            "netns": self.netns,
            "parent": self.parent.describe(),
        }

    def _wrap(self, cmd: str) -> str:
        return shlex.join(["nsenter", f"--net={self.netns_path}", "--", "sh", "-c", cmd])

    def _execute(self, cmd: str, timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
        return self.parent._execute(self._wrap(cmd), timeout, stdin)

    def spawn(self, cmd: Command, *, cgroup: str | None = None) -> Process:
        from .local import in_cgroup

        inner = in_cgroup(command_text(cmd), cgroup)
        proc = self.parent.spawn(self._wrap(inner))
        proc.info.node = self.describe()
        return proc

    def put(self, local_path: str, remote_path: str) -> None:
        self.parent.put(local_path, remote_path)

    def get(self, remote_path: str, local_path: str) -> None:
        self.parent.get(remote_path, local_path)


class MachineRootNode(Node):
    """A lab node that is its machine's initial network namespace, not a namespace of its own.

    For kernel facilities that live only there: Soft-RoCE's UDP socket (port
    4791) and its routing are the initial namespace's on Linux 6.x, so an RDMA
    link over a NIC moved into a lab namespace would never carry a packet. The
    node takes the whole machine (a VM of the lab: see
    :attr:`harness.topology.topology.TopologyNode.whole_machine`); commands run on the
    machine as they are, under the topology's node name.
    """

    def __init__(self, parent: Node, name: str):
        self.parent = parent
        self.name = name

    @property
    def machine(self) -> Node:
        return self.parent.machine

    @property
    def is_local(self) -> bool:
        return self.parent.is_local

    def command_on_machine(self, cmd: Command) -> str:
        return self.parent.command_on_machine(cmd)

    def describe(self) -> dict:
        return {"type": "machine-root", "name": self.name, "parent": self.parent.describe()}

    def _execute(self, cmd: str, timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
        return self.parent._execute(cmd, timeout, stdin)

    def spawn(self, cmd: Command, *, cgroup: str | None = None) -> Process:
        proc = self.parent.spawn(cmd, cgroup=cgroup)
        proc.info.node = self.describe()
        return proc

    def put(self, local_path: str, remote_path: str) -> None:
        self.parent.put(local_path, remote_path)

    def get(self, remote_path: str, local_path: str) -> None:
        self.parent.get(remote_path, local_path)

    def close(self) -> None:
        """The machine's connection belongs to whoever made the machine."""
