"""Node configuration as fact -> diff -> journal -> apply -> record.

Each operation (:mod:`harness.config.operation`) reads the current state
first, changes nothing when the node already is as asked, records the old
state in the journal *before* changing it, and its record (a
:class:`ChangeRecord`) is kept in the journal beside the undo data: the run's
configuration list is a view of the journal. The journal's undo handler
restores exactly the recorded old state.
"""

from .operation import UNKNOWN, Change, Fact, Operation, apply, describe, plan
from .record import ChangeRecord

__all__ = ["UNKNOWN", "Change", "ChangeRecord", "Fact", "Operation", "apply", "describe", "plan"]
