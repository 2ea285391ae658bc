"""Which function undoes which kind of journalled change, and which modules may be
imported to find one.

Apart from :mod:`harness.journal.journal` so that the journal, its built-in kinds and the ~20
modules that register handlers (``harness.config.*``, :mod:`harness.net.backend`,
:mod:`harness.journal.tracked`, ...) all read one table that imports nothing of theirs. Those
modules still import :func:`undo_handler` from :mod:`harness.journal.journal`, which re-exports it.

A handler registered with :func:`undo_handler` is remembered with the module that defined
it; a journal record names that module, so a process that reads the journal later
(``harness lab clean`` after a SIGKILL) imports exactly it. :func:`load_undo_handlers`
imports only harness modules whose source registers handlers: a record is never a way
to import anything else.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from ..nodes import Node
from . import undo_checks

UndoFn = Callable[[Node, dict], "str | None"]  # None: as found; a str: as found, with a note
BatchUndoFn = Callable[[Node, list[dict]], None]
_HANDLERS: dict[str, UndoFn] = {}
_BATCH_HANDLERS: dict[str, BatchUndoFn] = {}
_GONE_WITH_NAMESPACE: set[str] = set()
_MODULES: dict[str, str] = {}  # kind -> module that registered its undo handler
#: The modules that registered undo handlers before the flat modules became packages (issue
#: 36), under ``harness.``: a journal written before then names them, and archived runs keep
#: their journals (data/reference), so a record naming one is read as naming today's module.
_MOVED = {"journal": "journal.journal", "netbackend": "net.backend", "tracked": "journal.tracked"}


def undo_handler(kind: str, gone_with_namespace: bool = True) -> Callable[[UndoFn], UndoFn]:
    """Register the function that undoes changes of ``kind``.

    ``gone_with_namespace``: a change of this kind made inside a network
    namespace disappears when the namespace is deleted (links, addresses,
    qdiscs, routes, per-namespace sysctls), so undo skips it then.
    """

    def register(fn: UndoFn) -> UndoFn:
        _HANDLERS[kind] = fn
        _MODULES[kind] = fn.__module__
        if gone_with_namespace:
            _GONE_WITH_NAMESPACE.add(kind)
        return fn

    return register


def batch_undo_handler(kind: str) -> Callable[[BatchUndoFn], BatchUndoFn]:
    """Register a function that undoes several changes of ``kind`` on one node at once.

    Undo uses it for sequences of consecutive entries of that kind on the same node
    (e.g. the namespaces of a lab): one command instead of one per entry, which
    matters when each command is a round trip to an emulated VM. The kind also
    needs its single-entry :func:`undo_handler`.
    """

    def register(fn: BatchUndoFn) -> BatchUndoFn:
        _BATCH_HANDLERS[kind] = fn
        return fn

    return register


def load_undo_handlers(module: str = "") -> None:
    """Import the module that registers a kind's undo handler.

    ``module`` comes from the journal entry: it is imported only if it is one of
    the harness's own modules that register handlers (a record naming any other
    is refused, :class:`~harness.journal.undo_checks.RefusedRecord`). Entries written
    before entries named their module have none: then every module under
    ``harness.config`` is imported, and every other harness module whose source
    registers a handler (found by walking the package with pkgutil, not by a list).
    """
    import importlib

    if module:
        undo_checks.python_module("module", module)
        module = module_today(module)
        if module not in _handler_modules():
            raise undo_checks.refuse("module", "not a harness module with undo handlers",
                                     module)
        importlib.import_module(module)
        return
    for name in _handler_modules():
        importlib.import_module(name)


def module_today(module: str) -> str:
    """The module a journal record names, under today's name (the flat ``netbackend`` of
    before -> ``harness.net.backend``); any other name as it is."""
    top, _, rest = module.partition(".")
    return f"harness.{_MOVED[rest]}" if top == "harness" and rest in _MOVED else module


@functools.lru_cache(maxsize=1)
def _handler_modules() -> tuple[str, ...]:
    """Modules of the ``harness`` package that register undo handlers (read, not imported)."""
    import pkgutil

    import harness

    found = []

    def walk(paths: list[str], prefix: str) -> None:
        for info in pkgutil.iter_modules(paths):
            name = prefix + info.name
            if info.ispkg:
                walk([os.path.join(info.module_finder.path, info.name)], name + ".")
                continue
            module_spec = info.module_finder.find_spec(name.rsplit(".", 1)[-1], None)
            origin = module_spec.origin if module_spec else None
            try:
                text = Path(origin).read_text() if origin else ""
            except OSError:
                text = ""
            # this module defines undo_handler but registers none: a record naming it is
            # refused as before the registry left harness.journal.journal
            if name != __name__ and (name.startswith("harness.config.")
                                     or "undo_handler(" in text):
                found.append(name)

    walk(list(harness.__path__), "harness.")
    return tuple(found)
