"""Ping-pong with Nagle's algorithm on (``--nagle``), over loopback: light, a few round trips."""

from __future__ import annotations

import socket
import threading

from harness.nodes.local import wait_until
from harness.nodes.result import Result
from harness.tools import pingpong


def _nodelay(sock: socket.socket) -> int:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def _server() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    threading.Thread(target=pingpong.serve, args=("127.0.0.1", port), daemon=True).start()
    assert wait_until(lambda: pingpong.probe("127.0.0.1", port, 0.2) == 0, 10, 0.05)
    return port


def test_nagle_is_switched_off_at_both_ends_only_when_asked():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(2)
    port = listener.getsockname()[1]
    ends: list[socket.socket] = []

    def accept_two() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            ends.append(conn)
            threading.Thread(target=pingpong.serve_connection, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_two, daemon=True).start()
    try:
        for nagle, expected in ((False, 1), (True, 0)):
            sock = pingpong.connect("127.0.0.1", port, nagle=nagle)
            # one round trip: the server has read every message sent before it
            sock.sendall(pingpong.HEADER.pack(b"P", 1, 1) + b"x")
            assert sock.recv(1) == b"x"
            assert bool(_nodelay(sock)) == bool(expected)
            assert bool(_nodelay(ends[-1])) == bool(expected)
            sock.sendall(pingpong.HEADER.pack(b"Q", 0, 0))
            sock.close()
    finally:
        listener.close()


def test_pingpong_with_nagle_measures_every_size_over_loopback():
    port = _server()
    result = pingpong.measure_targets([("tcp_nagle", "127.0.0.1", port)], [1, 4096], 0.01, 0.02,
                                      3, 500, 2, 1 << 24, False, nagle=True)
    assert result["nodelay"] is False
    points = result["targets"]["tcp_nagle"]["points"]
    assert [p["size"] for p in points] == [1, 4096]
    for point in points:
        assert point["latency"]["n"] >= 3 and point["latency"]["min_us"] > 0
        assert point["stream"]["bytes"] == point["stream"]["messages"] * point["size"]
    assert pingpong.measure_targets([("tcp", "127.0.0.1", port)], [1], 0.01, 0.01, 3, 100, 1,
                                    1 << 20, True)["nodelay"] is True


def test_the_command_line_and_the_harness_client_pass_nagle_on(monkeypatch):
    seen = {}

    def fake_measure(*args, **kwargs):
        seen["args"], seen["kwargs"] = args, kwargs
        return {"targets": {}}

    monkeypatch.setattr(pingpong, "measure_targets", fake_measure)
    pingpong.main(["client", "--target", "a=127.0.0.1:1", "--sizes", "1", "--nagle"])
    assert seen["args"][-1] is True
    pingpong.main(["client", "--target", "a=127.0.0.1:1", "--sizes", "1"])
    assert seen["args"][-1] is False and seen["kwargs"] == {"no_latency": False}
    pingpong.main(["client", "--target", "a=127.0.0.1:1", "--sizes", "1", "--no-latency"])
    assert seen["kwargs"] == {"no_latency": True}  # a bulk transfer only (S0's path capacity)

    class LocalNode:
        name, is_local = "here", True

        def run(self, argv, **_kw):
            seen["argv"] = argv
            return Result(self.name, " ".join(argv), '{"targets": {}}', "", 0, 0.0)

    pingpong.client(None, LocalNode(), {"a": ("127.0.0.1", 1)}, [1], 0.01, 0.01, nagle=True)
    assert seen["argv"][-1] == "--nagle"
    pingpong.client(None, LocalNode(), {"a": ("127.0.0.1", 1)}, [1], 0.01, 0.01)
    assert "--nagle" not in seen["argv"]
