"""TIPC on a node: its identity and a bearer on a lab interface (iproute2's ``tipc``).

Probe -> apply -> record -> restore, like every configuration operation:

* ``probe(node)`` reads what is there (tool present, module loaded, the node
  identity, the bearers) without changing anything, and fails with a clear
  message when the kernel has no TIPC or the ``tipc`` tool is missing
  (Debian's tipcutils is gone; iproute2 >= 4.x ships ``tipc``).
* ``set_identity`` gives the node a readable identity. The kernel allows this
  ONCE per network namespace and has no "unset": it is refused when another
  identity is already set, and it disappears with the lab's namespace (that is
  its undo). Set it before the first bearer, or the kernel derives one from
  the bearer's address.
* ``enable_bearer`` enables an Ethernet bearer (``media eth dev IF``; needs
  the peers on one L2 segment) or a UDP bearer (``media udp name N localip
  A remoteip B``; works across IP routers). A unicast ``remoteip`` puts the
  UDP bearer in point-to-point/replicast mode: peers that send it discovery
  messages are added automatically, so in a star only the leaves need the
  centre's address and the centre needs any one leaf's. Recorded before it is
  made; undone with ``tipc bearer disable``.

Each returns a :class:`ChangeRecord` for the run's archive, and ``state``
(identity, bearers, links, link window) is recorded too, because today's
TIPC (adaptive link window, 2.0 protocol) is not the TIPC 1.7.6 of older papers.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import asdict, dataclass

from ..errors import CapabilityMissing, SpecError
from ..journal import Journal, undo_handler
from ..nodes import NamespaceNode, Node
from ..tools.registry import Tool
from .record import ChangeRecord

TIPC = Tool("tipc", "tipc help 2>&1 | grep -m1 -i usage", "iproute2")

MEDIA = ("udp", "eth")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
_IDENTITY = re.compile(r"^[A-Za-z0-9_.-]{1,16}$")
_MISSING_MODULE = "Unable to get TIPC nl family id"


@dataclass(frozen=True)
class TipcState:
    """What ``tipc`` reports on a node (raw text kept: its format varies by version)."""

    tool: str
    identity: str  # "" if none set yet
    bearers: tuple[str, ...]  # e.g. ("udp:s3", "eth:eth0")
    links: str
    nametable_lines: int

    def to_dict(self) -> dict:
        return asdict(self)


def _run_tipc(node: Node, args: list[str], check: bool = True):
    res = node.run(["tipc", *args], check=False, timeout=30)
    if not res.ok and _MISSING_MODULE in (res.stderr + res.stdout):
        raise CapabilityMissing(f"{node.name}: the kernel has no TIPC (module not loaded)",
                                _MODULE_HINT)
    if check and not res.ok:
        raise SpecError(f"{node.name}: `tipc {' '.join(args)}` failed: "
                        f"{(res.stderr or res.stdout).strip()}",
                        "check the arguments (see `man tipc-bearer`, `man tipc-node`)")
    return res


_MODULE_HINT = ("load it (modprobe tipc) on a kernel that has it; this host's kernel has none "
                "-- run the study in a VM lab")
# One round trip per node: tool, identity, bearers (a VM under TCG makes each command costly).
_PROBE = ('t=$(command -v tipc) || { echo "@notool"; exit 0; }; echo "@tool $t";'
          ' echo "@identity"; tipc node get identity 2>&1; echo "@bearers"; tipc bearer list 2>&1')


def _parse_probe(node_name: str, text: str) -> tuple[str, str, tuple[str, ...]]:
    if "@notool" in text:
        raise CapabilityMissing(f"{node_name}: no `tipc` command",
                                "install iproute2 (it ships `tipc`; Debian has no tipcutils)")
    if _MISSING_MODULE in text:
        raise CapabilityMissing(f"{node_name}: the kernel has no TIPC (module not loaded)",
                                _MODULE_HINT)
    tool = text.split("@tool ", 1)[1].splitlines()[0].strip() if "@tool " in text else ""
    ident = text.split("@identity", 1)[1].split("@bearers", 1)[0] if "@identity" in text else ""
    bearers = text.split("@bearers", 1)[1] if "@bearers" in text else ""
    return tool, parse_identity(ident), tuple(b.strip() for b in bearers.splitlines() if b.strip())


def probe(node: Node) -> TipcState:
    """The node's TIPC state; raises CapabilityMissing if TIPC cannot be configured there."""
    text = node.run(_PROBE, check=False, timeout=60).stdout
    tool, identity, bearers = _parse_probe(node.name, text)
    return TipcState(tool, identity, bearers, "", 0)


def state(node: Node) -> TipcState:
    """``probe`` plus links and name table size (for the run record)."""
    base = probe(node)
    links = _run_tipc(node, ["link", "list"], check=False).stdout.strip()
    names = _run_tipc(node, ["nametable", "show"], check=False).stdout
    return TipcState(base.tool, base.identity, base.bearers, links, len(names.splitlines()))


