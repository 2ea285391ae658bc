"""What a configuration operation did (or would do), for the run's archive."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ChangeRecord:
    node: str
    kind: str  # "sysctl", "mptcp-endpoint", "cgroup", "mtu", ...
    target: str  # what was changed: a sysctl key, an interface, a cgroup path
    before: str | None
    after: str | None
    changed: bool

    def to_dict(self) -> dict:
        return asdict(self)
