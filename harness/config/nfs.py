"""The kernel NFS server and client, NFSv4 only, as recorded operations.

Study S2's NFS (the paper's baseline beside GPFS). Three operations
(fact -> diff -> journal -> apply, :mod:`harness.config.operation`), applied
in this order -- each in its own :func:`~harness.config.operation.apply`
call, because an export needs the running server's writable state and a
mount needs the export:

* :class:`NfsServer` -- the kernel server on a machine: ``/var/lib/nfs``
  writable (a seeded tmpfs over it in the VM lab, whose root is the host's,
  read-only), the ``nfsd`` module loaded, the nfsd control file system on
  ``/proc/fs/nfsd``, ``rpc.mountd`` running as a journalled process, then
  ``rpc.nfsd -N 3 THREADS``. A server already running (threads > 0, a real
  machine's) is left exactly as found: nothing is changed or undone.
* :class:`NfsExport` -- ``exportfs -o OPTIONS CLIENT:PATH`` (the kernel's
  export table through ``/var/lib/nfs/etab``; ``/etc/exports`` is never
  edited); undo ``exportfs -u CLIENT:PATH``. NFSv4 clients see a pseudo file
  system that rpc.mountd builds from ``/`` down to each export; where ``/``
  cannot be exported (the VM lab's root is 9p: mountd logs "Cannot export /,
  possibly unsupported filesystem or fsid= required" and the mount fails
  with "No such file or directory") the export must carry ``fsid=0`` -- it is
  then the pseudo root itself -- and clients mount ``SERVER:/``.
* :class:`NfsMount` -- ``mount -t nfs4`` on a client (``nfsv4`` loaded first,
  the mountpoint made, never one that exists); undo ``umount``, then ``rmdir`` and the
  module unload where this run made them.

Why NFSv4 only: v4 needs neither rpcbind nor rpc.statd/lockd (locking,
mounting and state are in the one protocol on port 2049), so a lab machine
runs no portmapper. The kernel registers NFSv4 with rpcbind only
optionally, which is why ``rpc.nfsd`` starts without one once v3 is off
(``-N 3``; v2 is off by default in nfs-utils 2.6); with v3 on it fails for
want of rpcbind. ``rpc.mountd -N 2 -N 3`` serves no MOUNT protocol and
registers nothing with rpcbind, but is still needed: nfsd asks it (through
the ``/proc/net/rpc/*/channel`` caches) whether a client may see an export.
It runs in the foreground (``-F``) under the journal, which stops exactly
that process.

The NFSv4 grace period: a server that starts refuses new OPENs for a lease
time (90 s by default) so that clients of its previous life can reclaim
their state. A server this run started has no previous clients (fresh state
in the lab), so the grace is ended at once (``/proc/fs/nfsd/v4_end_grace``,
kernel >= 4.20); ``end_grace=False`` keeps it (a real machine whose clients
may come back).

The nfsd state is per network namespace; this operation serves from a
machine's initial namespace and refuses a namespace node.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import expect, settle
from ..nodes import Node, Result
from ..tools.registry import Tool
from .kmod import ModuleState, module_change, module_probe, parse_module, sections
from .mounts import (
    MOUNTS_PROBE,
    ClientMount,
    Mount,
    check_host,
    check_options,
    check_path,
    dir_probe,
    dir_state,
    mount_change,
    mounted_at,
    parse_mounts,
    require_tools,
    state_dir_change,
    tools_probe,
)
from .operation import UNKNOWN, Change, Fact, Operation

# rpc.nfsd and exportfs print no version of their own: the package's
RPC_NFSD = Tool("rpc.nfsd", "dpkg-query -W -f='${Version}\\n' nfs-kernel-server",
                "nfs-kernel-server")
RPC_MOUNTD = Tool("rpc.mountd", "rpc.mountd --version", "nfs-kernel-server")
EXPORTFS = Tool("exportfs", "dpkg-query -W -f='${Version}\\n' nfs-kernel-server",
                "nfs-kernel-server")
MOUNT_NFS4 = Tool("mount.nfs4", "mount.nfs4 -V", "nfs-common")

STATE_DIR = "/var/lib/nfs"
# Root file systems nfsd cannot export (no export operations, or no UUID for a file handle):
# the VM lab's host root over 9p, containers' overlay/tmpfs roots.
UNEXPORTABLE_ROOTS = frozenset({"9p", "virtiofs", "overlay", "tmpfs", "ramfs", "rootfs"})
NFSD_FS = "/proc/fs/nfsd"
MAX_THREADS = 1024
_SERVER_HINT = ("install the server's user space (apt-get install nfs-kernel-server) and use a "
                "kernel with nfsd (Debian's stock kernel: run the study in the VM lab)")
CLIENT_HINT = ("install the client (apt-get install nfs-common) and use a kernel with nfsv4 "
                "(Debian's stock kernel: run the study in the VM lab)")
# exports(5) client: a host, an address, address/prefix, a wildcard pattern, @netgroup or *
_CLIENT = re.compile(r"^(\*|@?[A-Za-z0-9*?][A-Za-z0-9*?.:_-]{0,252}(/[0-9.]{1,15})?)\Z")


def _machine_only(node: Node, what: str) -> None:
    if node.netns_path is not None:
        raise SpecError(f"{node.name} is a network namespace: {what} runs in a machine's "
                        "initial namespace here (nfsd's state is per namespace)",
                        "run the NFS server on a machine (a VM of the lab, or an inventory "
                        "host); clients may be namespaces")


# -- the server -------------------------------------------------------------------------------

@dataclass(frozen=True)
class NfsServerState:
    threads: int  # 0: the server is stopped (or its control file system not mounted)
    nfsd_fs: bool  # the nfsd file system is mounted on /proc/fs/nfsd
    mountd: bool  # an rpc.mountd runs
    state_dir: str  # dir_probe's word for /var/lib/nfs
    module: ModuleState | None  # None when the server runs already (not needed)
    mounts: tuple[Mount, ...]


_SERVER_PROBE = "; ".join([
    tools_probe("rpc.nfsd", "rpc.mountd", "exportfs"),
    f"echo @threads; cat {NFSD_FS}/threads 2>/dev/null",
    "echo @mountd; pidof rpc.mountd 2>/dev/null",
    dir_probe("state", STATE_DIR),
    MOUNTS_PROBE,
    module_probe("nfsd"),
])


def parse_server_state(node: Node, res: Result) -> NfsServerState:
    parts = sections(res.stdout)
    require_tools(node, parts, ("rpc.nfsd", "rpc.mountd", "exportfs"), _SERVER_HINT)
    words = "".join(parts.get("threads", [])).split()
    threads = int(words[0]) if words and words[0].isdigit() else 0
    mounts = parse_mounts(parts.get("mounts", []))
    nfsd_fs = any(m.target == NFSD_FS and m.fstype == "nfsd" for m in mounts)
    mountd = bool("".join(parts.get("mountd", [])).split())
    module = None if threads else parse_module(node, "nfsd", parts, _SERVER_HINT)
    return NfsServerState(threads, nfsd_fs, mountd, dir_state(parts, "state"), module, mounts)


def server_fact(node: Node) -> Fact:
    return Fact(node, _SERVER_PROBE, lambda res: parse_server_state(node, res))


# Waits (up to 20 s) until an rpc.mountd holds the nfsd export cache's channel open: from
# then on nfsd's questions about exports are answered.
MOUNTD_READY = ("i=0; while [ $i -lt 100 ]; do for p in $(pidof rpc.mountd); do "
                "ls -l /proc/$p/fd 2>/dev/null | grep -q nfsd.export && exit 0; done; "
                "i=$((i + 1)); sleep 0.2; done; echo 'rpc.mountd did not open the nfsd "
                "caches within 20 s' >&2; exit 1")


def nfsd_command(threads: int, end_grace: bool) -> str:
    cmd = shlex.join(["rpc.nfsd", "-N", "3", str(threads)])
    if end_grace:
        cmd += f" && if [ -e {NFSD_FS}/v4_end_grace ]; then echo Y > {NFSD_FS}/v4_end_grace; fi"
    return cmd


@dataclass
class NfsServer(Operation):
    """The kernel NFS server (NFSv4 only) running on machine ``node`` with ``threads``
    nfsd threads; see the module's doc for what is changed and why."""

    node: Node
    threads: int = 8
    end_grace: bool = True

    def check(self) -> None:
        if not isinstance(self.threads, int) or isinstance(self.threads, bool) or \
                not 1 <= self.threads <= MAX_THREADS:
            raise SpecError(f"nfsd threads {self.threads!r} is not in 1..{MAX_THREADS}",
                            "8 is nfs-utils' default; one per client stream is plenty")
        _machine_only(self.node, "the NFS server")

    def facts(self) -> dict[str, Fact]:
        return {"server": server_fact(self.node)}

    def diff(self, facts: dict) -> list[Change]:
        state = facts["server"]
        after = f"{self.threads} threads, NFSv4 only"
        if state is not UNKNOWN and state.threads:
            running = f"running ({state.threads} threads)"
            return [Change(self.node, "nfs-server", "nfsd", running, running)]
        known = state is not UNKNOWN
        changes = [state_dir_change(self.node, STATE_DIR, state.state_dir if known else UNKNOWN),
                   module_change(self.node, "nfsd", state.module if known else UNKNOWN),
                   mount_change(self.node, "mount", NFSD_FS, state.mounts if known else UNKNOWN,
                                "nfsd", "nfsd", shlex.join(["mount", "-t", "nfsd", "nfsd",
                                                            NFSD_FS]),
                                "nfsd control file system")]
        mountd = Change(self.node, "nfs-mountd", "rpc.mountd", "running", "running")
        if not (known and state.mountd):
            mountd.before = None if known else UNKNOWN
            mountd.after = "running (-F -N 2 -N 3: NFSv4 only, no rpcbind)"
            mountd.command = "exec rpc.mountd -F -N 2 -N 3"
            mountd.background = True
            mountd.ready = MOUNTD_READY
        threads = Change(self.node, "nfs-server", "nfsd", "stopped" if known else UNKNOWN, after,
                         command=nfsd_command(self.threads, self.end_grace),
                         undo_kind="nfsd-threads", undo={})
        return [*changes, mountd, threads]