def parse_identity(text: str) -> str:
    """The identity from ``tipc node get identity`` (iproute2 6.1 prints a header line, then
    "IDENTITY HASH", or only the hash while no identity is set)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if lines and lines[0][:2] == ["Node", "Identity"]:
        lines = lines[1:]
    if not lines:
        return ""
    return lines[0][0] if len(lines[0]) >= 2 else ""


def set_identity(journal: Journal, node: Node, identity: str) -> ChangeRecord:
    if not _IDENTITY.match(identity):
        raise SpecError(f"TIPC identity {identity!r} is not valid",
                        "use 1-16 letters, digits, '_', '.', '-'")
    before = probe(node).identity
    if before == identity:
        return ChangeRecord(node.name, "tipc-identity", "node identity", before, identity,
                            changed=False)
    if before:
        raise SpecError(f"{node.name} already has TIPC identity {before}; the kernel allows "
                        "one per network namespace and none can be removed",
                        "configure TIPC in a fresh namespace (a lab node), not on this one")
    journal.record("tipc-identity", node, identity=identity)
    _run_tipc(node, ["node", "set", "identity", identity])
    return ChangeRecord(node.name, "tipc-identity", "node identity", None, identity,
                        changed=True)


def _bearer_id(media: str, name: str | None, dev: str | None) -> str:
    return f"{media}:{name if media == 'udp' else dev}"


def bearer_args(media: str, *, dev: str | None = None, name: str | None = None,
                localip: str | None = None, remoteip: str | None = None,
                port: int | None = None) -> list[str]:
    """``tipc bearer enable`` arguments, checked (raises SpecError, changes nothing)."""
    if media not in MEDIA:
        raise SpecError(f"TIPC media {media!r} is not supported", f"use one of {MEDIA}")
    if media == "eth":
        if not dev or not re.match(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}$", dev):
            raise SpecError(f"an Ethernet bearer needs an interface name, got {dev!r}")
        args = ["media", "eth", "device", dev]
    else:
        if not name or not _NAME.match(name):
            raise SpecError(f"a UDP bearer needs a name of 1-15 letters/digits, got {name!r}")
        for what, ip in (("localip", localip), ("remoteip", remoteip)):
            if ip is None and what == "remoteip":
                continue
            try:
                ipaddress.ip_address(ip)
            except (TypeError, ValueError):
                raise SpecError(f"TIPC UDP bearer {what} {ip!r} is not an IP address") from None
        args = ["media", "udp", "name", name, "localip", localip]
        if port is not None:
            if not 1 <= port <= 65535:
                raise SpecError(f"TIPC UDP port {port} is outside 1..65535")
            args += ["localport", str(port), "remoteport", str(port)]
        if remoteip:
            args += ["remoteip", remoteip]
    return args


def enable_bearer(journal: Journal, node: Node, media: str, *, dev: str | None = None,
                  name: str | None = None, localip: str | None = None,
                  remoteip: str | None = None, port: int | None = None) -> ChangeRecord:
    """Enable one bearer; arguments are checked before anything changes."""
    args = bearer_args(media, dev=dev, name=name, localip=localip, remoteip=remoteip, port=port)
    bearer = _bearer_id(media, name, dev)
    if any(b.startswith(bearer) for b in probe(node).bearers):
        raise SpecError(f"{node.name} already has TIPC bearer {bearer}",
                        "it was not made by this run: disable it yourself or use another name")
    journal.record("tipc-bearer", node, media=media, name=name, dev=dev)
    _run_tipc(node, ["bearer", "enable", *args])
    return ChangeRecord(node.name, "tipc-bearer", bearer, None, " ".join(args), changed=True)


@dataclass(frozen=True)
class NodeConfig:
    """TIPC for one node: an identity and one bearer (``bearer`` = kwargs of bearer_args)."""

    node: Node
    identity: str
    media: str
    bearer: dict


def _machine(node: Node) -> Node:
    return node.parent if isinstance(node, NamespaceNode) else node


def _in_node(node: Node, script: str) -> str:
    if isinstance(node, NamespaceNode):
        return shlex.join(["nsenter", f"--net={node.netns_path}", "--", "sh", "-c", script])
    return f"sh -c {shlex.quote(script)}"


PARALLEL_NODES = 8  # nodes probed/configured at once inside one machine


def sections_script(commands: dict[int, str], jobs: int = PARALLEL_NODES) -> str:
    """Run ``commands`` up to ``jobs`` at a time; print each one's output after ``@@node i``.

    Under TCG every process start costs ~0.1-0.2 s of emulated CPU: running
    the nodes' commands side by side uses all of the guest's vCPUs.
    """
    lines = ['d=$(mktemp -d) || exit 1', 'trap \'rm -rf "$d"\' EXIT']
    keys = list(commands)
    for start in range(0, len(keys), jobs):
        for i in keys[start:start + jobs]:
            lines.append(f"( {commands[i]} ) > \"$d/{i}\" 2>&1 &")
        lines.append("wait")
    lines += [f"echo '@@node {i}'; cat \"$d/{i}\"" for i in keys]
    return "\n".join(lines)


def configure_nodes(journal: Journal, configs: list[NodeConfig]) -> list[ChangeRecord]:
    """Identity + bearer on many nodes, probing and applying in ONE command per machine.

    All arguments and all nodes' states are checked before the first change:
    a bad bearer, a missing tool or module, an identity already set, or a
    bearer that exists stops everything with nothing changed.
    """
    planned = []
    for cfg in configs:
        if not _IDENTITY.match(cfg.identity):
            raise SpecError(f"TIPC identity {cfg.identity!r} is not valid",
                            "use 1-16 letters, digits, '_', '.', '-'")
        args = bearer_args(cfg.media, **cfg.bearer)
        planned.append((cfg, args, _bearer_id(cfg.media, cfg.bearer.get("name"),
                                              cfg.bearer.get("dev"))))
    groups: dict[int, tuple[Node, list[int]]] = {}
    for i, (cfg, _a, _b) in enumerate(planned):
        machine = _machine(cfg.node)
        groups.setdefault(id(machine), (machine, []))[1].append(i)
    # probe everything first
    for machine, indices in groups.values():
        script = sections_script({i: _in_node(planned[i][0].node, _PROBE) for i in indices})
        text = machine.run(script, check=False, timeout=60 + 5 * len(indices)).stdout
        parts = text.split("@@node ")[1:]
        found = {int(p.split(None, 1)[0]): p for p in parts}
        for i in indices:
            cfg, _args, bearer = planned[i]
            _tool, identity, bearers = _parse_probe(cfg.node.name, found.get(i, "@notool"))
            if identity:
                raise SpecError(f"{cfg.node.name} already has TIPC identity {identity}",
                                "configure TIPC in fresh namespaces (lab nodes)")
            if any(b.startswith(bearer) for b in bearers):
                raise SpecError(f"{cfg.node.name} already has TIPC bearer {bearer}",
                                "it was not made by this run: disable it yourself")
    records: list[ChangeRecord] = []
    for machine, indices in groups.values():
        lines = {}
        for i in indices:
            cfg, args, _bearer = planned[i]
            journal.record("tipc-identity", cfg.node, identity=cfg.identity)
            journal.record("tipc-bearer", cfg.node, media=cfg.media,
                           name=cfg.bearer.get("name"), dev=cfg.bearer.get("dev"))
            apply = (f"tipc node set identity {shlex.quote(cfg.identity)} && "
                     f"tipc bearer enable {shlex.join(args)}")
            lines[i] = f"{_in_node(cfg.node, apply)} || echo '@@fail {i}'"
        res = machine.run(sections_script(lines), check=False, timeout=60 + 5 * len(indices))
        failed = [int(x.split()[1]) for x in res.stdout.splitlines() if x.startswith("@@fail")]
        if failed:
            names = ", ".join(planned[i][0].node.name for i in failed)
            raise SpecError(f"enabling TIPC failed on {names}: {res.stdout.strip()[-500:]}",
                            "see the message; everything recorded so far is undone")
        for i in indices:
            cfg, args, bearer = planned[i]
            records.append(ChangeRecord(cfg.node.name, "tipc-identity", "node identity", None,
                                        cfg.identity, changed=True))
            records.append(ChangeRecord(cfg.node.name, "tipc-bearer", bearer, None,
                                        " ".join(args), changed=True))
    return records


def link_window(node: Node, media: str, name: str | None = None,
                dev: str | None = None) -> str:
    """The bearer's link window as ``tipc bearer get window`` prints it (recorded per run)."""
    target = ["name", name] if media == "udp" else ["device", dev]
    res = _run_tipc(node, ["bearer", "get", "window", "media", media, *target], check=False)
    return (res.stdout or res.stderr).strip()


def wait_links(node: Node, expected: int, timeout: float = 60.0) -> int:
    """Wait until ``node`` has ``expected`` TIPC links up (besides broadcast); return how many."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        text = _run_tipc(node, ["link", "list"], check=False).stdout
        up = sum(1 for line in text.splitlines()
                 if line.strip().endswith(": up") and "broadcast-link" not in line)
        if up >= expected or time.monotonic() > deadline:
            return up
        time.sleep(0.5)


@undo_handler("tipc-bearer")
def _undo_bearer(node: Node, data: dict) -> None:
    if data["media"] == "udp":
        target = f"media udp name {shlex.quote(data['name'])}"
    else:
        target = f"media eth device {shlex.quote(data['dev'])}"
    node.run(f"tipc bearer disable {target} 2>/dev/null || true", timeout=30)


@undo_handler("tipc-identity")
def _undo_identity(node: Node, data: dict) -> None:
    """Nothing to run: the kernel cannot unset an identity; it goes with the namespace."""
