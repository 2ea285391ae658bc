"""The kernel papermill starts for a run: talked to over Unix sockets, not TCP.

jupyter_client's default transport is TCP on 127.0.0.1, and ipykernel >= 7.3 warns on every
start that such a kernel "is running over TCP without encryption" (anyone on the machine who
can reach the port and read the connection file's key can talk to it). The kernel and
papermill always run on the same machine, so the fix is the transport ipykernel names
itself: IPC, i.e. Unix domain sockets, with no port open at all; the sockets live in a
private directory (mode 0700) that is removed with the kernel. The socket path is absolute:
jupyter_client's default IPC prefix ``kernel-ipc`` is relative, and kernel and client would
resolve it against different working directories (the notebook's folder and ours).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def ipc_kernel() -> Iterator[dict]:
    """Keyword arguments for ``papermill.execute_notebook`` that start its kernel over IPC."""
    from traitlets.config import Config

    folder = Path(tempfile.mkdtemp(prefix="harness-kernel-"))  # short: sun_path holds 108 bytes
    try:
        yield {"config": Config({"KernelManager": {"transport": "ipc", "ip": str(folder / "k")}})}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
