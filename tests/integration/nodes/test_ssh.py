"""SSHNode and ShellProcess.

Two layers:
- tests without root: error messages against real sockets on loopback (a
  closed port, a silent listener, an in-process paramiko server that completes
  key exchange and then refuses every login), the remote wrapper run by a
  local shell, and ShellProcess driving a LocalNode;
- ``integration`` tests against Debian's OpenSSH sshd in a fresh network
  namespace (see sshd_fixture.py), covering commands, streams, timeouts,
  SFTP, background processes, host key policy and connection reuse.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import paramiko
import pytest

from harness.errors import CommandFailed, CommandTimeout, NodeError
from harness.journal.journal import Journal, remove_process_log
from harness.nodes import LocalNode, node_from_description
from harness.nodes.hostkeys import fingerprint
from harness.nodes.local import process_start_ticks, wait_until
from harness.nodes.remote_process import ShellProcess
from harness.nodes.ssh import SSHNode, remote_command, split_marker

try:  # as a package (tests/integration/__init__.py) or as a rootdir-relative module
    from .sshd_fixture import in_sshd_netns, sshd_server
except ImportError:
    from sshd_fixture import in_sshd_netns, sshd_server  # noqa: F401  (fixtures)


def blob_fingerprint(pub_line: str) -> str:
    """SHA256 fingerprint of an OpenSSH public key line, computed independently of the node."""
    blob = base64.b64decode(pub_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def alive(pid: int, ticks: int) -> bool:
    """Same process still running (not a zombie, not a reused PID)?"""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            rest = fh.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return int(rest[19]) == ticks and rest[0] not in ("Z", "X")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the remote wrapper, run by a local shell ----------------------------------


def test_remote_command_reports_group_and_keeps_streams_and_status():
    proc = subprocess.run(
        ["bash", "-c", remote_command("echo out; echo err >&2; exit 3", 10)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    pgid, err = split_marker(proc.stderr)
    assert (proc.returncode, proc.stdout, err) == (3, b"out\n", b"err\n")
    assert pgid is not None and pgid > 1


def test_remote_command_death_by_signal_is_128_plus_n():
    proc = subprocess.run(["bash", "-c", remote_command("kill -9 $$", 10)], timeout=30, check=False)
    assert proc.returncode == 137


def test_remote_timeout_is_a_dead_mans_switch(tmp_path):
    """Even if nobody kills it, the wrapped command and its children die after timeout+slack."""
    child = tmp_path / "child.pid"
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", "-c", remote_command(f"sleep 60 & echo $! > {child}; wait", 0.5, slack=0.5)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 124  # coreutils timeout
    assert time.monotonic() - started < 10
    pid = int(child.read_text())
    assert wait_until(lambda: not alive(pid, process_start_ticks(pid) or -1), 5)


def test_split_marker_leaves_other_lines():
    assert split_marker(b"motd\n__harness_pgid__=42\nerr\n") == (42, b"motd\nerr\n")
    assert split_marker(b"no marker\n") == (None, b"no marker\n")


# -- description ---------------------------------------------------------------


def test_describe_roundtrip_has_no_secrets(tmp_path):
    key = paramiko.RSAKey.generate(2048)
    key_path = tmp_path / "id_rsa"
    key.write_private_key_file(str(key_path))
    secret = key_path.read_text().splitlines()[1]  # a line of the private key
    node = SSHNode(
        "h1",
        "192.0.2.10",
        port=2200,
        user="bench",
        key_filename=str(key_path),
        known_hosts=str(tmp_path / "kh"),
        connect_timeout=3,
    )
    desc = node.describe()
    text = json.dumps(desc)
    assert desc["type"] == "ssh" and desc["key_filename"] == str(key_path)
    assert secret not in text and "PRIVATE KEY" not in text and "pass" not in text.lower()
    rebuilt = node_from_description(json.loads(text))
    assert isinstance(rebuilt, SSHNode) and rebuilt.describe() == desc
    assert SSHNode.from_description(desc).describe() == desc


# -- connection errors against real loopback sockets ---------------------------


def test_refused_port_names_host_and_port(tmp_path):
    port = free_port()
    node = SSHNode("n", "127.0.0.1", port=port, known_hosts=str(tmp_path / "kh"))
    with pytest.raises(NodeError) as err:
        node.run("true")
    assert f"127.0.0.1:{port}" in str(err.value) and "refused" in str(err.value)
    assert "sshd" in err.value.hint


def test_silent_server_times_out_with_host_named(tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # accepts (kernel backlog) but never speaks SSH
        port = listener.getsockname()[1]
        node = SSHNode(
            "n", "127.0.0.1", port=port, known_hosts=str(tmp_path / "kh"), connect_timeout=1
        )
        started = time.monotonic()
        with pytest.raises(NodeError) as err:
            node.run("true")
    assert time.monotonic() - started < 10
    assert f"127.0.0.1:{port}" in str(err.value)


def test_unresolvable_host(tmp_path, monkeypatch):
    # Simulated resolver failure: a real lookup would query a resolver we do not own.
    def fail(*_a, **_k):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(paramiko.client.socket, "getaddrinfo", fail)
    node = SSHNode("n", "nosuchhost.invalid", known_hosts=str(tmp_path / "kh"))
    with pytest.raises(NodeError) as err:
        node.run("true")
    assert "nosuchhost.invalid" in str(err.value) and "resolve" in str(err.value)


def test_missing_key_file_is_reported_before_connecting(tmp_path):
    node = SSHNode("n", "127.0.0.1", port=free_port(), key_filename=str(tmp_path / "nokey"))
    with pytest.raises(NodeError, match="nokey does not exist"):
        node.run("true")


class RefusingServer:
    """A paramiko SSH server on 127.0.0.1: real key exchange with ``host_key``, then no login."""

    class _Iface(paramiko.ServerInterface):
        def get_allowed_auths(self, username):
            return "publickey"

    def __init__(self, host_key: paramiko.PKey):
        self.host_key = host_key
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.transports: list[paramiko.Transport] = []
        self.closing = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.1)  # close() does not wake a blocked accept(): poll a flag
        while not self.closing:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            transport = paramiko.Transport(conn)
            transport.add_server_key(self.host_key)
            self.transports.append(transport)
            try:
                transport.start_server(server=self._Iface())
            except (paramiko.SSHException, EOFError, OSError):
                transport.close()

    def close(self):
        self.closing = True
        self.thread.join(5)
        self.sock.close()
        for transport in self.transports:
            transport.close()


@pytest.fixture(scope="module")
def rsa_keys():
    return [paramiko.RSAKey.generate(2048) for _ in range(3)]


@pytest.fixture
def refusing_server(rsa_keys):
    server = RefusingServer(rsa_keys[0])
    yield server
    server.close()


def _pub(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.get_base64()}"


def test_unknown_host_key_is_refused_with_fingerprint_and_fix(tmp_path, refusing_server, rsa_keys):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    node = SSHNode(
        "lab", "127.0.0.1", port=refusing_server.port, known_hosts=str(kh), key_filename=None
    )
    with pytest.raises(NodeError) as err:
        node.run("true")
    text = str(err.value)
    assert f"127.0.0.1:{refusing_server.port}" in text and "not known" in text
    assert blob_fingerprint(_pub(rsa_keys[0])) in text
    assert "ssh-keyscan" in err.value.hint and "accept_unknown_host=True" in err.value.hint
    assert kh.read_text() == ""


def test_opt_in_accepts_unknown_key_and_saves_it(tmp_path, refusing_server, rsa_keys):
    kh = tmp_path / "sub" / "known_hosts"  # missing directory is created
    user_key = tmp_path / "id_rsa"
    rsa_keys[2].write_private_key_file(str(user_key))
    node = SSHNode(
        "lab",
        "127.0.0.1",
        port=refusing_server.port,
        known_hosts=str(kh),
        key_filename=str(user_key),
        accept_unknown_host=True,
    )
    with pytest.raises(NodeError) as err:  # host key accepted; then login is refused
        node.run("true")
    assert "authentication as 'root' failed" in str(err.value)
    assert f"root@127.0.0.1:{refusing_server.port}" in str(err.value)
    assert "authorized_keys" in err.value.hint and "password" in err.value.hint
    line = kh.read_text().split()
    assert line == [f"[127.0.0.1]:{refusing_server.port}", *_pub(rsa_keys[0]).split()]
    # A strict node now trusts the saved key: it gets as far as authentication.
    strict = SSHNode(
        "lab",
        "127.0.0.1",
        port=refusing_server.port,
        known_hosts=str(kh),
        key_filename=str(user_key),
    )
    with pytest.raises(NodeError, match="authentication"):
        strict.run("true")


@pytest.mark.parametrize("accept", [False, True])
def test_changed_host_key_is_always_refused(tmp_path, refusing_server, rsa_keys, accept):
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{refusing_server.port} {_pub(rsa_keys[1])}\n")
    before = kh.read_text()
    node = SSHNode(
        "lab",
        "127.0.0.1",
        port=refusing_server.port,
        known_hosts=str(kh),
        accept_unknown_host=accept,
    )
    with pytest.raises(NodeError) as err:
        node.run("true")
    text = str(err.value)
    assert "CHANGED" in text and f"127.0.0.1:{refusing_server.port}" in text
    assert blob_fingerprint(_pub(rsa_keys[1])) in text  # expected
    assert blob_fingerprint(_pub(rsa_keys[0])) in text  # offered
    assert "ssh-keygen -R" in err.value.hint
    assert kh.read_text() == before


# -- ShellProcess, driven through a LocalNode ------------------------------------


def test_shell_process_output_poll_stop_on_local_node():
    proc = ShellProcess.start(LocalNode(), "echo started; exec sleep 60")
    try:
        assert proc.info.start_ticks == process_start_ticks(proc.pid)
        assert wait_until(lambda: "started" in proc.output(), 10)
        assert proc.poll() is None and alive(proc.pid, proc.info.start_ticks)
        assert proc.stop() == 143  # the sleep died of SIGTERM: 128 + 15
        assert proc.poll() == 143 and proc.stop() == 143  # repeatable
        assert not alive(proc.pid, proc.info.start_ticks)
        assert not os.path.exists(proc.status_file)
    finally:
        proc.stop()
        remove_process_log(LocalNode(), proc.info.log)


def test_shell_process_exit_status_and_sigkill_escalation():
    node = LocalNode()
    done = ShellProcess.start(node, "echo bye; exit 4")
    stubborn = ShellProcess.start(node, "trap '' TERM; echo up; sleep 60 & wait")
    try:
        assert done.wait(10) == 4
        assert wait_until(lambda: "up" in stubborn.output(), 10)
        started = time.monotonic()
        assert stubborn.stop(grace=0.5) == -9  # ignored SIGTERM: killed, no status left
        assert 0.5 <= time.monotonic() - started < 8
        assert not alive(stubborn.pid, stubborn.info.start_ticks)
    finally:
        for proc in (done, stubborn):
            proc.stop()
            remove_process_log(LocalNode(), proc.info.log)


def test_shell_process_wait_timeout():
    proc = ShellProcess.start(LocalNode(), "sleep 30")
    try:
        with pytest.raises(CommandTimeout, match="did not finish within 0.3s"):
            proc.wait(0.3)
    finally:
        proc.stop()
        remove_process_log(LocalNode(), proc.info.log)


def test_shell_process_never_signals_a_reused_pid():
    """A recorded PID whose start time differs is someone else's process: leave it alone."""
    victim = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        ticks = process_start_ticks(victim.pid)
        from harness.nodes.base import ProcessInfo

        info = ProcessInfo({"type": "local"}, victim.pid, ticks - 1, "sleep 30", "/nonexistent")
        stale = ShellProcess(LocalNode(), info)
        assert stale.poll() == -1  # ours is gone, and left no status
        stale.stop(grace=0.2)
        time.sleep(0.2)
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


