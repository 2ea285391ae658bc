"""Node configuration as probe -> apply -> record -> restore.

Each operation reads the current state first, changes nothing when the node
already is as asked, records the old state in the journal *before* changing
it, and returns a :class:`ChangeRecord` for the run's archive. The journal's
undo handler restores exactly the recorded old state.
"""

from .record import ChangeRecord, ConfigLog

__all__ = ["ChangeRecord", "ConfigLog"]
