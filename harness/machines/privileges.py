"""Which of a study's operations need root, whether each machine's login has it, and what a
run does when it has not.

On a user's cluster the harness may log in as the user, not root. Before anything runs
(before the capability probe, before any lock, before any change) every machine of the
inventory is asked who the login is (``id -u``, one read-only command). Then:

- a login that is root, or one the inventory lets use ``sudo -n`` (``sudo: true``; every
  command then runs through it, :mod:`harness.nodes.sudo`) and for which
  ``sudo -n`` works: the run changes the machines as the study asks, records and undoes it;
- a machine whose inventory allows sudo but where ``sudo -n`` fails (a password asked, no
  rule): ONE error with sudo's own words, before anything runs;
- any other login that is not root: a study that can measure the machines as they are
  (:attr:`harness.studies.base.Study.as_found`) runs *as found* on every machine of the
  run: nothing is changed anywhere, the configuration it would make is planned from the
  machines' facts and recorded as ``as_found.not_made`` with the privilege each change
  needs, and each claim that rests on a change that was not made is "not testable here",
  naming that privilege (:func:`mark_claims`). A study that measures nothing without its
  changes is refused, naming each of its operations and the privilege it needs.

The table below is the harness's own operations by kind (harness/config/*), each with
the privilege Linux asks for it; a study's list is the kinds it always uses (sysctls:
every study sets or reads-then-restores some) plus those of its kernel features.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HarnessError
from ..nodes import Node

#: operation -> the privilege it needs (what Linux checks)
OPERATIONS: dict[str, str] = {
    "probe": "CAP_SYS_ADMIN (unshare --net: the kernel-feature probe in an empty namespace)",
    "sysctl": "root (writing /proc/sys: net.* settings, recorded and restored)",
    "qdisc": "CAP_NET_ADMIN (tc qdisc: shaping, queues)",
    "mptcp-endpoint": "CAP_NET_ADMIN (ip mptcp endpoint/limits)",
    "mptcp-limits": "CAP_NET_ADMIN (ip mptcp endpoint/limits)",
    "route": "CAP_NET_ADMIN (ip route: a route or a policy-routing table)",
    "rule": "CAP_NET_ADMIN (ip rule: policy routing)",
    "tipc-bearer": "CAP_NET_ADMIN (tipc node/bearer)",
    "sctp": "CAP_SYS_MODULE when the sctp module is not loaded",
    "nat": "CAP_NET_ADMIN (nft tables)",
    "mount": "CAP_SYS_ADMIN (mount/umount of NFS and GlusterFS)",
    "nfs-export": "root (exportfs, rpc.nfsd)",
    "gpfs": "a GPFS administrator (mm* commands, normally root)",
    "cgroup": "root (a cgroup's cpu.max, unless the user's cgroup is delegated)",
    "cgroup-v1": "root (a cgroup's cpu.cfs_quota_us, cgroup v1)",
    "cgroup-v2": "root (a cgroup's cpu.max, unless the user's cgroup is delegated)",
    "cgroup-controller": "root (enabling the cpu controller in cgroup.subtree_control)",
    "mtu": "CAP_NET_ADMIN (ip link set mtu)",
    "offload": "CAP_NET_ADMIN (ethtool -K)",
    "lock": "root (the machine lock under /run/harness, shared by every user's runs)",
}
#: what a run as found changes nothing of, by machine: its run.json key ``as_found``
AS_FOUND = "as found"
CHANGES = "changes"
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
    """Who the harness is on a machine: the login, and the uid its commands run with
    (0 through ``sudo -n`` when the inventory allows sudo and it works)."""

    node: str
    user: str  # the login
    uid: int | None  # the uid commands run with; None: not known (sudo failed, say)
    sudo: bool = False  # commands run through sudo -n (the inventory allows it)
    problem: str = ""  # sudo's own words when sudo -n failed

    @property
    def root(self) -> bool:
        return self.uid == 0

    def to_dict(self) -> dict:
        return {"node": self.node, "user": self.user, "uid": self.uid, "root": self.root,
                "via": "sudo -n" if self.sudo else "login", "problem": self.problem or None}


def read_access(name: str, node: Node) -> Access:
    """Who the harness is on ``node`` (``id -u -n``, ``id -u``; reads only). On a machine
    whose commands go through ``sudo -n``: the login (asked without sudo), and the uid
    ``sudo -n id -u`` gives, or sudo's words when it refuses."""
    if getattr(node, "sudo", False):
        _status, out, _err = node.login_command("id -u -n")
        login = out.strip() or "?"
        res = node.run("id -u", timeout=20, check=False)
        try:
            return Access(name, login, int(res.stdout.split()[0]) if res.ok else None, True,
                          "" if res.ok else (res.stderr or res.stdout).strip()[-300:])
        except (IndexError, ValueError):
            return Access(name, login, None, True, (res.stderr or res.stdout).strip()[-300:])
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


def decide(study: str, features: set[str], access: list[Access], as_found: bool) -> str:
    """:data:`CHANGES` when every machine's commands run as root (a root login, or
    ``sudo -n`` where the inventory allows it); :data:`AS_FOUND` when some login is not
    root and the study can measure the machines as they are (``as_found``). Otherwise stop
    before anything runs, naming the machines and what needs root."""
    broken = [a for a in access if a.sudo and not a.root]
    if broken:
        who = "; ".join(f"{a.node} (user {a.user}): sudo said {a.problem or 'nothing'!r}"
                        for a in broken)
        raise PrivilegeMissing(
            f"study {study}: the inventory allows sudo on these machines, but `sudo -n` "
            f"does not give root there: {who}",
            "give the login a NOPASSWD rule for the commands (e.g. `USER ALL=(root) NOPASSWD: "
            "ALL` in /etc/sudoers.d/, edited with visudo): the harness never types a "
            "password; or set sudo: false to measure the machines as found. Nothing was "
            "changed.")
    lacking = [a for a in access if not a.root]
    if not lacking:
        return CHANGES
    if as_found:
        return AS_FOUND
    needs = "; ".join(f"{kind}: {OPERATIONS[kind]}" for kind in operations(features))
    who = ", ".join(f"{a.node} (user {a.user}, uid {a.uid})" for a in lacking)
    raise PrivilegeMissing(
        f"study {study} cannot run on {who}: the login is not root, this study measures "
        f"nothing without changing the machines, and these operations need root or the "
        f"named capability: {needs}",
        "log in as root on those machines (user: root in the inventory, with your key in "
        "root's authorized_keys), or let the login use sudo without a password and say "
        "sudo: true for those machines in the inventory. Nothing was changed.")


#: back-compatible name: refuse unless every login is root (or sudo works)
def require_root(study: str, features: set[str], access: list[Access]) -> None:
    decide(study, features, access, as_found=False)
