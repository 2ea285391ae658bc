"""The outcome of one command on one node, the same for every transport."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Result:
    node: str
    command: str
    stdout: str
    stderr: str
    exit_status: int
    duration: float

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def to_dict(self) -> dict:
        return asdict(self)
