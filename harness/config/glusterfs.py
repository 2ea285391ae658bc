"""GlusterFS -- the parallel file system in GPFS's role -- as recorded operations.

Study S2 compares NFS with a parallel file system over a long fat link;
GPFS needs IBM's licence and real clusters (:mod:`harness.config.gpfs`),
GlusterFS (Debian 12: 10.3) runs anywhere. Three operations, each applied
in its own :func:`~harness.config.operation.apply` call, in this order:

* :class:`GlusterDaemon` -- ``glusterd`` on a server: its state directories
  (``/var/lib/glusterd``, ``/var/log/glusterfs``, ``/run/gluster``) made
  writable (seeded tmpfs over a read-only one, as in the VM lab, whose root
  is the host's, read-only), then ``glusterd -N`` (in the foreground) started
  as a journalled process, ready once the CLI gets an answer. A glusterd
  already running is left as found. Unless ``geo_replication``, a stub is
  mounted over geo-replication's ``gsyncd`` first (see GSYNCD_STUB: glusterd
  ran it ~25 times per start, 40-90 s under TCG).
* :class:`GlusterVolume` -- ``gluster volume create NAME HOST:PATH... force``,
  its options (``volume set``), then ``volume start``. The undo stops the
  volume -- glusterd stops its brick processes (``glusterfsd``) -- then makes
  sure every brick process of *that volume* is gone, found by their pids in
  ``volume status NAME --xml`` and in the volume's pid files under
  ``/run/gluster/vols/NAME/`` (each checked to be a glusterfsd serving
  ``NAME``, never found by a name pattern), then deletes the volume and the
  brick directories it made. ``force`` because lab bricks sit on the root
  file system or right on a mount point, which glusterd otherwise refuses.
  A brick's file system needs ``user.*`` extended attributes: tmpfs before
  Linux 6.6 has none (the VM lab's 6.1: glusterfsd exits with "Extended
  attribute not supported" and ``volume start`` fails); ext4 and XFS have.
* :class:`GlusterMount` -- ``mount -t glusterfs SERVER:/VOLUME`` on a client
  (FUSE: ``fuse`` loaded first, the mountpoint made: never one that exists). The FUSE
  client (a ``glusterfs`` process started by ``mount.glusterfs``) ends with
  the ``umount``; the undo waits for exactly that process -- the one whose
  last argument is this mountpoint, found before unmounting -- and fails if
  it outlives the unmount.

The CLI runs with ``--mode=script``, which never asks (``volume stop``
would otherwise prompt "Do you want to continue? (y/n)"). Bricks must be on
the daemon's own machine (one server; peers -- ``gluster peer probe`` --
are not built); clients may be anywhere that reaches it.
"""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import HarnessError, SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import UndoLeft, settle
from ..nodes import Node, Result
from ..tools.registry import Tool
from .kmod import sections
from .mounts import (
    ClientMount,
    check_host,
    check_path,
    dir_probe,
    dir_state,
    require_tools,
    state_dir_change,
    tools_probe,
)
from .operation import UNKNOWN, Change, Fact, Operation

GLUSTERD = Tool("glusterd", "glusterd --version", "glusterfs-server")
GLUSTER = Tool("gluster", "gluster --version", "glusterfs-cli")
MOUNT_GLUSTERFS = Tool("mount.glusterfs", "glusterfs --version", "glusterfs-client")

STATE_DIRS = undo_checks.STATE_DIRS  # glusterd's folders, made when missing and undone
CLI = "gluster --mode=script"
_SERVER_HINT = "install GlusterFS's server: apt-get install glusterfs-server"
_CLIENT_HINT = ("install GlusterFS's FUSE client (apt-get install glusterfs-client) and use a "
                "kernel with fuse")
_VOLUME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}\Z")
_KEY = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,127}\Z")
_VALUE = re.compile(r"^[A-Za-z0-9_.:/,=+-]{1,255}\Z")
READY_S = 60  # glusterd answered its CLI after about 2 s here under TCG


def cli(*args: str) -> str:
    return f"{CLI} {shlex.join(args)}"


# -- the daemon ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class DaemonState:
    running: bool
    dirs: tuple[str, ...]  # dir_probe's word per STATE_DIRS
    gsyncd: str | None = None  # where geo-replication's gsyncd is installed


