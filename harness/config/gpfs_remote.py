"""GPFS multi-cluster remote mount as recorded operations, each undone at the end.

The owning cluster (it has the file system) lets the accessing cluster in and
grants it the file system (:class:`GpfsGrant`: ``mmauth add``, ``mmauth
grant``); the accessing cluster learns the owner, defines the file system
under a local name and mounts it (:class:`GpfsRemoteMount`: ``mmremotecluster
add``, ``mmremotefs add``, ``mmmount``). The key pairs (``mmauth genkey new``
on each cluster) and the exchange of the public key files are done before,
by the clusters' administrators: this module takes the key files' paths.

Apply both in one call, the grant first: ``apply(journal, [GpfsGrant(...),
GpfsRemoteMount(...)])``. An operation's k-th change runs in round k, so the
grant (round 1) is made before the mount (round 2). Every step reads its fact
first: what exists already is recorded as found and never undone (a repeated
apply changes nothing), something of the same name that differs is refused
(it was not made by this run). The undo runs newest first: unmount, remove
the file system definition, deny, forget the clusters -- each only if it is
still there, and only what this run added.

Formats: the operations' syntax is the documented one (mmauth, mmremotecluster,
mmremotefs, mmmount, mmumount command references). Their ``show ... -Y``
field names are NOT confirmed: the references document ``-Y`` but show only
the text output (``Cluster name:``, ``Contact nodes:``, ``File system access:``;
``Local Name / Remote Name / Cluster name / Mount Point``). The parsers look
fields up by several plausible HEADER names and stop with a SpecError, before
anything changes, when none is there. Likewise unconfirmed: that ``show all``
with nothing defined, and ``mmlsmount all`` with no file system, fail with a
"no remote ..." / "No file systems ..." message (taken as empty).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import expect
from ..nodes import Node
from .gpfs import (
    check_name,
    cluster_fact,
    column,
    locked,
    mm,
    output,
    parse_mmlsmount_y,
    parse_y,
    short,
)
from .operation import UNKNOWN, Change, Fact, Operation

ACCESS = ("rw", "ro")
_PATH = re.compile(r"^/[A-Za-z0-9_.+/-]*\Z")


def check_path(what: str, path: str) -> str:
    if not isinstance(path, str) or not _PATH.match(path) or "/../" in f"{path}/":
        raise SpecError(f"{what} {path!r} is not an absolute path of plain characters",
                        "use /letters/digits_.-+ (no spaces, commas or colons)")
    return path


def device_name(device: str) -> str:
    """A file system device name without /dev/ (GPFS takes both spellings)."""
    return check_name("device", device.removeprefix("/dev/"))


# -- facts ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RemoteCluster:
    name: str
    contact_nodes: str


@dataclass(frozen=True)
class RemoteFs:
    device: str  # the local name
    remote_device: str
    cluster: str
    mount_point: str


@dataclass(frozen=True)
class Authorised:
    """A cluster ``mmauth`` knows, and the file systems granted to it (device -> rw/ro)."""

    cluster: str
    access: dict[str, str] = field(default_factory=dict)


def parse_mmremotecluster_y(text: str) -> dict[str, RemoteCluster]:
    records = [r for r in parse_y(text) if r.command == "mmremotecluster"]
    name = column(records, ("clusterName", "remoteClusterName"), "cluster name",
                  "mmremotecluster show all -Y")
    contacts = column(records, ("contactNodes", "contactNodeList"), "contact nodes",
                      "mmremotecluster show all -Y", required=False)
    return {r.fields[name]: RemoteCluster(r.fields[name], r.fields.get(contacts or "", ""))
            for r in records}


def parse_mmremotefs_y(text: str) -> dict[str, RemoteFs]:
    records = [r for r in parse_y(text) if r.command == "mmremotefs"]
    what = "mmremotefs show all -Y"
    local = column(records, ("localName", "localDevName", "deviceName", "localDevice"),
                   "local device name", what)
    remote = column(records, ("remoteName", "remoteDevName", "remoteDevice"),
                    "remote device name", what)
    cluster = column(records, ("clusterName", "remoteClusterName", "owningCluster"),
                     "cluster name", what)
    point = column(records, ("mountPoint", "defaultMountPoint"), "mount point", what)
    return {r.fields[local].removeprefix("/dev/"): RemoteFs(
        r.fields[local].removeprefix("/dev/"), r.fields[remote].removeprefix("/dev/"),
        r.fields[cluster], r.fields[point]) for r in records}


_GRANT = re.compile(r"(\S+?)\s*\(\s*(rw|ro)\b")  # the text form: "gpfs1 (rw, root allowed)"
_GRANT_ALL = re.compile(r"\(\s*all\s+(rw|ro)\s*\)")  # ... and "(all rw)"


def parse_mmauth_y(text: str) -> dict[str, Authorised]:
    """Cluster -> what it was granted. One record per (cluster, file system), or one per
    cluster with the text form's "DEVICE (rw, root allowed)" in its access field."""
    records = [r for r in parse_y(text) if r.command == "mmauth"]
    what = "mmauth show all -Y"
    name = column(records, ("clusterName", "remoteClusterName"), "cluster name", what)
    access = column(records, ("access", "accessType", "fileSystemAccess", "fsAccess"),
                    "file system access", what)
    device = column(records, ("fileSystem", "deviceName", "device", "fileSystemName"),
                    "file system", what, required=False)
    found: dict[str, Authorised] = {}
    for r in records:
        entry = found.setdefault(r.fields[name].removesuffix(" (this cluster)"),
                                 Authorised(r.fields[name].removesuffix(" (this cluster)")))
        text_access = r.fields[access]
        if device and r.fields.get(device):
            mode = text_access.strip().lower()[:2]
            if mode in ACCESS:
                entry.access[r.fields[device].removeprefix("/dev/")] = mode
            continue
        for dev, mode in _GRANT.findall(text_access):
            entry.access[dev.removeprefix("/dev/")] = mode
        for mode in _GRANT_ALL.findall(text_access):
            entry.access["all"] = mode
    return found