# -- against Debian's OpenSSH sshd in a namespace ---------------------------------


@pytest.fixture
def make_node(in_sshd_netns, tmp_path):
    """SSHNode factory for the test sshd; every node is closed afterwards."""
    server = in_sshd_netns
    nodes: list[SSHNode] = []

    def make(**kw) -> SSHNode:
        kw.setdefault("known_hosts", server.trusted_known_hosts(f"t{len(nodes)}"))
        kw.setdefault("key_filename", server.user_key)
        kw.setdefault("port", server.port)
        kw.setdefault("connect_timeout", 5)
        node = SSHNode(kw.pop("name", "sshlab"), kw.pop("host", server.host), **kw)
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.close()


integration = pytest.mark.integration


@integration
def test_fingerprint_matches_ssh_keygen(in_sshd_netns):
    key = paramiko.Ed25519Key(data=base64.b64decode(in_sshd_netns.host_key_pub.split()[1]))
    assert fingerprint(key) == in_sshd_netns.host_fingerprint


@integration
def test_run_streams_status_and_duration(make_node):
    node = make_node()
    result = node.run("echo out; echo err >&2; sleep 0.3; exit 7", check=False)
    assert (result.stdout, result.stderr, result.exit_status) == ("out\n", "err\n", 7)
    assert result.node == "sshlab" and not result.ok
    assert 0.3 <= result.duration < 10
    with pytest.raises(CommandFailed, match="exited with status 7"):
        node.run("echo err >&2; exit 7")
    assert node.run(["printf", "%s|", "a b", "c'd"]).stdout == "a b|c'd|"


