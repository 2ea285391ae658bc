"""Small facts about a node's network stack: a command and its parser, defined once.

Both facts follow the reading process's network namespace, so reading them
through a namespace node gives that namespace's own view.
"""

from __future__ import annotations

import shlex

from .base import Node

# -- TCP listeners (ss) -------------------------------------------------------------------

#: Lists TCP listening sockets, one per line, no header; with -p the owning program
#: (shown to root) -- for error messages that say who holds a port.
LISTENING_ARGV = ["ss", "-Hltnp"]


def listening_argv(port: int) -> list[str]:
    """Command that prints a line iff a TCP socket listens on ``port`` (empty output: none)."""
    return ["ss", "-Hltn", f"sport = :{int(port)}"]


def parse_listening(text: str) -> dict[int, str]:
    """{port: ss line} from ``ss -Hltn[p]`` output (local address is the 4th column)."""
    ports: dict[int, str] = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 4 and ":" in cols[3]:
            try:
                ports[int(cols[3].rsplit(":", 1)[1])] = line.strip()
            except ValueError:
                continue
    return ports


def listening_ports(node: Node) -> dict[int, str]:
    """{port: ss line} of the TCP sockets listening on ``node``."""
    return parse_listening(node.run(LISTENING_ARGV, check=False, timeout=10).stdout)


def is_listening(node: Node, port: int) -> bool:
    result = node.run(listening_argv(port), check=False, timeout=10)
    return result.ok and bool(result.stdout.strip())


def wait_listening_command(port: int, timeout: float, interval: float = 0.05) -> str:
    """Shell loop that exits 0 once ``port`` listens, 1 after ``timeout`` seconds of polls.

    Polled on the node itself: one round trip instead of one per poll.
    """
    polls = max(1, int(timeout / interval))
    check = shlex.join(listening_argv(port))
    return (f"for i in $(seq {polls}); do {check} | grep -q . && exit 0;"
            f" sleep {interval:g}; done; exit 1")


def wait_listening(node: Node, port: int, timeout: float) -> bool:
    """Wait, on the node itself (one command, not one round trip per poll), for a TCP listener."""
    return node.run(wait_listening_command(port, timeout), check=False,
                    timeout=timeout + 30).ok


# -- /proc/net/netstat ----------------------------------------------------------------------

NETSTAT_PATH = "/proc/net/netstat"


def parse_netstat(text: str) -> dict[str, dict[str, int]]:
    """{group: {counter: value}} from /proc/net/netstat text.

    The file has two lines per group ("TcpExt: names..." then "TcpExt: values...").
    """
    groups: dict[str, dict[str, int]] = {}
    lines = [line.split() for line in text.splitlines() if line.strip()]
    pending: dict[str, list[str]] = {}
    for words in lines:
        group = words[0].rstrip(":")
        if group in pending:
            names = pending.pop(group)
            try:
                groups.setdefault(group, {}).update(
                    {n: int(v) for n, v in zip(names, words[1:])})
            except ValueError:  # two header lines in a row: keep the newer as header
                pending[group] = words[1:]
        else:
            pending[group] = words[1:]
    return groups


def netstat_group(text: str, group: str) -> dict[str, int]:
    """Counters of one group (e.g. "MPTcpExt", "TcpExt"); empty if the kernel has none."""
    return parse_netstat(text).get(group, {})


def netstat(node: Node, group: str = "MPTcpExt") -> dict[str, int]:
    return netstat_group(node.read_text(NETSTAT_PATH), group)