def _fact(node: Node, command: str, parse, nothing: str = "") -> Fact:
    return Fact(node, command, lambda res: parse(output(node, res, ok_if=nothing)))


def auth_fact(node: Node) -> Fact:
    return _fact(node, mm("mmauth", "show", "all", "-Y"), parse_mmauth_y)


def remote_clusters_fact(node: Node) -> Fact:
    return _fact(node, mm("mmremotecluster", "show", "all", "-Y"), parse_mmremotecluster_y,
                 nothing="no remote cluster")


def remote_fs_fact(node: Node) -> Fact:
    return _fact(node, mm("mmremotefs", "show", "all", "-Y"), parse_mmremotefs_y,
                 nothing="no remote file system")


def mounts_fact(node: Node) -> Fact:
    return _fact(node, mm("mmlsmount", "all", "-L", "-Y"), parse_mmlsmount_y,
                 nothing="no file systems")


# -- the owning cluster -------------------------------------------------------------------------

@dataclass
class GpfsGrant(Operation):
    """On the owning cluster (``node``: an admin node of it): let ``cluster`` in with its
    public key (``mmauth add``) and grant it ``device`` (``mmauth grant -a rw|ro``).

    Two changes, in this order. A cluster already authorised is kept as it
    is (its key is not replaced) and not deleted by the undo. A grant that
    exists with the same access is a no-op; with another access it is changed
    and the undo grants the old access back; a new grant is undone with
    ``mmauth deny``.
    """

    node: Node
    cluster: str  # the accessing cluster's name
    key_file: str  # its public key file (its /var/mmfs/ssl/id_rsa.pub), on ``node``
    device: str
    access: str = "rw"

    def check(self) -> None:
        check_name("cluster", self.cluster)
        check_path("the public key file", self.key_file)
        device_name(self.device)
        if self.access not in ACCESS:
            raise SpecError(f"GPFS access {self.access!r} is not rw or ro")

    def facts(self) -> dict[str, Fact]:
        return {"auth": auth_fact(self.node)}

    def diff(self, facts: dict) -> list[Change]:
        auth = facts["auth"]
        known = None if auth is UNKNOWN else auth.get(self.cluster)
        device = device_name(self.device)
        add = Change(self.node, "gpfs-auth", self.cluster,
                     UNKNOWN if auth is UNKNOWN else ("authorised" if known else None),
                     "authorised" if known else f"authorised with {self.key_file}")
        if known is None:
            add.command = locked(mm("mmauth", "add", self.cluster, "-k", self.key_file))
            add.undo = {"cluster": self.cluster}
        before = None if known is None else known.access.get(device, known.access.get("all"))
        grant = Change(self.node, "gpfs-grant", f"{self.cluster} {device}",
                       UNKNOWN if auth is UNKNOWN else before, self.access)
        if before != self.access:
            grant.command = locked(mm("mmauth", "grant", self.cluster, "-f", device, "-a",
                                      self.access))
            grant.undo = {"cluster": self.cluster, "device": device, "before": before}
        return [add, grant]


