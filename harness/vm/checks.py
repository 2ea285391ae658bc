"""What a VM node must demonstrably do for the studies that need one.

Used by the integration tests and by ``benchmarks/vm_bench.py``; each check
returns measured numbers (for the run record), and the caller decides what
is good enough. Everything runs through the VM's SSH node; labs inside the
VM are ordinary :class:`harness.lab.lab.Lab` namespace labs with ``host=vm``,
and their links are measured by the one link checker, :mod:`harness.lab.verify`.
"""

from __future__ import annotations

import shlex
import time

from ..config.tipc import disable_bearer
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..nodes import Node

#: Modules the studies need from the guest kernel (PLATFORM.md).
STUDY_MODULES = ("tipc", "sctp", "sch_netem", "rdma_rxe")

def load_modules(vm: Node, modules=STUDY_MODULES) -> dict[str, bool]:
    """modprobe each module; return which are loaded afterwards (from /proc/modules)."""
    vm.run(["modprobe", "-a", *modules], timeout=120,
           hint="the guest must load modules of its own kernel from /lib/modules/$(uname -r)")
    loaded = {line.split()[0] for line in vm.read_text("/proc/modules").splitlines() if line}
    return {m: m in loaded for m in modules}


TIPC_SERVICE = 18888

_TIPC_SERVER = r"""
import socket, sys
s = socket.socket(socket.AF_TIPC, socket.SOCK_RDM)
s.bind((socket.TIPC_ADDR_NAMESEQ, %(svc)d, 1, 1))
print("READY", flush=True)
s.settimeout(%(timeout)d)
data, peer = s.recvfrom(65536)
s.sendto(data[::-1], peer)
print("SERVED", len(data), flush=True)
"""

_TIPC_CLIENT = r"""
import socket, sys, time
payload = b"harness-tipc-" + bytes(range(256)) * 16
s = socket.socket(socket.AF_TIPC, socket.SOCK_RDM)
s.settimeout(5)
deadline = time.monotonic() + %(timeout)d
while True:  # the name is published once the link between the nodes is up
    try:
        s.sendto(payload, (socket.TIPC_ADDR_NAME, %(svc)d, 1, 0))
        data = s.recv(65536)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.5)
print("OK" if data == payload[::-1] else "MISMATCH", len(data))
"""

_SCTP_SERVER = r"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("%(ip)s", %(port)d))
s.listen(1)
print("READY", flush=True)
s.settimeout(%(timeout)d)
c, _ = s.accept()
buf = b""
while len(buf) < %(size)d:
    chunk = c.recv(65536)
    if not chunk:
        break
    buf += chunk
c.sendall(buf[::-1])
c.close()
print("SERVED", len(buf), flush=True)
"""

_SCTP_CLIENT = r"""
import socket, time
payload = b"harness-sctp-" + bytes(range(256)) * 256
payload = payload[:%(size)d]
deadline = time.monotonic() + %(timeout)d
while True:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
    s.settimeout(10)
    try:
        s.connect(("%(ip)s", %(port)d))
        break
    except OSError:
        s.close()
        if time.monotonic() > deadline:
            raise
        time.sleep(0.5)
s.sendall(payload)
buf = b""
while len(buf) < len(payload):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
print("OK" if buf == payload[::-1] else "MISMATCH", len(buf))
"""


def _python(node: Node, script: str, timeout: float):
    return node.run(["python3", "-c", script], timeout=timeout, check=False)


def _serve(journal, server: Node, script: str):
    """Start a one-shot server in the background (journalled) and wait until it is READY."""
    proc = journal.start(server, ["python3", "-c", script])
    deadline = time.monotonic() + 90
    while "READY" not in proc.output():
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.output()
            journal.stop(proc)
            raise RuntimeError(f"server did not start: {out.strip()[-300:]}")
        time.sleep(0.3)
    return proc


def tipc_exchange(journal, a: Node, b: Node, dev_a: str, dev_b: str,
                  timeout: int = 60) -> dict:
    """Enable a TIPC Ethernet bearer in both namespaces and pass a message a -> b -> a.

    Each namespace is its own TIPC node (identity derived from its MAC); the
    bearers are enabled through ``tipc`` (iproute2) and journalled so they are
    disabled again (namespace deletion would also remove them).
    """
    for node, dev in ((a, dev_a), (b, dev_b)):
        journal.record("tipc_bearer", node, media="eth", dev=dev)
        node.run(["tipc", "bearer", "enable", "media", "eth", "dev", dev], timeout=60)
    params = {"svc": TIPC_SERVICE, "timeout": timeout}
    started = time.monotonic()
    proc = _serve(journal, b, _TIPC_SERVER % params)
    try:
        res = _python(a, _TIPC_CLIENT % params, timeout + 60)
        proc.wait(timeout + 30)
        served = proc.output()
    finally:
        journal.stop(proc)
    links = a.run(["tipc", "link", "list"], check=False, timeout=30).stdout.strip()
    return {
        "ok": res.ok and res.stdout.startswith("OK") and "SERVED" in served,
        "client": (res.stdout + res.stderr).strip()[-300:],
        "server": served.strip()[-200:],
        "links": links,
        "seconds": round(time.monotonic() - started, 2),
    }


def sctp_exchange(journal, a: Node, b: Node, b_ip: str, port: int = 9899,
                  size: int = 60000, timeout: int = 60) -> dict:
    """Open an SCTP association a -> b and echo ``size`` bytes back."""
    params = {"ip": b_ip, "port": port, "size": size, "timeout": timeout}
    started = time.monotonic()
    proc = _serve(journal, b, _SCTP_SERVER % params)
    try:
        res = _python(a, _SCTP_CLIENT % params, timeout + 60)
        proc.wait(timeout + 30)
        served = proc.output()
    finally:
        journal.stop(proc)
    return {
        "ok": res.ok and res.stdout.startswith("OK") and "SERVED" in served,
        "client": (res.stdout + res.stderr).strip()[-300:],
        "server": served.strip()[-200:],
        "seconds": round(time.monotonic() - started, 2),
    }


@undo_handler("tipc_bearer")
def _undo_tipc_bearer(node: Node, data: dict) -> None:
    if data.get("media") != "eth":
        raise undo_checks.refuse("tipc_bearer", "media is not eth", data.get("media"))
    dev = undo_checks.ifname("tipc_bearer", data.get("dev"), "dev")
    disable_bearer(node, f"media eth device {shlex.quote(dev)}", f"eth:{dev}")
