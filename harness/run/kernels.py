"""The kernel papermill starts for a run: talked to over Unix sockets, not TCP.

jupyter_client's default transport is TCP on 127.0.0.1, and ipykernel >= 7.3 warns on every
start that such a kernel "is running over TCP without encryption" (anyone on the machine who
can reach the port and read the connection file's key can talk to it). The kernel and
papermill always run on the same machine, so the fix is the transport ipykernel names
itself: IPC, i.e. Unix domain sockets, with no port open at all; the sockets live in a
private directory (mode 0700) that is removed with the kernel, and recorded in the run's
journal first: a harness killed hard (SIGKILL, the OOM killer) cannot remove it, and
``harness lab clean`` then does (the Slurm hard-kill test left one in /tmp per suite before).
The socket path is absolute:
jupyter_client's default IPC prefix ``kernel-ipc`` is relative, and kernel and client would
resolve it against different working directories (the notebook's folder and ours).
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..journal.journal import Journal
from ..nodes import LocalNode


@contextmanager
def ipc_kernel(journal: Journal) -> Iterator[dict]:
    """Keyword arguments for ``papermill.execute_notebook`` that start its kernel over IPC;
    the sockets' folder is a "file" record of ``journal`` (the run's), undone on the way out."""
    from traitlets.config import Config

    # short: sun_path holds 108 bytes
    folder = Path(tempfile.gettempdir()) / f"harness-kernel-{secrets.token_hex(4)}"
    entry = journal.record("file", LocalNode(), path=str(folder))
    try:
        os.mkdir(folder, 0o700)
        yield {"config": Config({"KernelManager": {"transport": "ipc", "ip": str(folder / "k")}})}
    finally:
        journal.undo(entry)