def _names(kind: str, data: dict, *fields: str) -> None:
    """The record's cluster and device names, as GPFS takes them (refused otherwise)."""
    for f in fields:
        undo_checks.text(kind, f, data.get(f), _GPFS_NAME)


_GPFS_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}\Z")


@undo_handler("gpfs-grant", gone_with_namespace=False)
def _undo_grant(node: Node, data: dict) -> None:
    _names("gpfs-grant", data, "cluster", "device")
    if data.get("before") not in (None, *ACCESS):
        raise undo_checks.refuse("gpfs-grant", "before is no access mode", data.get("before"))
    known = auth_fact(node).read().get(data["cluster"])
    if known is None:
        return  # the cluster (and so its grants) is gone already
    if data["before"] is None:
        command = locked(mm("mmauth", "deny", data["cluster"], "-f", data["device"]))
        if data["device"] in known.access:
            node.run(command, timeout=120)
    else:
        command = locked(mm("mmauth", "grant", data["cluster"], "-f", data["device"], "-a",
                            data["before"]))
        node.run(command, timeout=120)
    now = auth_fact(node).read().get(data["cluster"])
    expect(None if now is None else now.access.get(data["device"]),
           None if now is None else data["before"],
           f"GPFS access of {data['cluster']} to {data['device']}", command)


@undo_handler("gpfs-auth", gone_with_namespace=False)
def _undo_auth(node: Node, data: dict) -> None:
    _names("gpfs-auth", data, "cluster")
    command = locked(mm("mmauth", "delete", data["cluster"]))
    if data["cluster"] in auth_fact(node).read():
        node.run(command, timeout=120)
    expect(data["cluster"] in auth_fact(node).read(), False,
           f"GPFS authorisation of cluster {data['cluster']}", command)


# -- the accessing cluster ----------------------------------------------------------------------

@dataclass
class GpfsRemoteMount(Operation):
    """On the accessing cluster (``node``: an admin node of it): learn the owning ``cluster``
    (``mmremotecluster add -n CONTACTS -k KEY``), define its ``remote_device`` here as
    ``device`` at ``mount_point`` (``mmremotefs add -f -C -T -A no``) and mount it on
    ``nodes`` (``mmmount -N``; none: every node of this cluster).

    Three changes, in this order. A remote cluster already defined is used
    as it is. A remote file system already defined with the same remote
    device, cluster and mount point is used; one named ``device`` that
    differs is refused. Only the nodes that do not have it mounted are
    mounted, and the undo unmounts exactly those. ``-A no``: the daemon does
    not mount it by itself at its next start, so nothing comes back after
    the undo.
    """

    node: Node
    cluster: str  # the owning cluster's name
    contact_nodes: tuple[str, ...]
    key_file: str  # the owning cluster's public key file, on ``node``
    remote_device: str
    device: str
    mount_point: str
    nodes: tuple[str, ...] = ()

    def check(self) -> None:
        check_name("cluster", self.cluster)
        if not self.contact_nodes:
            raise SpecError("a remote GPFS cluster needs contact nodes",
                            "name a few nodes of the owning cluster (its quorum nodes)")
        for name in (*self.contact_nodes, *self.nodes):
            check_name("node", name)
        check_path("the public key file", self.key_file)
        check_path("the mount point", self.mount_point)
        device_name(self.remote_device)
        device_name(self.device)

    def facts(self) -> dict[str, Fact]:
        return {"cluster": cluster_fact(self.node), "remote": remote_clusters_fact(self.node),
                "fs": remote_fs_fact(self.node), "mounts": mounts_fact(self.node)}

    def diff(self, facts: dict) -> list[Change]:
        return [self._remote_cluster(facts["remote"]), self._remote_fs(facts["fs"]),
                self._mount(facts["cluster"], facts["mounts"])]

    def _remote_cluster(self, remote) -> Change:
        contacts = ",".join(self.contact_nodes)
        known = None if remote is UNKNOWN else remote.get(self.cluster)
        change = Change(self.node, "gpfs-remotecluster", self.cluster,
                        UNKNOWN if remote is UNKNOWN else (known and known.contact_nodes),
                        contacts)
        if known is None:
            change.command = locked(mm("mmremotecluster", "add", self.cluster, "-n", contacts,
                                       "-k", self.key_file))
            change.undo = {"cluster": self.cluster}
        else:
            change.after = change.before
        return change

    def _remote_fs(self, fs) -> Change:
        device, remote = device_name(self.device), device_name(self.remote_device)
        wanted = RemoteFs(device, remote, self.cluster, self.mount_point)
        known = None if fs is UNKNOWN else fs.get(device)
        if known is not None and known != wanted:
            raise SpecError(f"{self.node.name} already has a remote file system {device}: "
                            f"{known.remote_device} of {known.cluster} at {known.mount_point}",
                            "it was not made by this run: use another local device name, or "
                            "remove it yourself (mmumount; mmremotefs delete)")
        shown = f"{remote} of {self.cluster} at {self.mount_point}"
        change = Change(self.node, "gpfs-remotefs", device,
                        UNKNOWN if fs is UNKNOWN else (shown if known else None), shown)
        if known is None:
            change.command = locked(mm("mmremotefs", "add", device, "-f", remote, "-C",
                                       self.cluster, "-T", self.mount_point, "-A", "no"))
            change.undo = {"device": device, "remote_device": remote, "cluster": self.cluster}
        return change

    def _mount(self, cluster, mounts) -> Change:
        device = device_name(self.device)
        if self.nodes:
            wanted = {short(n): n for n in self.nodes}
        elif cluster is not UNKNOWN:
            wanted = {n.short_name: n.daemon_name for n in cluster.nodes}
        else:
            wanted = {}  # every node, names unknown in a dry run
        mounted = set() if mounts is UNKNOWN else set(mounts.get(device, ()))
        missing = sorted(name for key, name in wanted.items() if key not in mounted)
        target = f"{device} on {','.join(self.nodes) or 'every node'}"
        before = UNKNOWN if mounts is UNKNOWN else (",".join(sorted(mounted)) or None)
        change = Change(self.node, "gpfs-mount", target, before,
                        ",".join(sorted(short(n) for n in wanted.values())) or "every node")
        if missing or not wanted:
            scope = ["-N", ",".join(missing)] if missing else ["-a"]
            change.command = locked(mm("mmmount", device, *scope))
            change.undo = {"device": device, "nodes": missing}
        return change


