"""Ctrl-C held while the journal makes or undoes what must not be cut in two.

A second Ctrl-C during teardown would leave half a run's changes behind; one between
starting a process and recording it would leak the process. Inside :func:`signals_deferred`
SIGINT and SIGTERM are caught and kept, and raised as :class:`KeyboardInterrupt` once the
block is done.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while undoing, so a second Ctrl-C cannot cut teardown short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, lambda s, _f: received.append(s))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if received:
            raise KeyboardInterrupt
