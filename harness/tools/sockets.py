"""TCP socket checks and facts of a node: ports free, what is established, whether an
address answers at all. Who listens is the shared fact :func:`harness.nodes.facts.listening_ports`.

They are read through the node so that a namespace node sees its own sockets
(sockets are per network namespace) and an SSH node the remote machine's.
Checks that refuse (a port taken, a target that does not answer) do so before
anything is started, so the refusal leaves nothing behind.
"""

from __future__ import annotations

from ..errors import HarnessError, SpecError
from ..journal.journal import Journal
from ..nodes import Node
from ..nodes.facts import listening_ports
from . import pingpong


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
