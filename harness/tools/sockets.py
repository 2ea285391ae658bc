"""TCP socket facts of a node, read with ``ss`` through the node: who listens, what is
established, and whether an address answers at all.

They are read through the node so that a namespace node sees its own sockets
(sockets are per network namespace) and an SSH node the remote machine's.
Checks that refuse (a port taken, a target that does not answer) do so before
anything is started, so the refusal leaves nothing behind.
"""

from __future__ import annotations

from ..errors import HarnessError, SpecError
from ..journal import Journal
from ..nodes import Node
from . import pingpong


def listening_ports(node: Node) -> dict[int, str]:
    """{port: ss line} of the TCP sockets listening on ``node``."""
    out = node.run(["ss", "-Hltnp"], check=False, timeout=10).stdout
    ports: dict[int, str] = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and ":" in cols[3]:
            try:
                ports[int(cols[3].rsplit(":", 1)[1])] = line.strip()
            except ValueError:
                continue
    return ports


def check_ports_free(node: Node, ports: list[int], user: str) -> None:
    """Refuse if any of ``ports`` is listened on: a study's server there would not start.

    ``user`` says who needs the ports (e.g. "study S0 uses ports [...]"), for the hint.
    """
    taken = listening_ports(node)
    for port in ports:
        if port in taken:
            raise SpecError(f"port {port} is in use on {node.name}: {taken[port]}",
                            f"stop that program or run the study where the port is free ({user})")


def ss_established(node: Node) -> list[tuple[str, int, str, int]]:
    """(local ip, local port, peer ip, peer port) of established TCP connections."""
    out = node.run(["ss", "-Htn", "state", "established"], timeout=10).stdout
    conns = []
    for line in out.splitlines():
        cols = line.split()
        if len(cols) < 4:
            continue
        try:
            (lip, lport), (pip, pport) = (c.rsplit(":", 1) for c in cols[2:4])
            conns.append((lip.strip("[]"), int(lport), pip.strip("[]"), int(pport)))
        except ValueError:
            continue
    return conns


def check_answers(journal: Journal, node: Node, host: str, port: int, what: str) -> None:
    """Refuse unless a TCP connect from ``node`` to ``host:port`` succeeds.

    Asked before a measurement (or a relay towards it) starts, so a missing
    route or server is reported as such instead of as a hung or empty result.
    """
    error = pingpong.answers(journal, node, host, port)
    if error is not None:
        raise HarnessError(f"{what}: {host}:{port} does not answer from {node.name} ({error})",
                           "check that its server runs and that routes (and NAT) lead there; "
                           "nothing was measured")