@undo_handler("nfsd-threads", gone_with_namespace=False)
def _stop_nfsd(node: Node, data: dict) -> None:
    """``rpc.nfsd 0``: stop every nfsd thread (this run started the server from none)."""
    threads = f"{NFSD_FS}/threads"
    settle(node, act=f"if [ -e {threads} ] && [ \"$(cat {threads})\" != 0 ]; then rpc.nfsd 0; fi",
           look=f"[ ! -e {threads} ] || [ \"$(cat {threads})\" = 0 ] || {{ cat {threads}; false; }}",
           what=f"nfsd threads on {node.name}", finish="rpc.nfsd 0", wait=5.0, timeout=120)


# -- exports ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Export:
    path: str
    client: str
    options: tuple[str, ...]


def parse_exportfs_v(text: str) -> tuple[Export, ...]:
    """``exportfs -v``: ``PATH<tab>CLIENT(OPTIONS)``; a long path puts the client on the
    next, indented line (nfs-utils 2.6)."""
    exports = []
    path = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            head = line.split(None, 1)
            path, rest = head[0], (head[1].strip() if len(head) > 1 else "")
        else:
            rest = line.strip()
        if path is None or not rest:
            continue
        match = re.fullmatch(r"(\S+?)\((.*)\)", rest)
        if match:
            exports.append(Export(path, match.group(1),
                                  tuple(o for o in match.group(2).split(",") if o)))
    return tuple(exports)


