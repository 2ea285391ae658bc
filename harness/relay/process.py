"""A relay of any kind -- our srd, socat, or our multiplexing pair -- on a node for a block.

Study S0 compares the two relays on the same paths, so both are started,
checked and measured the same way: the target must answer before the relay
starts (a relay to nowhere would only show as an empty result later), the
relay must listen before the block runs, and its process group is what its
CPU time is read from. srd runs through :func:`harness.relay.running_relay`
(journalled, stopped by SIGTERM with its exit status kept); socat and the
multiplexing pair (``mux-entry`` on the source front, ``mux-exit`` on the
destination front: mux.c, the paper's proxy with one connection between the
fronts) through ``journal.process``. The two halves of a pair share a :class:`TrunkKey`
(trunk.py): the exit accepts as its trunk only a connection that proves it.
A relay's record (a run's provenance) holds the settings the relay itself reported when it
started (its ``event=listening`` line: srd's timeouts and limits, srdmux's frame cap).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import HarnessError
from ..journal.journal import Journal
from ..nodes import Node
from ..nodes.facts import listening_ports
from ..nodes.local import wait_until
from ..tools.registry import Tool
from ..tools.sockets import check_answers
from .build import MUX_PROGRAM
from .daemon import running_relay
from .spec import RelaySpec
from .trunk import TrunkKey, write_key

SOCAT_TOOL = Tool("socat", "socat -V | grep 'socat version'", "socat")
SOCAT = "socat -b 262144 TCP-LISTEN:{port},bind={host},fork,reuseaddr,nodelay TCP:{target},nodelay"
KINDS = ("srd", "socat", "mux-entry", "mux-exit")


@dataclass
class Relay:
    kind: str  # one of KINDS
    node: Node
    listen: str
    target: str
    process: object  # the journal's Process; its pid is the relay's process group
    handle: object = None  # RelayHandle for srd
    exit_status: int | None = None
    settings: dict = field(default_factory=dict)  # from the relay's own "listening" line


    @property
    def pgid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.handle.running() if self.handle is not None else self.process.poll() is None

    def record(self) -> dict:
        return {"kind": self.kind, "node": self.node.name, "listen": self.listen,
                "target": self.target, "exit_status": self.exit_status,
                "settings": self.settings}


@contextmanager
def relay(journal: Journal, node: Node, kind: str, listen: str, target: str,
          check_target: bool = True, trunk_key: TrunkKey | None = None) -> Iterator[Relay]:
    """A relay (one of :data:`KINDS`) on ``node`` from ``listen`` to ``target`` for the block.

    A ``mux-entry`` opens its one shared connection to ``target`` (a ``mux-exit``) when it
    starts, and a ``mux-exit`` serves one shared connection for its life: never probe a
    ``mux-exit`` with a connection of its own (``check_target`` is ignored for a
    ``mux-entry``). Both halves of a pair need the same ``trunk_key``.
    """
    if kind not in KINDS:
        raise HarnessError(f"unknown relay kind {kind!r}", f"use one of {', '.join(KINDS)}")
    if kind.startswith("mux-") and not isinstance(trunk_key, TrunkKey):
        raise HarnessError(f"a {kind} relay needs the pair's trunk_key",
                           "make one with TrunkKey.new() and pass it to both halves")
    host, port = target.rsplit(":", 1)
    if check_target and kind != "mux-entry":
        check_answers(journal, node, host, int(port), f"relay target of {kind} on {node.name}")
    if kind == "srd":
        with running_relay(journal, node, RelaySpec.parse(listen, target)) as handle:
            ref = Relay(kind, node, listen, target, handle.process, handle,
                        settings=handle.events("listening")[0].fields)
            try:
                yield ref
            finally:
                ref.exit_status = handle.stop()
        return
    lhost, lport = listen.rsplit(":", 1)
    key_entry = None
    if kind == "socat":
        cmd = "exec " + SOCAT.format(port=lport, host=lhost, target=target)
    else:
        binary = MUX_PROGRAM.build_on(node)
        key_path, key_entry = write_key(journal, node, trunk_key)
        cmd = shlex.join(["exec", binary, "--key-file", key_path, kind.split("-")[1], listen,
                          target])
    try:
        with journal.process(node, cmd) as proc:
            if not wait_until(lambda: proc.poll() is not None
                              or int(lport) in listening_ports(node), 10) \
                    or proc.poll() is not None:
                raise HarnessError(f"{kind} on {node.name} did not listen on {listen}: "
                                   f"{proc.output().strip()[-300:]}")
            if key_entry is not None:  # read before it listened: off the disk at once
                journal.undo(key_entry)
            ref = Relay(kind, node, listen, target, proc, settings=_listening(proc.output()))
            yield ref
            ref.exit_status = proc.poll()
    finally:
        if key_entry is not None:
            journal.undo(key_entry)


def _listening(output: str) -> dict:
    """The settings srdmux reported in its "srdmux: event=listening ..." line ({} for socat)."""
    for line in output.splitlines():
        if line.startswith("srdmux: event=listening "):
            words = shlex.split(line.split(": ", 1)[1])
            return dict(w.split("=", 1) for w in words if "=" in w and not w.startswith("event="))
    return {}


def srd_clients(relay_ref: Relay) -> dict:
    """Who the SRD saw connecting (client addresses) and how its streams ended.

    Evidence of the path a method took: behind NAT the SRD sees the front's
    public address, behind a proxy the proxy's, directly the client's own.
    """
    events = relay_ref.handle.events()
    clients: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for e in events:
        if e.name == "accept":
            ip = e.get("client", "?").rsplit(":", 1)[0]
            clients[ip] = clients.get(ip, 0) + 1
        elif e.name == "close":
            reasons[e.get("reason", "?")] = reasons.get(e.get("reason", "?"), 0) + 1
    return {"accepts_by_client_ip": clients, "close_reasons": reasons,
            "errors": [e.fields for e in events if e.name in ("error", "target-failed")]}