# glusterd runs gsyncd (geo-replication's Python program) at every start, about 25 times, to
# write geo-replication's configuration: 40-90 s of a start under TCG in the lab VM (the same
# start took 4.4 s without). It skips all of it when gsyncd answers `--version` with a line
# naming gsyncd and writes nothing: a stub that does so is mounted over it while glusterd
# starts (geo_replication=False), and unmounted by the undo.
GSYNCD_STUB = "/run/harness-gsyncd-stub"
_GSYNCD_PATHS = ("/usr/lib/x86_64-linux-gnu/glusterfs/gsyncd", "/usr/lib/aarch64-linux-gnu/"
                 "glusterfs/gsyncd", "/usr/libexec/glusterfs/gsyncd", "/usr/lib/glusterfs/gsyncd")
_STUB_TEXT = "#!/bin/sh\n[ \"$1\" = --version ] && echo 'gsyncd.py (harness stub)'\nexit 0\n"

_DAEMON_PROBE = "; ".join([
    "echo @gsyncd; for p in " + " ".join(_GSYNCD_PATHS) + "; do [ -f $p ] && echo $p; done",
    tools_probe("glusterd", "gluster"),
    f"echo @cli; if {CLI} pool list >/dev/null 2>&1; then echo running; fi",
    *(dir_probe(f"d{i}", path) for i, path in enumerate(STATE_DIRS)),
])


def parse_daemon_state(node: Node, res: Result) -> DaemonState:
    parts = sections(res.stdout)
    require_tools(node, parts, ("glusterd", "gluster"), _SERVER_HINT)
    running = "running" in (line.strip() for line in parts.get("cli", []))
    gsyncd = next((line.strip() for line in parts.get("gsyncd", []) if line.strip()), None)
    return DaemonState(running, tuple(dir_state(parts, f"d{i}") for i in range(len(STATE_DIRS))),
                       gsyncd)


GLUSTERD_READY = (f"t=$(($(date +%s) + {READY_S})); until {CLI} pool list >/dev/null 2>&1; do "
                  "[ $(date +%s) -lt $t ] || { echo \"glusterd did not answer its CLI within "
                  f"{READY_S} s\" >&2; exit 1; }}; sleep 0.3; done")


@dataclass
class GlusterDaemon(Operation):
    """``glusterd`` running on ``node`` (see the module's doc); ``geo_replication`` False
    starts it with geo-replication's set-up skipped (see GSYNCD_STUB)."""

    node: Node
    geo_replication: bool = False

    def facts(self) -> dict[str, Fact]:
        return {"daemon": Fact(self.node, _DAEMON_PROBE,
                               lambda res: parse_daemon_state(self.node, res))}

    def diff(self, facts: dict) -> list[Change]:
        state = facts["daemon"]
        if state is not UNKNOWN and state.running:
            return [Change(self.node, "glusterd", "glusterd", "running", "running")]
        known = state is not UNKNOWN
        changes = [state_dir_change(self.node, path, state.dirs[i] if known else UNKNOWN)
                   for i, path in enumerate(STATE_DIRS)]
        gsyncd = state.gsyncd if known else _GSYNCD_PATHS[0]
        if not self.geo_replication and gsyncd:
            stub, target = shlex.quote(GSYNCD_STUB), shlex.quote(gsyncd)
            changes.append(Change(
                self.node, "gsyncd-stub", gsyncd, "geo-replication's gsyncd",
                "a stub while glusterd runs (no geo-replication set-up)",
                command=(f"set -e; printf %s {shlex.quote(_STUB_TEXT)} > {stub}; "
                         f"chmod 755 {stub}; mount --bind {stub} {target}"),
                undo={"path": gsyncd}))
        changes.append(Change(self.node, "glusterd", "glusterd", None if known else UNKNOWN,
                              "running (glusterd -N)", command="exec glusterd -N",
                              background=True, ready=GLUSTERD_READY))
        return changes


@undo_handler("gsyncd-stub", gone_with_namespace=False)
def _remove_gsyncd_stub(node: Node, data: dict) -> None:
    """Unmount the stub from gsyncd (while it is mounted there) and delete it."""
    if data.get("path") not in _GSYNCD_PATHS:
        raise undo_checks.refuse("gsyncd-stub", "path is not geo-replication's gsyncd",
                                 data.get("path"))
    path, stub = shlex.quote(data["path"]), shlex.quote(GSYNCD_STUB)
    mounted = f"awk -v p={path} '$2 == p {{found = 1}} END {{exit !found}}' /proc/mounts"
    settle(node, act=f"if {mounted}; then umount {path}; fi; rm -f {stub}",
           look=f"! {mounted} && [ ! -e {stub} ]", what=f"the gsyncd stub on {data['path']}",
           finish=f"umount {path}; rm -f {stub}", wait=5.0, timeout=60)


