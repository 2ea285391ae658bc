"""What a VM node must demonstrably do for the studies that need one.

Used by the integration tests and by ``benchmarks/vm_bench.py``; each check
returns measured numbers (for the run record), and the caller decides what
is good enough. Everything runs through the VM's SSH node; labs inside the
VM are ordinary :class:`harness.lab.Lab` namespace labs with ``host=vm``.
"""

from __future__ import annotations

import json
import re
import shlex
import statistics
import time
from dataclasses import asdict, dataclass

from ..journal import undo_handler
from ..nodes import Node

#: Modules the studies need from the guest kernel (PLATFORM.md).
STUDY_MODULES = ("tipc", "sctp", "sch_netem", "rdma_rxe")

# Per-segment bytes as the shaper counts them vs. what iperf3 counts: a
# 1500-byte MTU segment carries 1448 bytes of TCP payload (20 IP + 20 TCP +
# 12 timestamp option) and is 1514 bytes at the link layer (14 Ethernet).
LINK_BYTES_PER_SEGMENT = 1514
PAYLOAD_BYTES_PER_SEGMENT = 1448


def load_modules(vm: Node, modules=STUDY_MODULES) -> dict[str, bool]:
    """modprobe each module; return which are loaded afterwards (from /proc/modules)."""
    vm.run(["modprobe", "-a", *modules], timeout=120,
           hint="the guest must load modules of its own kernel from /lib/modules/$(uname -r)")
    loaded = {line.split()[0] for line in vm.read_text("/proc/modules").splitlines() if line}
    return {m: m in loaded for m in modules}


@dataclass(frozen=True)
class LinkMeasurement:
    rate_mbit: float  # configured shaper rate
    delay_ms: float  # configured one-way delay
    goodput_mbit: float  # iperf3 receiver, TCP payload
    link_layer_mbit: float  # goodput scaled to what the shaper counts
    link_layer_ratio: float  # link_layer_mbit / rate_mbit
    rtt_median_ms: float
    rtt_min_ms: float
    rtt_max_ms: float
    pings: int
    iperf_seconds: float
    retransmits: int | None

    def to_dict(self) -> dict:
        return asdict(self)


def iperf3_goodput(journal, client: Node, server: Node, server_ip: str, seconds: int = 10,
                   omit: int = 2) -> tuple[float, int | None]:
    """Receiver-side TCP goodput (Mbit/s) client -> server, and retransmits.

    The server is a journalled background process, stopped on any exit.
    """
    with journal.process(server, ["iperf3", "-s", "-1", "--forceflush"]) as proc:
        deadline = time.monotonic() + 60
        while "Server listening" not in proc.output():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"iperf3 server did not start: {proc.output()[-300:]}")
            time.sleep(0.3)
        res = client.run(["iperf3", "-c", server_ip, "-t", str(seconds), "-O", str(omit),
                          "-J"], timeout=seconds + omit + 90)
    end = json.loads(res.stdout)["end"]
    goodput = end["sum_received"]["bits_per_second"] / 1e6
    return goodput, end.get("sum_sent", {}).get("retransmits")


_RTT = re.compile(r"time=([0-9.]+) ms")


def ping_rtt(client: Node, target_ip: str, count: int = 20,
             interval: float = 0.2) -> list[float]:
    """RTTs (ms) of ``count`` pings, in order. The first one is sent before the
    neighbour is resolved, so callers usually look at the median."""
    res = client.run(["ping", "-n", "-c", str(count), "-i", str(interval), target_ip],
                     timeout=count * interval + 60)
    rtts = [float(x) for x in _RTT.findall(res.stdout)]
    if not rtts:
        raise ValueError(f"no replies in ping output: {res.stdout!r}")
    return rtts


def measure_link(journal, a: Node, b: Node, b_ip: str, rate_mbit: float, delay_ms: float,
                 seconds: int = 10) -> LinkMeasurement:
    """Ping RTT and iperf3 rate from ``a`` to ``b`` over a shaped link."""
    rtts = ping_rtt(a, b_ip)
    goodput, retrans = iperf3_goodput(journal, a, b, b_ip, seconds=seconds)
    link = goodput * LINK_BYTES_PER_SEGMENT / PAYLOAD_BYTES_PER_SEGMENT
    return LinkMeasurement(
        rate_mbit=rate_mbit, delay_ms=delay_ms, goodput_mbit=round(goodput, 2),
        link_layer_mbit=round(link, 2), link_layer_ratio=round(link / rate_mbit, 4),
        rtt_median_ms=statistics.median(rtts), rtt_min_ms=min(rtts), rtt_max_ms=max(rtts),
        pings=len(rtts), iperf_seconds=seconds,
        retransmits=retrans,
    )


# -- TIPC and SCTP between two namespaces -------------------------------------

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
    node.run(f"tipc bearer disable media {shlex.quote(data['media'])} dev "
             f"{shlex.quote(data['dev'])} 2>/dev/null || true", timeout=30)