@integration
def test_stdin_is_delivered_and_closed(make_node):
    node = make_node()
    assert node.run("tr a-z A-Z", stdin=b"hello ssh\n").stdout == "HELLO SSH\n"
    assert node.run("cat", timeout=10).stdout == ""  # no stdin: EOF at once, no hang


@integration
def test_big_streams_do_not_deadlock(make_node):
    node = make_node()
    size = 5_000_000
    result = node.run(
        f"head -c {size} /dev/zero | tr '\\0' e >&2 & head -c {size} /dev/zero | tr '\\0' o; wait",
        timeout=120,
    )
    assert len(result.stdout) == size and set(result.stdout) == {"o"}
    assert len(result.stderr) == size and set(result.stderr) == {"e"}
    payload = os.urandom(size // 2).hex().encode()  # 5 MB in, echoed back while still sending
    echoed = node.run("cat", stdin=payload, timeout=120)
    assert echoed.stdout.encode() == payload


@integration
def test_timeout_raises_and_remote_command_dies(make_node, tmp_path):
    node = make_node()
    leader, child = tmp_path / "leader.pid", tmp_path / "child.pid"
    started = time.monotonic()
    with pytest.raises(CommandTimeout) as err:
        node.run(f"sleep 60 & echo $! > {child}; echo $$ > {leader}; wait", timeout=1.5)
    assert time.monotonic() - started < 10
    assert "1.5s timeout" in str(err.value) and "sshlab" in str(err.value)
    for path in (leader, child):
        pid = int(path.read_text())
        ticks = process_start_ticks(pid) or -1
        assert wait_until(lambda p=pid, t=ticks: not alive(p, t), 5), f"{path.name} {pid} survived"
    assert node.run("echo still usable").stdout == "still usable\n"


@integration
def test_put_get_roundtrip(make_node, tmp_path):
    node = make_node()
    data = os.urandom(1_500_000)
    src, back = tmp_path / "src.bin", tmp_path / "back.bin"
    remote = tmp_path / "remote.bin"
    src.write_bytes(data)
    node.put(str(src), str(remote))
    digest = node.run(["sha256sum", str(remote)]).stdout.split()[0]
    assert digest == hashlib.sha256(data).hexdigest()
    node.get(str(remote), str(back))
    assert back.read_bytes() == data
    sftp = node._sftp
    node.put(str(src), str(remote))
    assert node._sftp is sftp  # one SFTP session, reused
    with pytest.raises(NodeError) as err:
        node.put(str(src), str(tmp_path / "no-such-dir" / "x"))
    assert "no-such-dir" in str(err.value) and "127.0.0.1" in str(err.value)


@integration
def test_spawn_output_stop(make_node):
    node = make_node()
    proc = node.spawn("echo started; exec sleep 60")
    try:
        assert proc.info.node == node.describe()
        assert alive(proc.pid, proc.info.start_ticks)  # PID and start ticks really are it
        assert wait_until(lambda: "started" in proc.output(), 10)
        assert proc.poll() is None
        assert proc.stop() == 143
        assert not alive(proc.pid, proc.info.start_ticks)
        quick = node.spawn("echo bye; exit 4")
        assert quick.wait(10) == 4 and quick.output() == "bye\n"
        remove_process_log(node, quick.info.log)
    finally:
        proc.stop()
        remove_process_log(node, proc.info.log)


@integration
def test_journal_process_over_ssh(make_node, tmp_path):
    node = make_node()
    journal = Journal(tmp_path / "journal.jsonl")
    with journal.process(node, "echo hi; sleep 60") as proc:
        assert wait_until(lambda: "hi" in proc.output(), 10)
    assert not alive(proc.pid, proc.info.start_ticks)
    assert not os.path.exists(os.path.dirname(proc.info.log))  # the log's own folder, with it
    assert journal.pending() == []


@integration
def test_unknown_host_key_refused_by_default(make_node, in_sshd_netns):
    server = in_sshd_netns
    kh = server.known_hosts_file("empty")
    node = make_node(known_hosts=kh)
    with pytest.raises(NodeError) as err:
        node.run("true")
    assert f"127.0.0.1:{server.port}" in str(err.value)
    assert server.host_fingerprint in str(err.value)
    assert "ssh-keyscan" in err.value.hint
    assert Path(kh).read_text() == ""


@integration
def test_opt_in_accepts_unknown_host_key(make_node, in_sshd_netns):
    server = in_sshd_netns
    kh = server.known_hosts_file("tofu")
    assert make_node(known_hosts=kh, accept_unknown_host=True).run("echo in").stdout == "in\n"
    saved = Path(kh).read_text().split()
    assert saved == [server.known_hosts_name, *server.host_key_pub.split()[:2]]
    assert make_node(known_hosts=kh).run("echo again").stdout == "again\n"


@integration
@pytest.mark.parametrize("accept", [False, True])
def test_changed_host_key_refused_even_with_opt_in(make_node, in_sshd_netns, accept):
    server = in_sshd_netns
    kh = server.known_hosts_file(f"changed{accept}", key_pub=server.other_host_key_pub)
    before = Path(kh).read_text()
    node = make_node(known_hosts=kh, accept_unknown_host=accept)
    with pytest.raises(NodeError) as err:
        node.run("true")
    text = str(err.value)
    assert "CHANGED" in text and f"127.0.0.1:{server.port}" in text
    assert server.host_fingerprint in text
    assert blob_fingerprint(server.other_host_key_pub) in text
    assert Path(kh).read_text() == before


@integration
def test_unreachable_port_and_network(make_node, in_sshd_netns):
    port = in_sshd_netns.port + 1
    with pytest.raises(NodeError) as err:
        make_node(port=port).run("true")
    assert f"127.0.0.1:{port}" in str(err.value) and "refused" in str(err.value)
    # The namespace has only loopback: no route, so the packet never leaves.
    with pytest.raises(NodeError) as err:
        make_node(host="198.18.0.1").run("true")
    assert "198.18.0.1:" in str(err.value) and "unreachable" in str(err.value).lower()


@integration
def test_wrong_key_is_an_authentication_error(make_node, in_sshd_netns):
    server = in_sshd_netns
    with pytest.raises(NodeError) as err:
        make_node(key_filename=server.other_user_key).run("true")
    assert f"root@127.0.0.1:{server.port}" in str(err.value)
    assert "authentication" in str(err.value) and server.other_user_key in str(err.value)


@integration
def test_connection_is_reused_and_reestablished(make_node, in_sshd_netns):
    server = in_sshd_netns
    accepted = server.sshd_log().count("Accepted publickey")
    node = make_node()
    node.run("true")
    first = node._client.get_transport()
    node.run("true")
    assert node._client.get_transport() is first and first.is_active()
    assert wait_until(lambda: server.sshd_log().count("Accepted publickey") == accepted + 1, 5)
    first.close()  # the link dies under the node
    assert node.run("echo back").stdout == "back\n"
    assert node._client.get_transport() is not first
    assert wait_until(lambda: server.sshd_log().count("Accepted publickey") == accepted + 2, 5)
    node.close()
    node.close()  # idempotent
    assert node.run("echo reopened").stdout == "reopened\n"


@integration
def test_rebuilt_from_description_works(make_node):
    node = make_node()
    rebuilt = node_from_description(json.loads(json.dumps(node.describe())))
    try:
        assert rebuilt.describe() == node.describe()
        assert rebuilt.run("echo rebuilt").stdout == "rebuilt\n"
    finally:
        rebuilt.close()


@integration
def test_concurrent_commands_share_one_connection(make_node):
    node = make_node()
    results: dict[int, str] = {}

    def work(i: int) -> None:
        results[i] = node.run(f"sleep 1; echo {i}").stdout

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == {i: f"{i}\n" for i in range(8)}
    assert time.monotonic() - started < 7  # side by side: one after another takes > 8 s
    assert node._client.get_transport().is_active()


@integration
def test_connection_lost_mid_command_is_a_node_error(make_node):
    node = make_node()
    node.run("true")
    transport = node._client.get_transport()
    timer = threading.Timer(0.5, transport.close)
    timer.start()
    try:
        with pytest.raises(NodeError, match="connection broke") as err:
            node.run("sleep 2", timeout=30)
    finally:
        timer.cancel()
    assert "not retried" in err.value.hint
    assert node.run("echo reconnected").stdout == "reconnected\n"


@integration
def test_group_is_one_session_per_machine_over_ssh(make_node, monkeypatch):
    from harness.nodes.group import Call, run_group

    node = make_node()
    sessions: list[int] = []
    real = node._open_channel
    monkeypatch.setattr(node, "_open_channel", lambda: sessions.append(1) or real())
    local = LocalNode()
    results = run_group([Call(node, "echo a"), Call(local, "echo b"),
                         Call(node, ["sh", "-c", "echo c >&2; printf x; exit 4"]),
                         Call(node, "echo d", exclusive=True)])
    assert len(sessions) == 1
    assert [(r.node, r.stdout, r.stderr, r.exit_status) for r in results] == [
        ("sshlab", "a\n", "", 0), ("local", "b\n", "", 0), ("sshlab", "x", "c\n", 4),
        ("sshlab", "d\n", "", 0)]