# -- volumes -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class VolumeInfo:
    name: str
    status: str  # "Created", "Started", "Stopped"
    bricks: tuple[str, ...]  # "HOST:PATH"
    options: dict[str, str] = field(default_factory=dict, compare=False)


def _cli_xml(text: str) -> ET.Element:
    start = text.find("<")
    try:
        return ET.fromstring(text[start:]) if start >= 0 else ET.Element("none")
    except ET.ParseError:
        return ET.Element("none")


def parse_volume_info(text: str) -> VolumeInfo | None:
    """``gluster volume info NAME --xml``: the volume, or None if it does not exist.

    SpecError when the answer is neither (glusterd not reachable, not XML).
    """
    root = _cli_xml(text)
    ret = root.findtext("opRet")
    if ret is None:
        raise SpecError(f"gluster's answer is not its XML: {text.strip()[-300:]!r}",
                        "is glusterd running? apply GlusterDaemon on this node first")
    if ret != "0":
        err = root.findtext("opErrstr") or ""
        if "does not exist" in err:
            return None
        raise SpecError(f"gluster volume info failed: {err or text.strip()[-300:]}",
                        "is glusterd running? apply GlusterDaemon on this node first")
    vol = root.find("volInfo/volumes/volume")
    if vol is None:
        return None
    bricks = tuple((b.findtext("name") or (b.text or "")).strip()
                   for b in vol.findall("bricks/brick"))
    options = {o.findtext("name") or "": o.findtext("value") or ""
               for o in vol.findall("options/option")}
    return VolumeInfo(vol.findtext("name") or "", vol.findtext("statusStr") or "", bricks,
                      options)


def parse_status_pids(text: str) -> tuple[int, ...]:
    """Brick process pids in ``gluster volume status NAME --xml`` (online bricks only)."""
    root = _cli_xml(text)
    pids = []
    for node in root.iter("node"):
        pid = (node.findtext("pid") or "").strip()
        if pid.isdigit() and int(pid) > 0 and node.findtext("path", "").startswith("/"):
            pids.append(int(pid))
    return tuple(pids)


@dataclass
class GlusterVolume(Operation):
    """Volume ``name`` of ``bricks`` (``(host, path)`` on ``node``'s own addresses), with
    ``options`` (``volume set`` key -> value), created and started on ``node``.

    A brick's path must not exist yet (glusterd makes it; the undo removes it);
    its parent must. The same volume already started is as asked; any other
    volume of that name is refused. Apply :class:`GlusterDaemon` first.
    """

    node: Node
    name: str
    bricks: Sequence[tuple[str, str]]
    options: Mapping[str, str] = field(default_factory=dict)

    def check(self) -> None:
        if not isinstance(self.name, str) or not _VOLUME.match(self.name):
            raise SpecError(f"gluster volume name {self.name!r} is not valid",
                            "use 1-64 letters, digits, '_' and '-'")
        if not self.bricks:
            raise SpecError(f"gluster volume {self.name} has no bricks", "give (host, path) pairs")
        for brick in self.bricks:
            if not (isinstance(brick, (tuple, list)) and len(brick) == 2):
                raise SpecError(f"brick {brick!r} is not a (host, path) pair")
            check_host("brick host", brick[0])
            check_path("brick path", brick[1])
        if len(set(self.specs)) != len(self.specs):
            raise SpecError(f"gluster volume {self.name} names a brick twice", "drop the repeat")
        for key, value in dict(self.options).items():
            if not isinstance(key, str) or not _KEY.match(key) or \
                    not isinstance(value, str) or not _VALUE.match(value):
                raise SpecError(f"gluster volume option {key!r}={value!r} is not valid",
                                "keys like performance.cache-size, values without spaces")

    @property
    def specs(self) -> list[str]:
        return [f"{host}:{path}" for host, path in self.bricks]

    def facts(self) -> dict[str, Fact]:
        def parse(res: Result) -> dict:
            parts = sections(res.stdout)
            return {"volume": parse_volume_info("\n".join(parts.get("info", []))),
                    "addresses": {w.split("/")[0] for line in parts.get("addresses", [])
                                  for w in line.split()[3:4]},
                    "paths": [dir_state(parts, f"b{i}") for i in range(len(self.bricks))]}

        probe = "; ".join([f"echo @info; {cli('volume', 'info', self.name, '--xml')} 2>&1",
                           "echo @addresses; ip -o addr show",
                           *(dir_probe(f"b{i}", path)
                             for i, (_h, path) in enumerate(self.bricks))])
        return {"volume": Fact(self.node, probe, parse)}

    def diff(self, facts: dict) -> list[Change]:
        fact = facts["volume"]
        target = f"volume {self.name}"
        after = f"started: {' '.join(self.specs)}" + "".join(
            f", {k}={v}" for k, v in sorted(dict(self.options).items()))
        created: list[str] = [path for _h, path in self.bricks]
        if fact is not UNKNOWN:
            found = fact["volume"]
            if found is not None:
                if list(found.bricks) == self.specs and found.status == "Started" and all(
                        found.options.get(k) == v for k, v in dict(self.options).items()):
                    return [Change(self.node, "gluster-volume", target, after, after)]
                raise SpecError(f"{self.node.name} already has gluster volume {self.name} "
                                f"({found.status}: {' '.join(found.bricks)})",
                                "it was not made by this run: choose another name, or remove "
                                f"it yourself ({CLI} volume stop/delete {self.name})")
            for (host, path), word in zip(self.bricks, fact["paths"]):
                if host not in fact["addresses"]:
                    raise SpecError(f"brick host {host} is not an address of {self.node.name} "
                                    f"({', '.join(sorted(fact['addresses']))})",
                                    "bricks must be on the daemon's own machine (peers are not "
                                    "built): use one of its addresses")
                if word != "missing":
                    raise SpecError(f"brick path {host}:{path} cannot be made: "
                                    + ("it exists already" if word in ("rw", "ro", "notdir")
                                       else "its parent directory is missing or read-only"),
                                    "give a new path in an existing, writable directory "
                                    "(glusterd creates the brick directory)")
        create = " && ".join([cli("volume", "create", self.name, *self.specs, "force"),
                              *(cli("volume", "set", self.name, k, v)
                                for k, v in dict(self.options).items())])
        return [Change(self.node, "gluster-volume", target, None, f"created: {after}",
                       command=create, undo_kind="gluster-volume",
                       undo={"name": self.name, "bricks": created}),
                Change(self.node, "gluster-volume-start", target, "created", "started",
                       command=cli("volume", "start", self.name),
                       undo={"name": self.name})]