@undo_handler("gpfs-mount", gone_with_namespace=False)
def _undo_mount(node: Node, data: dict) -> None:
    """Unmount where this run mounted (all nodes: ``-a``) and it is still mounted."""
    _names("gpfs-mount", data, "device")
    if not isinstance(data.get("nodes"), list):
        raise undo_checks.refuse("gpfs-mount", "nodes is not a list", data.get("nodes"))
    for n in data["nodes"]:
        undo_checks.text("gpfs-mount", "node", n, _GPFS_NAME)
    mounted = mounts_fact(node).read().get(data["device"], frozenset())
    nodes = [n for n in data["nodes"] if short(n) in mounted]
    if not mounted or (data["nodes"] and not nodes):
        return
    scope = ["-N", ",".join(nodes)] if data["nodes"] else ["-a"]
    command = locked(mm("mmumount", data["device"], *scope))
    node.run(command, timeout=120)
    now = mounts_fact(node).read().get(data["device"], frozenset())
    expect(sorted(n for n in (data["nodes"] or now) if short(n) in now), [],
           f"GPFS mount of {data['device']}", command)


@undo_handler("gpfs-remotefs", gone_with_namespace=False)
def _undo_remote_fs(node: Node, data: dict) -> None:
    _names("gpfs-remotefs", data, "device", "remote_device", "cluster")
    known = remote_fs_fact(node).read().get(data["device"])
    command = locked(mm("mmremotefs", "delete", data["device"]))
    if known and (known.remote_device, known.cluster) == (data["remote_device"], data["cluster"]):
        node.run(command, timeout=120)
        expect(data["device"] in remote_fs_fact(node).read(), False,
               f"GPFS remote file system {data['device']}", command)


@undo_handler("gpfs-remotecluster", gone_with_namespace=False)
def _undo_remote_cluster(node: Node, data: dict) -> None:
    _names("gpfs-remotecluster", data, "cluster")
    command = locked(mm("mmremotecluster", "delete", data["cluster"]))
    if data["cluster"] in remote_clusters_fact(node).read():
        node.run(command, timeout=120)
        expect(data["cluster"] in remote_clusters_fact(node).read(), False,
               f"GPFS remote cluster {data['cluster']}", command)
