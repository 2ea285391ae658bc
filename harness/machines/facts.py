"""A user's machine as the harness found it: hostname, kernel, address plan, routes, sysctls.

Read once, in one round trip per machine, right after the harness reaches an inventory's
machines and before it changes anything, so run.json says what the machine was like
before the run (the configuration records say what the run changed, and undid). The
sysctls are the ones the studies set or whose value decides a measurement (buffers,
congestion control, MPTCP, forwarding, path MTU); ``sysctl -n`` of a key the kernel lacks
prints nothing and the key is recorded as ``None``.

Nothing here changes anything: each command only reads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..nodes import Node

SYSCTLS = (
    "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
    "net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_window_scaling",
    "net.ipv4.ip_forward", "net.mptcp.enabled", "net.ipv4.conf.all.rp_filter",
)
_MARK = "@@harness-machine-facts@@"


@dataclass(frozen=True)
class MachineFacts:
    hostname: str
    kernel: str
    addresses: list[str] = field(default_factory=list)  # `ip -br addr` lines
    routes: list[str] = field(default_factory=list)  # `ip route show table all`, no local table
    rules: list[str] = field(default_factory=list)
    qdiscs: list[str] = field(default_factory=list)
    sysctls: dict[str, str | None] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _script() -> str:
    parts = ["uname -n", "uname -r", "ip -br addr show",
             "ip route show table all | grep -v '^local \\|^broadcast \\|^multicast '",
             "ip rule show", "tc qdisc show"]
    parts += [f"sysctl -n {key} 2>/dev/null" for key in SYSCTLS]
    return "; ".join(f"{p}; echo {_MARK}" for p in parts)


def read_machine_facts(node: Node) -> MachineFacts:
    """The machine behind ``node`` as found (read-only; one command)."""
    out = node.run(_script(), timeout=30, check=False).stdout
    chunks = [c.strip("\n") for c in out.split(_MARK + "\n")]
    chunks += [""] * (6 + len(SYSCTLS) + 1 - len(chunks))

    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.splitlines() if line.strip()]

    sysctls = {key: (" ".join(chunks[6 + i].split()) or None) for i, key in enumerate(SYSCTLS)}
    return MachineFacts(hostname=chunks[0].strip(), kernel=chunks[1].strip(),
                        addresses=lines(chunks[2]), routes=lines(chunks[3]),
                        rules=lines(chunks[4]), qdiscs=lines(chunks[5]), sysctls=sysctls)