@dataclass
class NfsExport(Operation):
    """``path`` on server ``node`` exported to ``client`` with ``options`` (exports(5)).

    An export of the same path to the same client with these options (among
    the defaults ``exportfs -v`` lists) is as asked; with other options it is
    refused (not this run's). Apply :class:`NfsServer` first: it makes
    ``/var/lib/nfs`` writable, which ``exportfs`` needs. A tmpfs (or any file
    system without a UUID) needs an ``fsid=N`` option.
    """

    node: Node
    path: str
    client: str
    options: Sequence[str] = ("rw", "sync", "no_subtree_check", "no_root_squash")

    def check(self) -> None:
        check_path("export path", self.path)
        if not isinstance(self.client, str) or not _CLIENT.match(self.client):
            raise SpecError(f"NFS client {self.client!r} is not valid",
                            "give an address, address/prefix, host name, wildcard or *")
        check_options("export", self.options)

    @property
    def spec(self) -> str:
        return f"{self.client}:{self.path}"

    def facts(self) -> dict[str, Fact]:
        def parse(res: Result) -> dict:
            parts = sections(res.stdout)
            require_tools(self.node, parts, ("exportfs",), _SERVER_HINT)
            return {"exports": parse_exportfs_v("\n".join(parts.get("exports", []))),
                    "path": dir_state(parts, "path"), "state": dir_state(parts, "state"),
                    "mounts": parse_mounts(parts.get("mounts", []))}

        probe = "; ".join([tools_probe("exportfs"), dir_probe("path", self.path),
                           dir_probe("state", STATE_DIR), "echo @exports; exportfs -v 2>&1",
                           MOUNTS_PROBE])
        return {"export": Fact(self.node, probe, parse)}

    def diff(self, facts: dict) -> list[Change]:
        options = check_options("export", self.options)
        after = ",".join(options)
        fact = facts["export"]
        change = Change(self.node, "nfs-export", self.spec, None, after)
        if fact is not UNKNOWN:
            if fact["path"] not in ("rw", "ro"):
                raise SpecError(f"{self.node.name}: cannot export {self.path}: it is not a "
                                "directory", "create (or mount) it before exporting it")
            root = mounted_at(fact["mounts"], "/")
            if root is not None and root.fstype in UNEXPORTABLE_ROOTS and \
                    not {"fsid=0", "fsid=root"} & set(options):
                raise SpecError(f"{self.node.name}'s root file system is {root.fstype}, which "
                                "nfsd cannot export, so NFSv4's pseudo root (/ and the "
                                f"directories above {self.path}) cannot be built",
                                "add fsid=0 to this export's options: it becomes the pseudo "
                                "root itself, and clients mount SERVER:/ (NfsMount "
                                "export_path='/')")
            if fact["state"] != "rw":
                raise SpecError(f"{self.node.name}: {STATE_DIR} is not writable, so exportfs "
                                "cannot record the export",
                                "apply NfsServer on this node first (it makes it writable)")
            found = next((e for e in fact["exports"]
                          if (e.path, e.client) == (self.path, self.client)), None)
            if found is not None:
                if set(options) <= set(found.options):
                    change.before = after
                    return [change]
                raise SpecError(f"{self.node.name} already exports {self.spec} with "
                                f"{','.join(found.options)}",
                                "it was not exported by this run: ask for the same options, "
                                f"or remove it yourself (exportfs -u {self.spec})")
        change.command = shlex.join(["exportfs", "-o", after, self.spec])
        change.undo = {"spec": self.spec}
        return [change]


