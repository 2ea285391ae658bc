"""Read the daemon's log: one line per event, ``TIME srd[PID]: event=NAME key=value ...``.

Values are bare words or double-quoted strings (error texts). Numbers stay
strings here; :class:`RelayEvent` converts the byte counts that callers ask
for most.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_LINE = re.compile(r"^(?P<time>\S+) srd\[(?P<pid>\d+)\]: (?P<rest>event=.*)$")


@dataclass(frozen=True)
class RelayEvent:
    time: str
    pid: int
    name: str
    fields: dict[str, str] = field(default_factory=dict)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.fields.get(key, default)

    def int(self, key: str) -> int:
        return int(self.fields[key])


def parse_line(line: str) -> RelayEvent | None:
    """The event on ``line``, or None for anything else (e.g. an 'srd: error:' line)."""
    match = _LINE.match(line.strip())
    if not match:
        return None
    try:
        words = shlex.split(match["rest"])
    except ValueError:
        return None
    fields = dict(word.split("=", 1) for word in words if "=" in word)
    return RelayEvent(match["time"], int(match["pid"]), fields.pop("event"), fields)


def parse_events(text: str) -> list[RelayEvent]:
    return [event for event in map(parse_line, text.splitlines()) if event is not None]


def error_lines(text: str) -> list[str]:
    """The daemon's fatal error messages ('srd: error: ...'), without the prefix."""
    return [line.split("srd: error: ", 1)[1] for line in text.splitlines()
            if line.startswith("srd: error: ")]
