"""Which of a study's operations need root, and whether each machine's login has it.

On a user's cluster the harness may log in as the user, not root. Before anything
runs (before the capability probe, before any lock, before any change) every machine of
the inventory is asked who the login is (``id -u``, one read-only command); a machine
reached as root passes, one reached as another user stops the run with ONE error that
names the machine, the user, the study's operations that need root and the privilege
each needs. A refusal, not a half run: the harness's own probe already needs root
(``unshare --net`` to test kernel features in an empty namespace), and so does every
configuration step a study records and undoes.

What is not built (issue 25, "Privileges on a user's cluster"): ``sudo -n`` where an
inventory allows it, and a run as the user that measures the machines as found and marks
the claims that needed a change as not testable. Until then the error says to log in as
root.

The table below is the harness's own operations by kind (harness/config/*), each with
the privilege Linux asks for it; a study's list is the kinds it always uses (sysctls:
every study sets or reads-then-restores some) plus those of its kernel features.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import HarnessError
from .nodes import Node

#: operation -> the privilege it needs (what Linux checks)
OPERATIONS: dict[str, str] = {
    "probe": "CAP_SYS_ADMIN (unshare --net: the kernel-feature probe in an empty namespace)",
    "sysctl": "root (writing /proc/sys: net.* settings, recorded and restored)",
    "qdisc": "CAP_NET_ADMIN (tc qdisc: shaping, queues)",
    "mptcp-endpoint": "CAP_NET_ADMIN (ip mptcp endpoint/limits)",
    "tipc-bearer": "CAP_NET_ADMIN (tipc node/bearer)",
    "sctp": "CAP_SYS_MODULE when the sctp module is not loaded",
    "nat": "CAP_NET_ADMIN (nft tables)",
    "mount": "CAP_SYS_ADMIN (mount/umount of NFS and GlusterFS)",
    "nfs-export": "root (exportfs, rpc.nfsd)",
    "gpfs": "a GPFS administrator (mm* commands, normally root)",
    "cgroup": "root (a cgroup's cpu.max, unless the user's cgroup is delegated)",
}
#: kernel feature a study needs -> its operations
FEATURE_OPERATIONS: dict[str, tuple[str, ...]] = {
    "mptcp": ("mptcp-endpoint",),
    "tipc": ("tipc-bearer",),
    "sctp": ("sctp",),
    "nat": ("nat",),
    "nfs": ("mount", "nfs-export"),
    "nfsd": ("nfs-export",),
    "glusterfs": ("mount",),
    "gpfs": ("gpfs",),
    "htb": ("qdisc",),
    "tbf": ("qdisc",),
    "netem": ("qdisc",),
}


class PrivilegeMissing(HarnessError):
    """A machine's login lacks a privilege the study's operations need."""


@dataclass(frozen=True)
class Access:
    node: str
    user: str
    uid: int | None

    @property
    def root(self) -> bool:
        return self.uid == 0

    def to_dict(self) -> dict:
        return {"node": self.node, "user": self.user, "uid": self.uid, "root": self.root}


def read_access(name: str, node: Node) -> Access:
    """Who the harness is on ``node`` (``id -u -n``, ``id -u``; reads only)."""
    out = node.run("id -u -n; id -u", timeout=20, check=False).stdout.split()
    try:
        return Access(name, out[0], int(out[1]))
    except (IndexError, ValueError):
        return Access(name, out[0] if out else "?", None)


def operations(features: set[str]) -> list[str]:
    """The operations a study with these kernel features performs, in a stable order."""
    kinds = ["probe", "sysctl"]
    for feature in sorted(features):
        for kind in FEATURE_OPERATIONS.get(feature, ()):
            if kind not in kinds:
                kinds.append(kind)
    return kinds


def require_root(study: str, features: set[str], access: list[Access]) -> None:
    """Stop before anything runs if a machine's login is not root, naming what needs it."""
    lacking = [a for a in access if not a.root]
    if not lacking:
        return
    needs = "; ".join(f"{kind}: {OPERATIONS[kind]}" for kind in operations(features))
    who = ", ".join(f"{a.node} (user {a.user}, uid {a.uid})" for a in lacking)
    raise PrivilegeMissing(
        f"study {study} cannot run on {who}: the login is not root, and these operations "
        f"need root or the named capability: {needs}",
        "log in as root on those machines (user: root in the inventory, with your key in "
        "root's authorized_keys); running as an ordinary user (sudo -n, or measuring the "
        "machines as found) is not supported yet. Nothing was changed.")