def _is_ours(volume: str) -> str:
    """Shell test of pid $p: a glusterfsd serving ``volume`` (--volfile-id VOLUME.HOST.PATH)."""
    return (f"tr '\\0' '\\n' < /proc/$p/cmdline 2>/dev/null | "
            f"grep -qx -e {shlex.quote(volume)}'\\..*' && "
            "[ \"$(tr '\\0' '\\n' < /proc/$p/cmdline | head -n1 | sed 's|.*/||')\" = glusterfsd ]")


@undo_handler("gluster-volume-start", gone_with_namespace=False)
def _stop_volume(node: Node, data: dict) -> None:
    """Stop the volume, then end any brick process of it still running (by its pid)."""
    name = undo_checks.text("gluster-volume-start", "name", data.get("name"), _VOLUME)
    rundir = shlex.quote(f"/run/gluster/vols/{name}")
    status = cli("volume", "status", name, "--xml")
    pids = parse_status_pids(node.run(status, check=False, timeout=120).stdout)
    script = (f"pids='{' '.join(map(str, pids))}'; for f in {rundir}/*.pid; do "
              "[ -f \"$f\" ] && pids=\"$pids $(cat \"$f\")\"; done; "
              f"{cli('volume', 'stop', name)} >/dev/null 2>&1; "
              "for p in $pids; do i=0; while [ -d /proc/$p ] && [ $i -lt 20 ]; do "
              f"{_is_ours(name)} || break; sleep 0.25; i=$((i + 1)); done; "
              f"if [ -d /proc/$p ] && {_is_ours(name)}; then kill -KILL $p; "
              "echo \"brick process $p outlived volume stop: killed\" >&2; i=0; "
              f"while [ -d /proc/$p ] && {_is_ours(name)} && [ $i -lt 20 ]; do sleep 0.1; "
              "i=$((i + 1)); done; "
              f"if [ -d /proc/$p ] && {_is_ours(name)}; then left=\"$left $p\"; fi; fi; done; "
              "[ -z \"$left\" ] || { echo \"brick process(es)$left still running\" >&2; exit 1; }")
    res = node.run(script, check=False, timeout=120)
    if not res.ok:
        raise UndoLeft(f"brick processes of gluster volume {name} on {node.name}",
                       " ".join(res.stderr.split())[-300:], f"{cli('volume', 'stop', name)}")


