"""The msgcount server on a node for a block, started and stopped by the journal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import HarnessError
from ..journal.journal import Journal
from ..nodes import Node
from ..nodes.base import Process
from ..nodes.facts import wait_listening
from .spec import serve_argv


@contextmanager
def server(journal: Journal, node: Node, binary: str, address: str, port: int,
           timeout: float = 30.0) -> Iterator[Process]:
    """A msgcount server listening on ``address:port`` (it serves client after client)."""
    with journal.process(node, serve_argv(binary, address, port)) as proc:
        if not wait_listening(node, port, timeout) or proc.poll() is not None:
            raise HarnessError(f"msgcount server on {node.name} did not listen on "
                               f"{address}:{port}: {proc.output().strip()[-400:]}",
                               "is the port in use, or the address not on this node?")
        yield proc
