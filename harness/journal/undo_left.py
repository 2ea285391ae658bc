"""An undo is verified, never assumed: each handler looks after it acts (issue 40).

An undo handler says whether the state is now as found by looking, in the same round trip
as its command (each is ~0.5 s into a TCG VM): :func:`settle` runs the handler's ``act``
(its undo command, whose own exit status decides nothing) and then its ``look`` (a shell
test that exits 0 when the state is as found: the cgroup folder gone, the link gone, the
bearer disabled, the sysctl back to its value). "Already gone" is success; "still there"
is :class:`UndoLeft`, naming what is left, why (the command's own error and what the look
saw) and the command that would finish it. The journal records that as a failed undo,
never as undone, and ``harness lab clean`` retries it (:mod:`harness.journal.journal`).

A transient failure is waited out within a bound (``wait``): a cgroup whose processes are
still leaving, a mount still busy. Between tries the handler may act on what the look saw
(``between``: the cgroup's handler stops the run's own recorded processes still in it).

A handler returns None when the state is as found, or a note (a string) when it is as
found for this run but something else now uses what the run made (a kernel module another
module has come to depend on): then the journal records it undone, with the note.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..errors import HarnessError
from ..nodes import Node, Result

#: The exit status of ``harness run`` and ``harness lab clean`` when something the run
#: changed is still there (the run's record, or `lab clean`'s output, says what).
EXIT_LEFT_BEHIND = 3


class UndoLeft(HarnessError):
    """An undo's command ran and the state is not as found: ``what`` is still there."""

    def __init__(self, what: str, why: str, finish: str):
        self.what, self.why, self.finish = what, why, finish
        super().__init__(f"{what} is still there: {why}",
                         f"finish it by hand: {finish}, or run `harness lab clean` later")


def script(act: str, look: str) -> str:
    """Shell: run ``act`` (its output and status are kept for the failure message only),
    then exit with ``look``'s status (its stdout: what it saw; its stderr dropped); on
    failure ``act``'s error goes to stderr."""
    return (f"err=$( {{ {act}\n}} 2>&1 >/dev/null ); if {{ {look}\n}} 2>/dev/null; then exit 0; fi; "
            "[ -z \"$err\" ] || printf '%s\\n' \"$err\" >&2; exit 1")


def settle(node: Node, *, act: str, look: str, what: str, finish: str, wait: float = 0.0,
           interval: float = 0.3, timeout: float = 60,
           between: Callable[[Result], None] | None = None) -> Result:
    """Run ``act`` and then ``look`` on ``node`` until ``look`` says the state is as found,
    for at most ``wait`` seconds (0: one try); return the last try's result, or raise
    :class:`UndoLeft` naming ``what``, why and ``finish`` (the command that would finish
    it). ``between(result)`` runs between tries (``result``: the try that failed)."""
    deadline = time.monotonic() + wait
    tries = 0
    while True:
        tries += 1
        res = node.run(script(act, look), check=False, timeout=timeout)
        if res.ok:
            return res
        if time.monotonic() >= deadline:
            break
        if between is not None:
            between(res)
        time.sleep(interval)
    why = " ".join((res.stderr.strip() or "its undo command reported nothing").split())
    seen = " ".join(res.stdout.split())
    if seen:
        why += f" (found: {seen})"
    if tries > 1:
        why += f" after {tries} tries in {wait:g} s"
    raise UndoLeft(what, why[:600], finish)


def expect(found, wanted, what: str, finish: str, tried: Result | None = None) -> None:
    """A look done in Python (a fact read again after the undo command ``tried``, whose own
    exit status decides nothing): raise :class:`UndoLeft` unless ``found`` is ``wanted``."""
    if found != wanted:
        error = " ".join(tried.stderr.split())[:300] if tried is not None and not tried.ok else ""
        raise UndoLeft(what, f"it is {found!r} after its undo, was {wanted!r} before the run"
                       + (f" ({error or 'its command exited ' + str(tried.exit_status)})"
                          if tried is not None and not tried.ok else ""), finish)
