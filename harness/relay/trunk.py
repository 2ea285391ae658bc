"""The key a srdmux pair authenticates its trunk with (mux.c: an HMAC-SHA256 challenge-response).

The exit half of S0's proxy pair used to take the first connection to arrive as its trunk; now
the connection must prove the pair's key first. The harness starts both halves, so it makes one
key per pair (:meth:`TrunkKey.new`) and hands it to each half in a file: written through the
node's command channel (the stdin of one command: never an argv or an environment that `ps`
shows), 0600 inside a 0700 folder made for it under /tmp (``mkdir`` refuses a name that exists),
recorded in the journal before it is made, and removed as soon as the half listens -- it holds
the key in memory by then. Records name the folder, never the key: nothing archived holds it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from ..journal.file import Entry
from ..journal.journal import Journal
from ..nodes import Node

KEY_BYTES = 32
_WRITE_KEY = 'umask 077 && mkdir -- "$1" && cat > "$1/key"'


@dataclass(frozen=True)
class TrunkKey:
    """A pair's secret, as hex text (never printed: ``repr`` leaves it out)."""

    secret: str = field(repr=False)

    @classmethod
    def new(cls) -> TrunkKey:
        return cls(secrets.token_hex(KEY_BYTES))


def write_key(journal: Journal, node: Node, key: TrunkKey) -> tuple[str, Entry]:
    """Put ``key`` in a private file on ``node``'s machine: (its path, the journal entry that
    removes its folder; undo it once the relay has read the key)."""
    machine = node.machine
    folder = f"/tmp/harness-srdmux-{secrets.token_hex(8)}"
    entry = journal.record("file", machine, path=folder)
    try:
        machine.run(["sh", "-c", _WRITE_KEY, "sh", folder], stdin=key.secret.encode(), timeout=30,
                    hint="the node's /tmp must be writable")
    except BaseException:
        journal.undo(entry)
        raise
    return f"{folder}/key", entry