@undo_handler("gluster-volume", gone_with_namespace=False)
def _delete_volume(node: Node, data: dict) -> None:
    """Delete the volume (if glusterd still has it) and the brick directories it made.

    A brick path is removed only if it is below the folders the harness makes things in
    (:func:`harness.journal.undo_checks.under_roots`), no symlink, ours, and holds the
    ``.glusterfs`` folder glusterd makes in every brick: a record naming any other
    folder is refused before anything changes."""
    name = undo_checks.text("gluster-volume", "name", data.get("name"), _VOLUME)
    bricks = data.get("bricks")
    if not isinstance(bricks, list):
        raise undo_checks.refuse("gluster-volume", "bricks is not a list", bricks)
    bricks = [undo_checks.under_roots("gluster-volume", b, "brick") for b in bricks]
    info = node.run(cli("volume", "info", name, "--xml"), check=False, timeout=120)
    try:
        found = parse_volume_info(info.stdout)
    except SpecError as exc:
        raise HarnessError(f"{node.name}: cannot delete gluster volume {name}: {exc.message}",
                           "start glusterd again, then `harness lab clean`") from None
    if found is not None:
        node.run(cli("volume", "delete", name), timeout=120)
    for path in bricks:
        res = node.run(undo_checks.guarded_remove(path, marker=".glusterfs"), check=False,
                       timeout=120)
        if not res.ok:
            raise HarnessError(f"{node.name}: brick {path} of gluster volume {name} not "
                               f"removed: {res.stderr.strip()[-300:]}",
                               "look at it; remove it by hand if it is the run's")


# -- the client ---------------------------------------------------------------------------------

@dataclass
class GlusterMount(ClientMount):
    """Volume ``volume`` of ``server`` mounted on ``mountpoint`` of ``node`` (FUSE).

    ``options`` are mount.glusterfs options (``log-level=WARNING``...).
    """

    node: Node
    server: str
    volume: str
    mountpoint: str
    options: Sequence[str] = ()

    fstype, proc_fstype = "glusterfs", "fuse.glusterfs"
    kind, program, hint = "glusterfs-mount", "mount.glusterfs", _CLIENT_HINT
    modules = ("fuse",)
    unmount_kind = "glusterfs-unmount"

    def check(self) -> None:
        check_host("gluster server", self.server)
        if not isinstance(self.volume, str) or not _VOLUME.match(self.volume):
            raise SpecError(f"gluster volume name {self.volume!r} is not valid",
                            "use 1-64 letters, digits, '_' and '-'")
        super().check()

    @property
    def source(self) -> str:
        return f"{self.server}:/{self.volume}"


def fuse_client_pids_script(mountpoint: str) -> str:
    """Shell: pids of glusterfs processes whose last argument is ``mountpoint``."""
    m = shlex.quote(mountpoint)
    return ("for d in /proc/[0-9]*; do p=${d#/proc/}; "
            "set -- $(tr '\\0' ' ' < $d/cmdline 2>/dev/null); [ $# -gt 0 ] || continue; "
            "case ${1##*/} in glusterfs) ;; *) continue ;; esac; "
            f"eval last=\\${{$#}}; [ \"$last\" = {m} ] && echo $p; done")


@undo_handler("glusterfs-unmount", gone_with_namespace=False)
def _unmount_glusterfs(node: Node, data: dict) -> None:
    """Unmount, then wait for the FUSE client that served this mountpoint to exit."""
    from .mounts import BUSY_WAIT, not_mounted, unmount_record, unmount_script

    path, fstype, source = unmount_record("glusterfs-unmount", data)
    pids = [p for p in node.run(fuse_client_pids_script(path), check=False,
                                timeout=60).stdout.split() if p.isdigit()]
    settle(node, act=unmount_script(path, fstype, source), look=not_mounted(path, fstype, source),
           what=f"glusterfs mount of {source} on {path} ({node.name})",
           finish=f"umount {shlex.quote(path)}", wait=BUSY_WAIT, timeout=120)
    if pids:
        left = node.run(f"for p in {' '.join(pids)}; do i=0; while [ -d /proc/$p ] && "
                        "[ $i -lt 40 ]; do sleep 0.25; i=$((i + 1)); done; "
                        "[ -d /proc/$p ] && echo $p; done; exit 0", timeout=60).stdout.split()
        if left:
            raise HarnessError(f"{node.name}: the glusterfs FUSE client {left} of {path} "
                                 "outlived its umount by 10 s",
                                 f"see `ps -p {left[0]} -o args`; stop it yourself")
