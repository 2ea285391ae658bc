"""TIPC on a node: its identity and a bearer on a lab interface (iproute2's ``tipc``).

Fact -> diff -> journal -> apply (:mod:`harness.config.operation`):

* ``tipc_fact``/``probe`` read what is there (tool present, module loaded, the
  node identity, the bearers) in one command, and fail with a clear message
  when the kernel has no TIPC or the ``tipc`` tool is missing (Debian's
  tipcutils is gone; iproute2 >= 4.x ships ``tipc``).
* :class:`TipcNode` gives a node a readable identity and enables one bearer.
  The kernel allows the identity ONCE per network namespace and has no
  "unset": an identity already set is refused, and the identity disappears
  with the lab's namespace. It is set just before the bearer, else the kernel
  derives one from the bearer's address. The bearer is Ethernet (``media eth
  dev IF``; needs the peers on one L2 segment) or UDP (``media udp name N
  localip A remoteip B``; works across IP routers). A unicast ``remoteip`` puts
  the UDP bearer in point-to-point/replicast mode: peers that send it
  discovery messages are added automatically, so in a star only the leaves
  need the centre's address and the centre needs any one leaf's. Recorded
  before it is made; undone with ``tipc bearer disable``.

Each change is recorded for the run's archive, and ``state``
(identity, bearers, links, link window) is recorded too, because today's
TIPC (adaptive link window, 2.0 protocol) is not the TIPC 1.7.6 of older papers.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from dataclasses import asdict, dataclass

from ..errors import CapabilityMissing, SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import settle
from ..nodes import Node, Result
from ..tools.registry import Tool
from .operation import UNKNOWN, Change, Fact, Operation

TIPC = Tool("tipc", "tipc help 2>&1 | grep -m1 -i usage", "iproute2")

MEDIA = ("udp", "eth")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}\Z")
_IDENTITY = re.compile(r"^[A-Za-z0-9_.-]{1,16}\Z")
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
# One command per node: tool, identity, bearers (a VM under TCG makes each command costly).
_PROBE = ('t=$(command -v tipc) || { echo "@notool"; exit 0; }; echo "@tool $t";'
          ' echo "@identity"; tipc node get identity 2>&1; echo "@bearers"; tipc bearer list 2>&1')


def tipc_fact(node: Node) -> Fact:
    """The node's TIPC state; CapabilityMissing if TIPC cannot be configured there."""

    def parse(res: Result) -> TipcState:
        text = res.stdout
        if "@notool" in text:
            raise CapabilityMissing(f"{node.name}: no `tipc` command",
                                    "install iproute2 (it ships `tipc`; Debian has no tipcutils)")
        if _MISSING_MODULE in text:
            raise CapabilityMissing(f"{node.name}: the kernel has no TIPC (module not loaded)",
                                    _MODULE_HINT)
        tool = text.split("@tool ", 1)[1].splitlines()[0].strip() if "@tool " in text else ""
        ident = text.split("@identity", 1)[1].split("@bearers", 1)[0] if "@identity" in text \
            else ""
        bearers = text.split("@bearers", 1)[1] if "@bearers" in text else ""
        return TipcState(tool, parse_identity(ident),
                         tuple(b.strip() for b in bearers.splitlines() if b.strip()), "", 0)

    return Fact(node, _PROBE, parse)


def probe(node: Node) -> TipcState:
    """The node's TIPC state (identity, bearers), without links and name table."""
    return tipc_fact(node).read()


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


def _bearer_id(media: str, name: str | None, dev: str | None) -> str:
    return f"{media}:{name if media == 'udp' else dev}"


def bearer_args(media: str, *, dev: str | None = None, name: str | None = None,
                localip: str | None = None, remoteip: str | None = None,
                port: int | None = None) -> list[str]:
    """``tipc bearer enable`` arguments, checked (raises SpecError, changes nothing)."""
    if media not in MEDIA:
        raise SpecError(f"TIPC media {media!r} is not supported", f"use one of {MEDIA}")
    if media == "eth":
        if not dev or not re.match(r"^[A-Za-z][A-Za-z0-9_.-]{0,14}\Z", dev):
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


@dataclass
class TipcNode(Operation):
    """A TIPC identity and one bearer on ``node`` (``bearer``: keyword arguments of bearer_args).

    One operation because they are one decision: the kernel lets a namespace
    set its identity once, and derives one from the first bearer's address if
    none is set, so the identity must be set just before the bearer. Apply
    many at once (``apply(journal, [TipcNode(...), ...])``): every node's
    state is read in one round trip per machine and checked before the first
    change. An identity already set (the kernel cannot unset it) or a bearer
    that exists were not made by this run: refused. The undo disables the
    bearer; the identity goes with the namespace.
    """

    node: Node
    identity: str
    media: str
    bearer: dict

    def check(self) -> None:
        if not _IDENTITY.match(self.identity):
            raise SpecError(f"TIPC identity {self.identity!r} is not valid",
                            "use 1-16 letters, digits, '_', '.', '-'")
        bearer_args(self.media, **self.bearer)

    @property
    def bearer_id(self) -> str:
        return _bearer_id(self.media, self.bearer.get("name"), self.bearer.get("dev"))

    def facts(self) -> dict[str, Fact]:
        return {"tipc": tipc_fact(self.node)}

    def diff(self, facts: dict) -> list[Change]:
        found = facts["tipc"]
        if found is not UNKNOWN:
            if found.identity:
                raise SpecError(f"{self.node.name} already has TIPC identity {found.identity}; "
                                "the kernel allows one per network namespace and none can be "
                                "removed", "configure TIPC in fresh namespaces (lab nodes)")
            if any(b.startswith(self.bearer_id) for b in found.bearers):
                raise SpecError(f"{self.node.name} already has TIPC bearer {self.bearer_id}",
                                "it was not made by this run: disable it yourself or use "
                                "another name")
        args = bearer_args(self.media, **self.bearer)
        command = (f"tipc node set identity {shlex.quote(self.identity)} && "
                   f"tipc bearer enable {shlex.join(args)}")
        return [Change(self.node, "tipc", self.bearer_id, None,
                       f"identity {self.identity}; bearer {' '.join(args)}", command=command,
                       undo_kind="tipc-bearer",
                       undo={"media": self.media, "name": self.bearer.get("name"),
                             "dev": self.bearer.get("dev"), "identity": self.identity})]


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
    """Disable the bearer; the identity cannot be unset and goes with the namespace."""
    media = data.get("media")
    if media == "udp":
        name = undo_checks.name("tipc-bearer", data.get("name"))
        target = f"media udp name {shlex.quote(name)}"
    elif media == "eth":
        name = undo_checks.ifname("tipc-bearer", data.get("dev"), "dev")
        target = f"media eth device {shlex.quote(name)}"
    else:
        raise undo_checks.refuse("tipc-bearer", "media is neither udp nor eth", media)
    disable_bearer(node, target, _bearer_id(media, name, name))


def disable_bearer(node: Node, target: str, bearer: str) -> None:
    """``tipc bearer disable TARGET`` and see ``bearer`` (``eth:DEV``, ``udp:NAME``) gone from
    ``tipc bearer list`` (no tipc module or tool: no bearer either)."""
    settle(node, act=f"tipc bearer disable {target}",
           look=f"! tipc bearer list 2>/dev/null | grep -qxF {shlex.quote(bearer)}",
           what=f"TIPC bearer {bearer} on {node.name}", finish=f"tipc bearer disable {target}")
