"""A real OpenSSH sshd (Debian's /usr/sbin/sshd) inside a fresh network namespace.

Use it from a test module with::

    from sshd_fixture import sshd_server, in_sshd_netns  # noqa: F401  (pytest fixtures)

``sshd_server`` (module scope) starts the daemon; ``in_sshd_netns`` (function
scope) moves the *test's own thread* into that namespace for the duration of
the test, so the SSH client under test opens its sockets to 127.0.0.1:PORT of
the namespace, exactly as it would to a remote host.

Why it is built this way:

- Nothing is created on the host's network side: no veth, no address, no
  route. The namespace has only its own loopback; sshd listens there; the
  client reaches it because ``setns(2)`` on one thread changes the network
  namespace of the sockets that thread creates, and a socket keeps its
  namespace for life (paramiko's transport thread just uses it).
- Debian's sshd insists on the privilege separation directory /run/sshd,
  which this host does not have. Creating it on the host would be a change to
  the machine (and racy between concurrent test runs), so sshd runs in a
  private mount namespace with its own small tmpfs on /run. Remote commands
  therefore see an empty /run; tests use /tmp.
- Everything created is removed in ``finally`` blocks by identity: the sshd
  process (and anything still running inside *our* uniquely named namespace,
  e.g. per-connection sshd children) by PID, the namespace by its name, the
  temp directory by its path.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
PORT = 2222
CLONE_NEWNET = 0x40000000
_TOOLS = ("ip", "ssh-keygen", "nsenter", "unshare")


def skip_reason() -> str | None:
    """Why the real-sshd tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, setns)"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} missing (apt-get install openssh-server)"
    for tool in _TOOLS:
        if shutil.which(tool) is None:
            return f"{tool} missing"
    return None


_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextmanager
def inside_netns(path: str) -> Iterator[None]:
    """Move the calling thread (only it) into the network namespace at ``path``."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(path, os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30).stdout


def _start_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class SshdServer:
    """A running test sshd: where it listens and the keys that go with it."""

    netns: str
    workdir: Path
    host_key_pub: str  # "ssh-ed25519 AAAA... comment"
    host_fingerprint: str  # "SHA256:..." as ssh-keygen -lf prints it
    user_key: str  # path of the authorized private key
    other_host_key_pub: str  # a second host key, for "changed key" tests
    other_user_key: str  # a private key that is NOT authorized
    host: str = "127.0.0.1"
    port: int = PORT
    pid: int = 0
    log: Path = field(default=None)  # type: ignore[assignment]

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"

    @property
    def known_hosts_name(self) -> str:
        return f"[{self.host}]:{self.port}"

    def known_hosts_file(self, name: str, *, key_pub: str | None = None) -> str:
        """A fresh known_hosts in the work dir: empty, or holding ``key_pub`` for the server."""
        path = self.workdir / f"known_hosts.{name}"
        text = ""
        if key_pub is not None:
            keytype, blob = key_pub.split()[:2]
            text = f"{self.known_hosts_name} {keytype} {blob}\n"
        path.write_text(text)
        return str(path)

    def trusted_known_hosts(self, name: str = "trusted") -> str:
        return self.known_hosts_file(name, key_pub=self.host_key_pub)

    def sshd_log(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""


def _keypair(path: Path, comment: str) -> str:
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))
    return (path.with_name(path.name + ".pub")).read_text().strip()


def _write_config(server: SshdServer, host_key: Path) -> Path:
    config = server.workdir / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {server.port}",
                f"ListenAddress {server.host}",
                f"HostKey {host_key}",
                f"AuthorizedKeysFile {server.workdir / 'authorized_keys'}",
                "PidFile none",
                "UsePAM no",
                "StrictModes no",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PubkeyAuthentication yes",
                "PermitRootLogin prohibit-password",
                "Subsystem sftp internal-sftp",
                "MaxSessions 64",
                "LogLevel INFO",
                "",
            ]
        )
    )
    return config


def _kill_and_wait(pids: dict[int, int | None], grace: float = 3.0) -> None:
    """SIGTERM then SIGKILL each PID, but only while it is the same process (start ticks)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, ticks in pids.items():
            if ticks is not None and _start_ticks(pid) == ticks:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if all(_start_ticks(pid) != ticks for pid, ticks in pids.items()):
                return
            time.sleep(0.05)


def _netns_pids(netns: str) -> dict[int, int | None]:
    """Processes (other than this one) whose network namespace is ours."""
    try:
        out = _run("ip", "netns", "pids", netns)
    except subprocess.CalledProcessError:
        return {}
    pids = {int(p) for p in out.split()} - {os.getpid()}
    return {pid: _start_ticks(pid) for pid in pids}


@contextmanager
def running_sshd(port: int = PORT, ready_timeout: float = 15.0) -> Iterator[SshdServer]:
    """Start sshd in a new namespace; tear everything down on exit, also on error."""
    workdir = Path(tempfile.mkdtemp(prefix="harness-sshd-"))
    netns = f"harness-sshd-{os.getpid()}-{secrets.token_hex(3)}"
    netns_created = False
    proc: subprocess.Popen | None = None
    try:
        host_pub = _keypair(workdir / "host_ed25519", "harness-test-host")
        other_host_pub = _keypair(workdir / "other_host_ed25519", "harness-test-other-host")
        user_pub = _keypair(workdir / "user_ed25519", "harness-test-user")
        _keypair(workdir / "stranger_ed25519", "harness-test-stranger")
        (workdir / "authorized_keys").write_text(user_pub + "\n")
        fp = _run("ssh-keygen", "-l", "-E", "sha256", "-f", str(workdir / "host_ed25519.pub"))
        server = SshdServer(
            netns=netns,
            workdir=workdir,
            host_key_pub=host_pub,
            host_fingerprint=fp.split()[1],
            user_key=str(workdir / "user_ed25519"),
            other_host_key_pub=other_host_pub,
            other_user_key=str(workdir / "stranger_ed25519"),
            port=port,
            log=workdir / "sshd.log",
        )
        config = _write_config(server, workdir / "host_ed25519")

        _run("ip", "netns", "add", netns)
        netns_created = True
        _run("ip", "-n", netns, "link", "set", "lo", "up")

        inner = (
            "mount -t tmpfs -o mode=755,size=1m harness-sshd /run && mkdir -m 755 /run/sshd"
            f" && exec {SSHD} -D -e -f {config}"
        )
        with open(server.log, "wb") as logfile:
            proc = subprocess.Popen(
                [
                    "nsenter",
                    f"--net={server.netns_path}",
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    inner,
                ],
                stdin=subprocess.DEVNULL,
                stdout=logfile,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server.pid = proc.pid
        deadline = time.monotonic() + ready_timeout
        while "Server listening on" not in server.sshd_log():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"test sshd did not start:\n{server.sshd_log()}")
            time.sleep(0.05)
        yield server
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if netns_created:
            # Per-connection sshd children and anything a test left running
            # on the "remote" side live in our namespace: stop exactly those.
            _kill_and_wait(_netns_pids(netns))
            subprocess.run(["ip", "netns", "del", netns], check=False, timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def sshd_server() -> Iterator[SshdServer]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with running_sshd() as server:
        yield server


@pytest.fixture
def in_sshd_netns(sshd_server: SshdServer) -> Iterator[SshdServer]:
    """The test body runs with its thread inside the sshd's namespace."""
    with inside_netns(sshd_server.netns_path):
        yield sshd_server
