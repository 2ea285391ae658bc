"""Real GridFTP transfers between two namespaces, over TCP and MPTCP.

The lab: client and server namespaces (unique names) joined by a veth pair in
198.18.0.0/15, the client's egress (the data direction) shaped to 200 Mbit/s
with htb. Everything is deleted by exact name afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from typing import Self

import pytest

from harness.errors import NodeError, SpecError
from harness.journal.journal import Journal
from harness.nodes import NamespaceNode
from harness.tools.gridftp import gridftp_server, gridftp_transfer, mptcp_counters

pytestmark = pytest.mark.integration

RATE_MBIT = 200
SIZE = 50_000_000  # 2 s at 200 Mbit/s: long enough to watch the sockets
CLIENT_ADDR, SERVER_ADDR = "198.18.0.1", "198.18.0.2"
PORT = 2811

_TOOLS = ("ip", "tc", "ss", "nsenter", "globus-gridftp-server", "globus-url-copy", "mptcpize")


def _missing_tools() -> list[str]:
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [t for t in _TOOLS if shutil.which(t, path=path) is None]


def _sh(command: str) -> None:
    subprocess.run(command.split(), check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def lab():
    if os.geteuid() != 0:
        pytest.skip("needs root to create network namespaces")
    if missing := _missing_tools():
        pytest.skip(f"missing tools: {', '.join(missing)}")
    if not os.path.exists("/proc/sys/net/mptcp/enabled"):
        pytest.skip("kernel without MPTCP")
    tag = uuid.uuid4().hex[:8]
    cns, sns = f"gftpc-{tag}", f"gftps-{tag}"
    cdev, sdev = f"gfc{tag}", f"gfs{tag}"
    created: list[str] = []
    try:
        for ns in (cns, sns):
            _sh(f"ip netns add {ns}")
            created.append(ns)
        _sh(f"ip link add {cdev} netns {cns} type veth peer name {sdev} netns {sns}")
        for ns, dev, addr in ((cns, cdev, CLIENT_ADDR), (sns, sdev, SERVER_ADDR)):
            _sh(f"ip -n {ns} addr add {addr}/24 dev {dev}")
            _sh(f"ip -n {ns} link set {dev} up")
            _sh(f"ip -n {ns} link set lo up")
        # Shape the data direction (client -> server); burst >= 2 ms of rate.
        _sh(f"ip netns exec {cns} tc qdisc add dev {cdev} root handle 1: htb default 1")
        _sh(
            f"ip netns exec {cns} tc class add dev {cdev} parent 1: classid 1:1 htb"
            f" rate {RATE_MBIT}mbit ceil {RATE_MBIT}mbit burst 64k cburst 64k quantum 1514"
        )
        yield NamespaceNode(cns, name="client"), NamespaceNode(sns, name="server")
    finally:
        for ns in reversed(created):
            subprocess.run(
                ["ip", "netns", "delete", ns], check=False, capture_output=True, timeout=30
            )


@pytest.fixture
def journal(tmp_path):
    j = Journal(tmp_path / "journal.jsonl")
    yield j
    assert not j.pending(), f"left behind: {j.pending()}"


class SocketWatcher:
    """Samples established sockets on the server while a transfer runs."""

    def __init__(self, node: NamespaceNode, control_port: int):
        self.node, self.control_port = node, control_port
        self.max_tcp = self.max_mptcp = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _count(self, flag: str) -> int:
        out = self.node.run(["ss", "-Hn", flag, "state", "established"], timeout=10).stdout
        # Columns with a state filter: Recv-Q Send-Q Local:Port Peer:Port
        return sum(
            1
            for line in out.splitlines()
            if line.split() and int(line.split()[2].rsplit(":", 1)[1]) != self.control_port
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            self.max_tcp = max(self.max_tcp, self._count("-t"))
            self.max_mptcp = max(self.max_mptcp, self._count("-M"))
            self._stop.wait(0.1)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _proc_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def transfers_logged(server, count: int = 1, timeout: float = 30.0):
    """The server's "Transfer stats" lines once ``count`` are there: the session process
    that writes one need not have written it when the client has its 226 reply."""
    deadline = time.monotonic() + timeout
    while True:
        stats = server.transfers()
        if len(stats) >= count or time.monotonic() > deadline:
            return stats
        time.sleep(0.2)


@pytest.mark.parametrize("streams", [1, 4])
def test_tcp_transfer_moves_bytes_over_n_connections(lab, journal, streams):
    client, server_node = lab
    before = mptcp_counters(server_node).get("MPCapableSYNRX", 0)
    with gridftp_server(journal, server_node, SERVER_ADDR, PORT) as server:
        with SocketWatcher(server_node, PORT) as watcher:
            result = gridftp_transfer(client, SERVER_ADDR, PORT, SIZE, streams, timeout=120)
        stats = transfers_logged(server)

    assert result.transport == "tcp" and result.bytes == SIZE and result.streams == streams
    assert [(s.nbytes, s.streams, s.code) for s in stats] == [(SIZE, streams, 226)]
    assert stats[0].dest == CLIENT_ADDR
    assert watcher.max_tcp == streams, f"saw {watcher.max_tcp} data connections"
    assert watcher.max_mptcp == 0
    assert mptcp_counters(server_node).get("MPCapableSYNRX", 0) == before
    # Shaped at 200 Mbit/s on the wire; goodput must be below it and not far below.
    assert 0.55 * RATE_MBIT < result.mbit_per_s < 1.02 * RATE_MBIT, result.mbit_per_s
    assert stats[0].mbit_per_s < 1.02 * RATE_MBIT


def test_mptcp_transfer_uses_mptcp_sockets(lab, journal):
    client, server_node = lab
    streams = 4
    before = mptcp_counters(server_node)
    with gridftp_server(journal, server_node, SERVER_ADDR, PORT, mptcp=True) as server:
        with SocketWatcher(server_node, PORT) as watcher:
            result = gridftp_transfer(
                client, SERVER_ADDR, PORT, SIZE, streams, mptcp=True, timeout=120
            )
        stats = transfers_logged(server)
    after = mptcp_counters(server_node)

    assert result.transport == "mptcp"
    assert [(s.nbytes, s.streams, s.code) for s in stats] == [(SIZE, streams, 226)]
    assert watcher.max_mptcp == streams, f"saw {watcher.max_mptcp} MPTCP data sockets"
    # One MP_CAPABLE handshake for the control channel plus one per data stream.
    syn_rx = after["MPCapableSYNRX"] - before.get("MPCapableSYNRX", 0)
    assert syn_rx == streams + 1
    assert after.get("MPCapableFallbackACK", 0) == before.get("MPCapableFallbackACK", 0)
    assert 0.55 * RATE_MBIT < result.mbit_per_s < 1.02 * RATE_MBIT, result.mbit_per_s


def test_mptcp_on_client_only_falls_back_to_tcp(lab, journal):
    """PLATFORM.md: GridFTP runs over MPTCP only when both ends are wrapped."""
    client, server_node = lab
    before = mptcp_counters(client).get("MPCapableSYNTX", 0)
    with gridftp_server(journal, server_node, SERVER_ADDR, PORT, mptcp=False) as server:
        with SocketWatcher(server_node, PORT) as watcher:
            gridftp_transfer(client, SERVER_ADDR, PORT, SIZE, 2, mptcp=True, timeout=120)
        assert transfers_logged(server)[0].nbytes == SIZE
    assert mptcp_counters(client).get("MPCapableSYNTX", 0) > before  # client asked for MPTCP
    assert watcher.max_mptcp == 0 and watcher.max_tcp == 2  # ... and got plain TCP


def test_server_is_gone_after_the_block(lab, journal):
    _client, server_node = lab
    with gridftp_server(journal, server_node, SERVER_ADDR, PORT, mptcp=True) as server:
        pid = server.daemon_pid
        log_path = server.log_path
        assert pid is not None and _proc_alive(pid)
        assert os.path.exists(log_path)
    assert not _proc_alive(pid)
    assert not os.path.exists(log_path)
    listeners = server_node.run(["ss", "-Hltn", "sport", "=", f":{PORT}"]).stdout
    assert listeners.strip() == ""


def test_server_stopped_mid_transfer_leaves_nothing(lab, journal):
    client, server_node = lab
    errors: list[BaseException] = []

    def upload() -> None:
        try:
            gridftp_transfer(client, SERVER_ADDR, PORT, 20 * SIZE, 2, timeout=60)
        except BaseException as exc:  # noqa: BLE001 - the transfer must fail
            errors.append(exc)

    with gridftp_server(journal, server_node, SERVER_ADDR, PORT) as server:
        thread = threading.Thread(target=upload)
        thread.start()
        with SocketWatcher(server_node, PORT) as watcher:
            for _ in range(50):
                if watcher.max_tcp:
                    break
                threading.Event().wait(0.1)
        session_pids = {
            s.split("pid=")[1].split(",")[0]
            for s in server_node.run(["ss", "-Htnp", "state", "established"]).stdout.split()
            if "pid=" in s
        }
        daemon = server.daemon_pid
    thread.join(timeout=90)
    assert errors, "the upload should fail when the server is stopped"
    assert session_pids and daemon is not None
    for pid in {daemon, *map(int, session_pids)}:
        assert not _proc_alive(pid), f"pid {pid} survived"


def test_port_in_use_is_a_clear_error(lab, journal):
    _client, server_node = lab
    with (
        gridftp_server(journal, server_node, SERVER_ADDR, PORT),
        pytest.raises(NodeError) as excinfo,
        gridftp_server(journal, server_node, SERVER_ADDR, PORT, ready_timeout=10),
    ):
        pass
    message = str(excinfo.value)
    assert "exited with status" in message and "Could not start server" in message


def test_address_not_on_the_server_node(lab, journal):
    _client, server_node = lab
    with (
        pytest.raises(SpecError, match="not assigned"),
        gridftp_server(journal, server_node, CLIENT_ADDR, PORT),
    ):
        pass
