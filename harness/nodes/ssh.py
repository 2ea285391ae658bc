"""A remote machine reached over SSH (paramiko), with host keys checked like OpenSSH does.

Why it is built this way:

- **One connection per node.** A full SSH handshake costs tens of milliseconds
  and a round of key exchange on the remote CPU; a new session channel on an
  open connection costs one round trip. The connection is opened on first use
  and reused; if it died (host rebooted, link flapped) the next command
  reconnects once. A command that was already running when the link died is
  never re-run (it may not be idempotent): that raises :class:`NodeError`.
- **Host keys are verified by default** against ``known_hosts``. An unknown key
  is refused unless the caller opts in with ``accept_unknown_host=True`` (trust
  on first use, the key is then appended to ``known_hosts``); a *changed* key
  is always refused, opt-in or not, because that is what a man in the middle
  looks like. The policy lives in :mod:`harness.nodes.hostkeys`.
- **Key authentication only.** No password is ever passed, stored or
  described; an encrypted private key must be loaded into ssh-agent. Logging in, and
  turning what paramiko raises into errors that say what to do, is
  :mod:`harness.nodes.ssh_login`.
- **Timeouts kill the remote command.** Closing an SSH channel does not stop
  the remote process (without a pty, sshd sends it no signal), so every command
  runs under a small wrapper that (1) reports its process group id on stderr
  and (2) runs the command under coreutils ``timeout`` with
  :data:`REMOTE_TIMEOUT_SLACK` seconds of slack, a dead man's switch for the
  case that this controller dies or loses the link. At our own deadline we
  SIGKILL that process group through a second channel, close the channel and
  raise :class:`CommandTimeout`.
- **Background processes are controlled through shell commands**
  (:class:`~harness.nodes.remote_process.ShellProcess`): started with
  ``setsid`` in their own session, output to a remote log file, identified by
  PID *and* start time so that a reused PID is never signalled.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import time
from typing import Self

import paramiko

from ..errors import CommandTimeout, HarnessError, NodeError
from .base import SYSTEM_BIN, Command, Node, Process, command_text
from .hostkeys import DEFAULT_KNOWN_HOSTS
from .remote_process import ShellProcess
from .ssh_login import SSHEndpoint, connect

log = logging.getLogger(__name__)

#: Seconds the remote ``timeout`` wrapper waits beyond the caller's timeout.
#: Our own deadline fires first and kills the command; the remote one only
#: matters when this process died or the connection broke mid-command.
REMOTE_TIMEOUT_SLACK = 5.0

_PGID_RE = re.compile(rb"__harness_pgid__=(\d+)\n")
_CHUNK = 1 << 16
#: Bytes a command may write to stdout, and to stderr, before it is stopped: its output is
#: held in memory, and a node (or another local user's program it runs) could otherwise
#: send without end. The harness's largest outputs (a tool's log, a JSON result) are far
#: below it; a file is copied with :meth:`SSHNode.get`.
OUTPUT_CAP = 64 << 20
#: Seconds between two calls of :meth:`SSHNode._while_waiting` while a command runs.
WATCH_EVERY_S = 5.0

# Run by the remote login shell as: sh -c _WRAPPER harness CMD LIMIT.
# $$ is the process group of everything below: `timeout` makes itself a group
# leader (setpgid) and `exec` keeps the PID. The inner relay shell turns a
# death by signal into the shell's 128+N status instead of an SSH
# "exit-signal" that paramiko reports as -1. The system program folders are added to PATH:
# an ordinary login's PATH lacks them (Debian gives /usr/sbin to root only), and the
# harness's commands name sysctl, ip, tc and servers like globus-gridftp-server by name.
_WRAPPER = r"""printf '__harness_pgid__=%s\n' "$$" >&2
PATH="$PATH:@SYSTEM_BIN@"; export PATH
if [ -n "$2" ] && command -v timeout >/dev/null 2>&1; then
  exec timeout -k 5 "$2" sh -c 'sh -c "$1"; exit $?' harness "$1"
