"""IBM Storage Scale (GPFS) on real clusters: is it there, its ``-Y`` output, ``mmchconfig``.

Only real cluster nodes have GPFS (no lab, no VM): everything here was built
and unit-tested against the documented output formats, never run against a
real cluster (see docs/how-to/file-systems.md, "GPFS operations (real clusters only)").

What the parsers rely on:

* The ``-Y`` format ("Displays the command output in a parseable format with
  a colon (:) as a field delimiter. Each column is described by a header",
  IBM Storage Scale command reference, e.g. ``mmlsconfig``/``mmlsmgr``): per
  record type one ``CMD:SECTION:HEADER:version:reserved:reserved:NAME:...:``
  line, then data lines ``CMD:SECTION:0:1:::VALUE:...:``. Fields are found by
  their HEADER name, never by position (columns move between releases).
* Fields that could hold a ':' are percent-encoded; the set of encoded
  characters is listed under ``mmclidecode`` ("%3A" for ':', "%2F" for '/',
  "%2C" for ','...), which leaves non-encoded text intact: so does
  :func:`decode` (``urllib.parse.unquote``).
* ``mmlsconfig -Y``: ``mmlsconfig::HEADER:version:reserved:reserved:
  configParameter:value:nodeList:`` -- nodeList empty for the cluster-wide
  value, else the nodes or node class the value applies to (the text form
  shows those under ``[node]`` headings). ``mmlsconfig`` without attribute
  lists only values set explicitly; an attribute it does not list has its
  documented default (mmlsconfig command reference).
* ``mmlscluster -Y``: sections ``clusterSummary`` (clusterName, clusterId, ...)
  and ``clusterNode`` (nodeNumber, daemonNodeName, ipAddress, adminNodeName,
  designation, ...), as IBM's own Ansible roles for Storage Scale show it.
* ``mmlsmount all -L -Y``: one line per (file system, node) with localDevName,
  realDevName, owningCluster, nodeIP, nodeName, clusterName; node names
  without domain. Only one data line of it was seen in public material: the
  header names are the least certain of these four.

The commands live in ``/usr/lpp/mmfs/bin``, which is not on root's PATH unless
an administrator put it there: commands are run by their full path.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from ..errors import CapabilityMissing, CommandTimeout, SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..nodes import Node, Result
from ..tools.registry import Tool
from .operation import UNKNOWN, Change, Fact, Operation

MMFS_BIN = "/usr/lpp/mmfs/bin"
# Every GPFS admin command comes with gpfs.base: one declared program stands for them all
# (one line in `harness probe`, not one per mm command).
MMLSCLUSTER = Tool("mmlscluster", "dpkg-query -W -f='${Version}\\n' gpfs.base 2>/dev/null"
                   " || rpm -q --qf '%{VERSION}-%{RELEASE}\\n' gpfs.base", "gpfs.base",
                   path=MMFS_BIN, vendor="IBM")
# Changes of one apply round may run side by side on one machine (harness.nodes.group):
# GPFS admin commands of this harness take this lock, so they run one at a time.
LOCK = "/var/lock/harness-gpfs.lock"

NOT_INSTALLED_HINT = ("GPFS operations run only on real IBM Storage Scale cluster nodes (an "
                      "inventory host with gpfs.base installed and in a cluster); no lab or VM has "
                      "it. Leave the GPFS steps out elsewhere")
NOT_ACTIVE_HINT = ("as root on that node, check `mmlscluster` and `mmgetstate -a`; the node must "
                   "be an admin node of an active cluster")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}\Z")


def mm(*args: str) -> str:
    """A GPFS admin command line, by its full path (not on PATH by default)."""
    return shlex.join([f"{MMFS_BIN}/{args[0]}", *map(str, args[1:])])


def locked(command: str) -> str:
    """``command`` run under the harness's GPFS lock (one change at a time per machine)."""
    return f"flock {LOCK} {command}"