@undo_handler("nfs-export", gone_with_namespace=False)
def _unexport(node: Node, data: dict) -> None:
    """``exportfs -u``, if the export is still there (a stopped server may have taken it)."""
    spec = data.get("spec")
    if not isinstance(spec, str) or ":" not in spec:
        raise undo_checks.refuse("nfs-export", "spec is not CLIENT:PATH", spec)
    client, _, path = spec.partition(":")
    undo_checks.text("nfs-export", "client", client, _CLIENT)
    undo_checks.clean_path("nfs-export", path)
    command = shlex.join(["exportfs", "-u", spec])

    def listed() -> bool:
        found = parse_exportfs_v(node.run("exportfs -v", check=False, timeout=60).stdout)
        return any((e.path, e.client) == (path, client) for e in found)

    tried = node.run(command, check=False, timeout=60) if listed() else None
    expect(listed(), False, f"NFS export {spec} on {node.name}", command, tried)


# -- the client -------------------------------------------------------------------------------

@dataclass
class NfsMount(ClientMount):
    """``server:export_path`` mounted on ``mountpoint`` of ``node`` over NFSv4.

    ``options`` are mount.nfs options (``vers=4.2``, ``rsize=1048576``,
    ``proto=tcp``...; ``nfsvers`` 2 or 3 are refused: v4 only). The mountpoint
    is made (one that exists already is refused: see :mod:`harness.config.mounts`);
    the same NFS mount there already is as asked.
    """

    node: Node
    server: str
    export_path: str
    mountpoint: str
    options: Sequence[str] = ("vers=4.2",)

    fstype = proc_fstype = "nfs4"
    kind, program, hint = "nfs-mount", "mount.nfs4", CLIENT_HINT
    # the client also loads rpcsec_gss_krb5 at its first mount (to read the server's
    # security flavours): loaded here first, so that the undo unloads it again
    modules = ("nfsv4", "rpcsec_gss_krb5")

    def check(self) -> None:
        check_host("NFS server", self.server)
        check_path("export path", self.export_path, root=True)
        super().check()
        old = [o for o in self.options if re.match(r"^(nfs)?vers=[23](\.|$)", o)]
        if old:
            raise SpecError(f"NFS mount options {old} ask for NFSv2/v3",
                            "this harness serves NFSv4 only: use vers=4.0, 4.1 or 4.2")

    @property
    def source(self) -> str:
        host = f"[{self.server}]" if ":" in self.server else self.server
        return f"{host}:{self.export_path}"