fi
exec sh -c 'sh -c "$1"; exit $?' harness "$1"
""".replace("@SYSTEM_BIN@", ":".join(SYSTEM_BIN))


def remote_command(cmd: str, timeout: float | None, slack: float = REMOTE_TIMEOUT_SLACK) -> str:
    """The command line sent to sshd to run ``cmd`` with a remote dead man's switch.

    The result is a plain ``sh -c`` invocation, so it works whatever POSIX-ish
    login shell the remote user has. ``timeout`` None or infinite means no
    remote limit.
    """
    limit = ""
    if timeout is not None and math.isfinite(timeout):
        limit = f"{max(timeout, 0.0) + slack:.3f}".rstrip("0").rstrip(".")
    return command_text(["sh", "-c", _WRAPPER, "harness", cmd, limit])


def split_marker(stderr: bytes) -> tuple[int | None, bytes]:
    """The process group id reported by the wrapper, and stderr without that line."""
    match = _PGID_RE.search(stderr)
    if match is None:
        return None, stderr
    return int(match.group(1)), stderr[: match.start()] + stderr[match.end() :]


class SSHNode(Node):
    """A host reached over SSH with key authentication.

    ``known_hosts`` defaults to ``~/.ssh/known_hosts``; ``key_filename`` None
    means "use ssh-agent and ~/.ssh/id_*" like ``ssh`` does.
    ``connect_timeout`` bounds each phase of connecting (TCP, banner, auth).
    """

    def __init__(
        self,
        name: str,
        host: str,
        port: int = 22,
        user: str = "root",
        key_filename: str | None = None,
        known_hosts: str | None = None,
        accept_unknown_host: bool = False,
        connect_timeout: float = 10.0,
        allow_agent: bool = False,
    ):
        self.name = name
        self.host = host
        self.port = int(port)
        self.user = user
        self.key_filename = key_filename
        self.known_hosts = known_hosts
        self.accept_unknown_host = bool(accept_unknown_host)
        self.connect_timeout = float(connect_timeout)
        self.allow_agent = allow_agent is True
        self._lock = threading.RLock()
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._sftp_transport: paramiko.Transport | None = None
        # Keys accepted on first use in this process: a reconnect to a changed
        # key is refused even if they could not be saved to known_hosts.
        self._accepted: dict[str, paramiko.PKey] = {}

    # -- description -------------------------------------------------------
    def describe(self) -> dict:
        """Where and how to connect; never key material or passwords (there are none)."""
        return {
            "type": "ssh",
            "name": self.name,
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "key_filename": self.key_filename,
            "known_hosts": self.known_hosts,
            "accept_unknown_host": self.accept_unknown_host,
            "connect_timeout": self.connect_timeout,
        }

    @classmethod
    def from_description(cls, desc: dict) -> SSHNode:
        if desc.get("type") != "ssh":
            raise ValueError(f"not an ssh node description: {desc!r}")
        return cls(
            desc.get("name") or desc["host"],
            desc["host"],
            port=desc.get("port", 22),
            user=desc.get("user", "root"),
            key_filename=desc.get("key_filename"),
            known_hosts=desc.get("known_hosts"),
            accept_unknown_host=desc.get("accept_unknown_host", False),
            connect_timeout=desc.get("connect_timeout", 10.0),
        )

    @property
    def known_hosts_path(self) -> str:
        return os.path.expanduser(self.known_hosts or DEFAULT_KNOWN_HOSTS)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _where(self) -> str:
        return f"SSH node {self.name!r} ({self.user}@{self.address})"

    # -- connection --------------------------------------------------------
    def _transport(self) -> paramiko.Transport:
        """The live transport, connecting (or reconnecting) if there is none."""
        with self._lock:
            if self._client is not None:
                transport = self._client.get_transport()
                if transport is not None and transport.is_active():
                    return transport
                self._drop()
            self._client = connect(self._endpoint(), self._accepted)
            return self._client.get_transport()

    def _endpoint(self) -> SSHEndpoint:
        return SSHEndpoint(self._where(), self.host, self.port, self.user, self.key_filename,
                           self.known_hosts_path, self.accept_unknown_host, self.connect_timeout,
                           self.allow_agent)

    def _drop(self) -> None:
        """Forget the connection (closing what is left of it)."""
        with self._lock:
            if self._sftp is not None:
                try:
                    self._sftp.close()
                except (OSError, EOFError, paramiko.SSHException) as exc:
                    log.debug("%s: closing SFTP: %s", self._where(), exc)
            self._sftp = self._sftp_transport = None
            if self._client is not None:
                self._client.close()
            self._client = None

    def close(self) -> None:
        """Close the connection. Safe to repeat; the next command reconnects."""
        self._drop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open_channel(self) -> paramiko.Channel:
        """A new session channel, reconnecting once if the connection had died."""
        for attempt in (1, 2):
            transport = self._transport()
            try:
                return transport.open_session(timeout=self.connect_timeout)
            except paramiko.ChannelException as exc:
                raise NodeError(
                    f"{self._where()}: the server refused a new session: {exc}",
                    "too many sessions at once? raise MaxSessions in the host's sshd_config",
                ) from None
            except (paramiko.SSHException, EOFError, OSError) as exc:
                self._drop()
                if attempt == 2:
                    raise NodeError(
                        f"{self._where()}: the connection broke while opening a session: {exc}",
                        f"check that {self.host} is still up",
                    ) from None
        raise AssertionError("unreachable")

    # -- commands ----------------------------------------------------------
    def _execute(self, cmd: str, timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
        chan = self._open_channel()
        try:
            chan.exec_command(remote_command(cmd, timeout))
        except (paramiko.SSHException, EOFError, OSError) as exc:
            chan.close()
            raise NodeError(f"{self._where()}: could not start `{cmd}`: {exc}") from None
        out: list[bytes] = []
        err: list[bytes] = []
        over = _Overflow()
        # One thread per direction: the remote side blocks when our receive
        # window is full, so stdout, stderr and stdin must all move at once.
        threads = [
            threading.Thread(target=_drain, args=(chan.recv, out, over, "stdout"), daemon=True),
            threading.Thread(target=_drain, args=(chan.recv_stderr, err, over, "stderr"),
                             daemon=True),
            threading.Thread(target=_feed, args=(chan, stdin), daemon=True),
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + timeout
        try:
            finished = _join(threads[:2], deadline, over, self._while_waiting) and (
                over.stream is not None
                or chan.status_event.wait(max(0.0, deadline - time.monotonic())))
        except BaseException:  # Ctrl-C while waiting: take the remote command down too
            self._kill_remote(chan, err)
            chan.close()
            raise
        if over.stream is not None:
            self._kill_remote(chan, err)
            chan.close()
            shown = cmd if len(cmd) <= 200 else cmd[:200] + "..."
            raise NodeError(
                f"{self._where()}: `{shown}` wrote more than {OUTPUT_CAP >> 20} MiB to its "
                f"{over.stream}; it was stopped and its output dropped",
                "a command whose output is that large should write it to a file on the node, "
                "to be copied with get(); if this one is meant to, raise "
                "harness.nodes.ssh.OUTPUT_CAP",
            )
        if not finished:
            self._kill_remote(chan, err)
            chan.close()
            raise CommandTimeout(
                f"was killed after its {timeout:g}s timeout",
                "raise timeout= if the command legitimately needs longer",
            )
        status = chan.exit_status
        transport_alive = chan.get_transport().is_active()
        chan.close()
        if status == -1 and not transport_alive:
            self._drop()
            raise NodeError(
                f"{self._where()}: the connection broke while `{cmd}` ran; its outcome is unknown",
                f"check that {self.host} is still up; the command was not retried",
            )
        _pgid, stderr = split_marker(b"".join(err))
        return (
            status,
            b"".join(out).decode(errors="replace"),
            stderr.decode(errors="replace"),
        )

    def _while_waiting(self) -> None:
        """Called about every :data:`WATCH_EVERY_S` while a command runs: a subclass raises
        here to stop the command at once (it is killed, as on Ctrl-C) when it knows the wait
        is in vain (:meth:`harness.vm.boot.VMNode._while_waiting`)."""

    def _kill_remote(self, chan: paramiko.Channel, err: list[bytes]) -> None:
        """SIGKILL the process group of a command that outlived its deadline."""
        pgid, _ = split_marker(b"".join(err))
        if pgid is None or chan.exit_status_ready():
            return  # it never started, or it ended on its own just now
        try:
            self._execute(
                f"kill -s KILL -- -{pgid} 2>/dev/null || kill -s KILL {pgid} 2>/dev/null; exit 0",
                15.0,
                None,
            )
        except HarnessError as exc:  # the remote `timeout` wrapper is the backstop
            log.warning("%s: could not kill process group %s: %s", self._where(), pgid, exc)

    def spawn(self, cmd: Command, *, cgroup: str | None = None) -> Process:
        return ShellProcess.start(self, cmd, cgroup=cgroup)

    # -- files -------------------------------------------------------------
    def _sftp_session(self) -> paramiko.SFTPClient:
        with self._lock:
            transport = self._transport()
            if (
                self._sftp is not None
                and self._sftp_transport is transport
                and not self._sftp.get_channel().closed
            ):
                return self._sftp
            try:
                self._sftp = paramiko.SFTPClient.from_transport(transport)
            except (paramiko.SSHException, EOFError, OSError) as exc:
                raise NodeError(
                    f"{self._where()}: cannot open an SFTP session: {exc}",
                    "enable the SFTP subsystem in the host's sshd_config"
                    " (`Subsystem sftp internal-sftp`)",
                ) from None
            self._sftp_transport = transport
            return self._sftp

    def _transfer(self, what: str, action) -> None:
        for attempt in (1, 2):
            sftp = self._sftp_session()
            try:
                action(sftp)
                return
            except (EOFError, paramiko.SSHException, OSError) as exc:
                broken = not (self._sftp_transport and self._sftp_transport.is_active())
                if broken and attempt == 1:
                    self._drop()  # the link died: a file copy is safe to repeat
                    continue
                raise NodeError(
                    f"{self._where()}: cannot copy {what}: {getattr(exc, 'strerror', None) or exc}",
                    "check that the source exists and the target directory exists and is writable",
                ) from None

    def put(self, local_path: str, remote_path: str) -> None:
        self._transfer(
            f"{local_path} to {self.host}:{remote_path}",
            lambda sftp: sftp.put(local_path, remote_path),
        )

    def get(self, remote_path: str, local_path: str) -> None:
        self._transfer(
            f"{self.host}:{remote_path} to {local_path}",
            lambda sftp: sftp.get(remote_path, local_path),
        )


class _Overflow:
    """Which stream of a command first went past :data:`OUTPUT_CAP`, if one did."""

    def __init__(self):
        self.stream: str | None = None
        self.event = threading.Event()

    def set(self, stream: str) -> None:
        self.stream = self.stream or stream
        self.event.set()


def _drain(recv, chunks: list[bytes], over: _Overflow, stream: str) -> None:
    """Read one stream of a channel to its end (b'' means EOF or closed), or until it went
    past :data:`OUTPUT_CAP` (then ``over`` says so)."""
    total = 0
    try:
        while True:
            data = recv(_CHUNK)
            if not data:
                return
            total += len(data)
            if total > OUTPUT_CAP:
                over.set(stream)
                return
            chunks.append(data)
    except (OSError, EOFError, paramiko.SSHException):
        return


def _feed(chan: paramiko.Channel, data: bytes | None) -> None:
    """Send stdin, then EOF (no stdin means an immediately empty one, like /dev/null)."""
    try:
        if data:
            chan.sendall(data)
        chan.shutdown_write()
    except (OSError, EOFError, paramiko.SSHException):
        pass  # the command ended without reading all of it, like a closed pipe


def _join(threads: list[threading.Thread], deadline: float, over: _Overflow,
          watch=None) -> bool:
    """Wait for the readers until ``deadline`` (False if it passed first); a stream past the
    cap ends the wait at once (the other one may never end while the command is blocked).
    ``watch``: called every :data:`WATCH_EVERY_S` meanwhile; what it raises ends the wait."""
    watched = time.monotonic()
    for thread in threads:
        while thread.is_alive():
            if over.event.is_set():
                return True
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                return False
            if watch is not None and now - watched >= WATCH_EVERY_S:
                watched = now
                watch()
            thread.join(min(left, 0.1))
    return True