def check_name(what: str, name: str) -> str:
    """A cluster, node or device name as GPFS takes it (SpecError otherwise)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise SpecError(f"GPFS {what} {name!r} is not a valid name",
                        "use letters, digits, '_', '.', '-' (a device without /dev/)")
    return name


# -- the -Y format ----------------------------------------------------------------------------

def decode(field: str) -> str:
    """A ``-Y`` field percent-decoded (the ``mmclidecode`` rule; plain text stays as is)."""
    return unquote(field)


@dataclass(frozen=True)
class YRecord:
    """One data line of ``-Y`` output: its command, section and fields by HEADER name."""

    command: str
    section: str
    fields: dict[str, str]


def parse_y(text: str) -> list[YRecord]:
    """Every data line of ``-Y`` output, fields named by the HEADER line of its section.

    Lines that are not ``-Y`` records (messages, lines of a section without a
    HEADER) are skipped. ``reserved`` and the empty name after the last ':'
    are dropped; ``version`` is kept.
    """
    headers: dict[tuple[str, str], list[str]] = {}
    records = []
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) < 4:
            continue
        key = (parts[0], parts[1])
        if parts[2] == "HEADER":
            headers[key] = parts[3:]
            continue
        if key not in headers:
            continue
        fields = {name: decode(value) for name, value in zip(headers[key], parts[3:])
                  if name and name != "reserved"}
        records.append(YRecord(parts[0], parts[1], fields))
    return records


def column(records: list[YRecord], names: Iterable[str], what: str, command: str,
           required: bool = True) -> str | None:
    """The first of ``names`` that the records have (None if there are no records).

    SpecError when records exist but none of the names is a field (unless not
    ``required``: None then): the format is not the one this module was
    written against, and nothing has changed.
    """
    if not records:
        return None
    names = tuple(names)
    for name in names:
        if name in records[0].fields:
            return name
    if not required:
        return None
    raise SpecError(f"`{command}` output has no field for the {what} (looked for "
                    f"{', '.join(names)}; it has {', '.join(records[0].fields)})",
                    "the -Y field names were taken from IBM's documentation, not from a real "
                    "cluster: add this release's name to harness/config/gpfs*.py")


def output(node: Node, res: Result, ok_if: str = "") -> str:
    """A GPFS command's stdout, or CapabilityMissing (not installed / not usable).

    ``ok_if``: a failure whose output contains this text (case-insensitive)
    means "nothing to list" and gives "".
    """
    if res.ok:
        return res.stdout
    text = (res.stderr or res.stdout).strip()
    if res.exit_status == 127:  # the shell's "command not found"
        raise CapabilityMissing(f"{node.name} has no IBM Storage Scale (GPFS): "
                                f"{shlex.split(res.command)[0]} not found", NOT_INSTALLED_HINT)
    if ok_if and ok_if.lower() in text.lower():
        return ""
    raise CapabilityMissing(f"{node.name}: `{res.command}` failed (status {res.exit_status}): "
                            f"{text[-300:]}", NOT_ACTIVE_HINT)


# -- mmlscluster --------------------------------------------------------------------------------

@dataclass(frozen=True)
class GpfsNode:
    number: int
    daemon_name: str
    ip: str
    admin_name: str
    designation: str  # "quorum", "quorumManager", "" ...

    @property
    def short_name(self) -> str:
        return short(self.daemon_name)


@dataclass(frozen=True)
class GpfsCluster:
    name: str
    id: str
    nodes: tuple[GpfsNode, ...]


def short(name: str) -> str:
    """A node name without its domain (``mmlsmount`` prints node names so)."""
    return name.split(".", 1)[0]


def parse_mmlscluster_y(text: str) -> GpfsCluster:
    records = parse_y(text)
    summary = [r.fields for r in records if r.command == "mmlscluster" and r.section ==
               "clusterSummary"]
    if not summary or "clusterName" not in summary[0]:
        raise SpecError("`mmlscluster -Y` printed no clusterSummary record",
                        "run `mmlscluster -Y` on the node and compare with "
                        "harness/config/gpfs.py")
    nodes = tuple(GpfsNode(int(f.get("nodeNumber") or 0), f.get("daemonNodeName", ""),
                           f.get("ipAddress", ""), f.get("adminNodeName", ""),
                           f.get("designation", ""))
                  for f in (r.fields for r in records if r.section == "clusterNode"))
    return GpfsCluster(summary[0]["clusterName"], summary[0].get("clusterId", ""), nodes)


def cluster_fact(node: Node) -> Fact:
    """The cluster ``node`` belongs to; CapabilityMissing if GPFS is absent or not running."""
    return Fact(node, mm("mmlscluster", "-Y"),
                lambda res: parse_mmlscluster_y(output(node, res)))


def gpfs_available(node: Node) -> GpfsCluster:
    """Require GPFS on ``node`` before anything changes: its cluster, or CapabilityMissing."""
    return cluster_fact(node).read()


def gpfs_member(node: Node, timeout: float = 30.0) -> bool:
    """Whether ``node`` answers ``mmlscluster`` (the "gpfs" feature of ``harness probe``)."""
    try:
        return node.run(mm("mmlscluster", "-Y") + " >/dev/null 2>&1", check=False,
                        timeout=timeout).ok
    except CommandTimeout:
        return False


# -- mmlsconfig -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConfigEntry:
    attribute: str
    value: str
    nodes: frozenset[str]  # empty: the cluster-wide value; else the nodes/node class it applies to


def config_entries(text: str) -> list[ConfigEntry]:
    return [ConfigEntry(r.fields.get("configParameter", ""), r.fields.get("value", ""),
                        frozenset(n.strip() for n in r.fields.get("nodeList", "").split(",")
                                  if n.strip()))
            for r in parse_y(text) if r.command == "mmlsconfig"]


def parse_mmlsconfig_y(text: str, nodes: Iterable[str] = ()) -> dict[str, str]:
    """Attribute -> value for one scope: cluster-wide (``nodes`` empty) or exactly ``nodes``.

    Decision: a value set for other nodes (another nodeList) is not the value
    of this scope and is left out, also when the node lists overlap --
    :class:`GpfsConfig` refuses such overlaps instead of guessing.
    """
    scope = frozenset(nodes)
    return {e.attribute: e.value for e in config_entries(text) if e.nodes == scope}


# -- mmlsmount ------------------------------------------------------------------------------------

def parse_mmlsmount_y(text: str) -> dict[str, frozenset[str]]:
    """Device (its name in this cluster) -> short names of the nodes that have it mounted."""
    records = [r for r in parse_y(text) if r.command == "mmlsmount"]
    device = column(records, ("localDevName", "deviceName", "realDevName"), "device",
                    "mmlsmount -Y")
    node = column(records, ("nodeName", "daemonNodeName"), "node name", "mmlsmount -Y")
    mounts: dict[str, set[str]] = {}
    for r in records:
        names = mounts.setdefault(r.fields[device], set())
        if r.fields.get(node):
            names.add(short(r.fields[node]))
    return {dev: frozenset(names) for dev, names in mounts.items()}


# -- mmchconfig -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Attribute:
    name: str
    kind: str  # "size": bytes with optional K/M/G/T; "int": a plain integer
    immediate: bool  # in the documented -i/-I lists: may change without a daemon restart


# pagepool and maxMBpS are in the list of attributes valid with -I in the mmchconfig references
# seen (4.2.0, 4.2.1, 5.0.2; the -i list beside it is taken to be the same), and IBM's "Setting
# the pagepool size" page says -i or -I changes pagepool without restarting the daemons.
# socketRcvBufferSize/socketSndBufferSize are in none of those lists and are not described in
# the public mmchconfig references seen: treated as needing a daemon restart (mmshutdown;
# mmstartup), and -i is refused for them -- unconfirmed.
ATTRIBUTES = {a.name.lower(): a for a in (
    Attribute("pagepool", "size", True),
    Attribute("maxMBpS", "int", True),
    Attribute("socketRcvBufferSize", "int", False),
    Attribute("socketSndBufferSize", "int", False),
)}
DEFAULT = "DEFAULT"  # mmchconfig's value for "back to the documented default"
_SIZE = re.compile(r"^(\d+)([KMGT]?)\Z", re.IGNORECASE)


def attribute(name: str) -> Attribute:
    try:
        return ATTRIBUTES[str(name).lower()]
    except KeyError:
        raise SpecError(f"GPFS attribute {name!r} is not one this harness knows",
                        f"use one of {', '.join(a.name for a in ATTRIBUTES.values())}, or add it "
                        "to ATTRIBUTES in harness/config/gpfs.py with its unit and whether "
                        "mmchconfig -i accepts it") from None


def normalise(attr: Attribute, value: str | int) -> int | str:
    """A value comparable across spellings ("4G" == "4096M"); SpecError if it is not valid."""
    text = str(value).strip()
    if text.upper() == DEFAULT:
        return DEFAULT
    if attr.kind == "size":
        m = _SIZE.match(text)
        if m and int(m.group(1)) > 0:
            return int(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ")
        raise SpecError(f"GPFS {attr.name}={text!r} is not a size",
                        "use a positive number with an optional K, M, G or T, e.g. 4G")
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise SpecError(f"GPFS {attr.name}={text!r} is not a positive integer",
                    f"{attr.name} takes a plain number (no unit suffix)")


@dataclass
class GpfsConfig(Operation):
    """``mmchconfig ATTRIBUTE=VALUE [-N nodes] [-i]`` run on ``node`` (an admin node).

    ``nodes`` empty: the cluster-wide value; else the value for exactly these
    nodes (or one node class). ``immediate``: ``-i``, "takes effect
    immediately and is permanent" -- only for attributes documented as
    changeable so (pagepool, maxMBpS); without it the value takes effect at the
    next daemon restart, which this operation does not do.

    ``-I`` (immediate, not persistent) is not offered: ``mmlsconfig`` shows
    persisted values only, so it could not see such a change (IBM's REST
    ``GET config`` description), and no repeat could be a no-op.

    Fact: ``mmlsconfig -Y``, which lists explicitly set values only; an
    attribute not listed has its default, recorded as ``DEFAULT``. Equal
    values (after units: "4G" == "4096M") change nothing. The undo sets the
    old value back, ``DEFAULT`` included (mmchconfig's own word for the
    default), with the same ``-N`` and ``-i``. A value already set for other
    nodes that overlap ``nodes`` is refused: the change would split it and
    the undo could not put it back as it was.
    """

    node: Node
    attribute: str
    value: str | int
    nodes: tuple[str, ...] = ()
    immediate: bool = False

    def check(self) -> None:
        attr = attribute(self.attribute)
        normalise(attr, self.value)
        for name in self.nodes:
            check_name("node", name)
        if self.immediate and not attr.immediate:
            raise SpecError(f"GPFS {attr.name} cannot be changed with mmchconfig -i",
                            "it takes effect at the next daemon restart (mmshutdown; "
                            "mmstartup): leave immediate=False")

    @property
    def target(self) -> str:
        scope = f" -N {','.join(self.nodes)}" if self.nodes else ""
        return f"{attribute(self.attribute).name}{scope}{' -i' if self.immediate else ''}"

    def facts(self) -> dict[str, Fact]:
        return {"config": Fact(self.node, mm("mmlsconfig", "-Y"),
                               lambda res: config_entries(output(self.node, res)))}

    def diff(self, facts: dict) -> list[Change]:
        attr = attribute(self.attribute)
        after = str(self.value).strip()
        after = DEFAULT if after.upper() == DEFAULT else after
        before = facts["config"]
        scope = frozenset(self.nodes)
        if before is not UNKNOWN:
            mine = [e for e in before if e.attribute.lower() == attr.name.lower()]
            for e in mine:
                if e.nodes != scope and e.nodes and scope and e.nodes & scope:
                    raise SpecError(f"GPFS {attr.name} is set to {e.value} for "
                                    f"{','.join(sorted(e.nodes))}, which overlaps "
                                    f"{','.join(self.nodes)}",
                                    "set it for the same node list (or node class) as the "
                                    "existing value, or for other nodes")
            before = next((e.value for e in mine if e.nodes == scope), DEFAULT)
        change = Change(self.node, "gpfs-config", self.target, before, after)
        if before is UNKNOWN or not same(attr, before, after):
            change.command = locked(config_command(attr.name, after, self.nodes, self.immediate))
            change.undo = {"attribute": attr.name, "before": before, "after": after,
                           "nodes": list(self.nodes), "immediate": self.immediate}
        return [change]


def same(attr: Attribute, before: str, after: str) -> bool:
    """Whether two values are equal once units are read (an unreadable old value is not)."""
    try:
        return normalise(attr, before) == normalise(attr, after)
    except SpecError:
        return False


def config_command(name: str, value: str, nodes: Iterable[str], immediate: bool) -> str:
    nodes = list(nodes)
    return mm("mmchconfig", f"{name}={value}", *(["-N", ",".join(nodes)] if nodes else []),
              *(["-i"] if immediate else []))


@undo_handler("gpfs-config", gone_with_namespace=False)
def _restore_config(node: Node, data: dict) -> None:
    attribute = undo_checks.text("gpfs-config", "attribute", data.get("attribute"), _NAME)
    before = undo_checks.text("gpfs-config", "before", data.get("before"), _VALUE_WORD)
    nodes = data.get("nodes")
    if not isinstance(nodes, list):
        raise undo_checks.refuse("gpfs-config", "nodes is not a list", nodes)
    nodes = [undo_checks.text("gpfs-config", "node", n, _NAME) for n in nodes]
    node.run(locked(config_command(attribute, before, nodes, data.get("immediate") is True)),
             timeout=120)


_VALUE_WORD = re.compile(r"^[A-Za-z0-9_.:,/+-]{1,255}\Z")
