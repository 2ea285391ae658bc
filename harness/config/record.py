"""What a configuration operation did, for the run's archive."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


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


@dataclass
class ConfigLog:
    """All changes of one run, in order."""

    records: list[ChangeRecord] = field(default_factory=list)

    def add(self, record: ChangeRecord) -> ChangeRecord:
        self.records.append(record)
        return record

    def to_list(self) -> list[dict]:
        return [r.to_dict() for r in self.records]
