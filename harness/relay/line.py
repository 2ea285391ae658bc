"""The relay's test and benchmark lab: a line client -- middle -- server, and sockets in it.

    client 198.18.0.1/24 ==veth== 198.18.0.2/24 middle 198.18.1.1/24 ==veth== 198.18.1.2/24 server

Addresses are from 198.18.0.0/15 (RFC 2544 benchmarking range). A relay in the
middle listens on 198.18.0.2 and connects to 198.18.1.2; with ``forwarding``
the middle also routes, which is the kernel baseline the relay is compared to.
Build it with :class:`harness.lab.lab.Lab` (journalled, removed on exit).
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading

from ..errors import NodeError
from ..nodes import Node
from ..topology.topology import Topology, TopologyBuilder

CLIENT_IP, MIDDLE_LEFT_IP = "198.18.0.1", "198.18.0.2"
MIDDLE_RIGHT_IP, SERVER_IP = "198.18.1.1", "198.18.1.2"


def line_topology(forwarding: bool = False, name: str = "relay-line") -> Topology:
    """Three nodes in a line, unshaped; the middle routes only if ``forwarding``."""
    return (
        TopologyBuilder(name)
        .node("client").node("middle", forwarding=forwarding).node("server")
        .link(("client", "eth0", f"{CLIENT_IP}/24"), ("middle", "left", f"{MIDDLE_LEFT_IP}/24"))
        .link(("middle", "right", f"{MIDDLE_RIGHT_IP}/24"), ("server", "eth0", f"{SERVER_IP}/24"))
        .route("client", "198.18.1.0/24", via=MIDDLE_LEFT_IP)
        .route("server", "198.18.0.0/24", via=MIDDLE_RIGHT_IP)
        .build("study S0 relay lab: client -- middle (relay or router) -- server")
    )


_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def netns_socket(node: Node, family: int = socket.AF_INET,
                 kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A socket that lives in ``node``'s network namespace, usable from any thread.

    A socket belongs to the namespace it was created in, and setns() changes only
    the calling thread: a short-lived thread enters the namespace, creates the
    socket and ends, so the rest of this process stays where it was. This lets a
    test drive many connections from one process without a helper process per
    connection. ``node`` must be a namespace of this machine.
    """
    path = node.netns_path
    if path is None or not node.is_local:
        raise NodeError(f"{node.name} is not a network namespace of this machine",
                        "netns_socket needs a lab node built on the controlling machine")
    out: dict = {}

    def create() -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _libc.setns(fd, _CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({path}): {os.strerror(err)}")
                out["sock"] = socket.socket(family, kind)
            finally:
                os.close(fd)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=create, name=f"setns-{node.name}")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["sock"]
