"""What every node offers: run a command, start a background process, move files.

Concrete nodes (local machine, network namespace, SSH host) fill in a few
hooks; callers never need to know which one they hold.
"""

from __future__ import annotations

import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import CommandFailed, CommandTimeout
from .result import Result

Command = str | Sequence[str]

DEFAULT_TIMEOUT = 60.0
#: Program folders an ordinary login's PATH usually lacks (Debian gives them to root only),
#: where sysctl, ip, tc and servers like globus-gridftp-server live.
SYSTEM_BIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")

#: Set by :mod:`harness.journal.tracked` while a run's journal is active: runs a command with
#: ``track=True`` journalled (see there). None: such commands run as any other.
tracker: Callable[..., Result] | None = None


def command_text(cmd: Command) -> str:
    """A command as one shell-quoted string (lists are quoted element by element)."""
    if isinstance(cmd, str):
        return cmd
    return shlex.join(str(part) for part in cmd)


@dataclass
class ProcessInfo:
    """Identity of a background process, stable against PID reuse."""

    node: dict
    pid: int
    start_ticks: int
    command: str
    log: str = ""
    extra: dict = field(default_factory=dict)


class Process(ABC):
    """A background process started by :meth:`Node.spawn`."""

    info: ProcessInfo

    @property
    def pid(self) -> int:
        return self.info.pid

    @abstractmethod
    def poll(self) -> int | None:
        """Exit status, or None while it runs."""

    @abstractmethod
    def wait(self, timeout: float) -> int:
        """Wait for exit; raise CommandTimeout if it outlives ``timeout``."""

    @abstractmethod
    def stop(self, grace: float = 3.0) -> int | None:
        """SIGTERM, then SIGKILL after ``grace`` seconds. Safe to repeat."""

    @abstractmethod
    def output(self) -> str:
        """What the process wrote to stdout and stderr so far."""


class Node(ABC):
    """A machine or namespace that runs commands.

    A *machine* (the controlling machine, an SSH host, a VM) owns processes,
    files and a connection; a namespace node is a view of its machine's kernel
    through another network stack. Callers that batch commands per machine or
    record changes against the machine ask :attr:`machine`, :attr:`is_local`,
    :attr:`netns_path` and :meth:`command_on_machine` -- never the concrete class.
    """

    name: str

    @property
    def machine(self) -> Node:
        """The machine this node runs on, under any number of namespace layers.

        A machine is its own machine. Processes started here belong to it (a
        namespace can vanish while they live on), and one round trip to it can
        carry commands for all of its namespaces.
        """
        return self

    @property
    def is_local(self) -> bool:
        """Whether commands run on this controlling machine (no network hop)."""
        return False

    @property
    def sees_host_root(self) -> bool:
        """Whether this node's root file system *is* this controlling machine's, shared
        read-only: a VM the harness booted (:class:`harness.vm.boot.VMNode`), or a namespace
        of one. Then a file the controller made is the very file there, and a program
        built here may run there; on any other machine the same path is another file."""
        machine = self.machine
        return False if machine is self else machine.sees_host_root

    @property
    def netns_path(self) -> str | None:
        """The network namespace's path on its machine; None when this node is a machine."""
        return None

    def command_on_machine(self, cmd: Command) -> str:
        """``cmd`` as a shell command line that runs *in this node* when run on :attr:`machine`.

        A machine returns the command as it is; a namespace wraps it so that it
        enters the namespace (``nsenter --net``, which keeps the mount
        namespace). A list is executed directly (no extra shell), a string by ``sh -c``.
        """
        return command_text(cmd)

    @abstractmethod
    def describe(self) -> dict:
        """A JSON-able description from which :func:`node_from_description` rebuilds it."""

    @abstractmethod
    def _execute(self, cmd: str, timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
        """Run a shell command line; return (status, stdout, stderr) or raise CommandTimeout."""

    @abstractmethod
    def spawn(self, cmd: Command, *, cgroup: str | None = None) -> Process:
        """Start ``cmd`` in the background (optionally inside a cgroup v2 directory)."""

    @abstractmethod
    def put(self, local_path: str, remote_path: str) -> None:
        """Copy a file from the controlling machine onto this node."""

    @abstractmethod
    def get(self, remote_path: str, local_path: str) -> None:
        """Copy a file from this node to the controlling machine."""

    def run(
        self,
        cmd: Command,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        check: bool = True,
        stdin: bytes | None = None,
        hint: str | None = None,
        track: bool = False,
    ) -> Result:
        """Run ``cmd`` to completion and return its :class:`Result`.

        ``check`` raises :class:`CommandFailed` on a non-zero exit status.
        A command that outlives ``timeout`` seconds is killed and raises
        :class:`CommandTimeout`. ``track``: a measurement tool (iperf3 client,
        globus-url-copy, ...) that must not outlive the harness -- inside a run it
        is journalled with its identity before it starts (:mod:`harness.journal.tracked`).
        """
        if track and tracker is not None:
            return tracker(self, cmd, timeout=timeout, check=check, stdin=stdin, hint=hint)
        text = command_text(cmd)
        started = time.monotonic()
        try:
            status, out, err = self._execute(text, timeout, stdin)
        except CommandTimeout as exc:
            raise CommandTimeout(f"on {self.name}: `{text}` {exc.message}", exc.hint) from None
        result = Result(self.name, text, out, err, status, time.monotonic() - started)
        if check and not result.ok:
            raise CommandFailed(result, hint)
        return result

    def read_text(self, path: str, timeout: float = 10.0) -> str:
        return self.run(["cat", path], timeout=timeout).stdout

    def has_command(self, program: str) -> bool:
        return self.run(f"command -v {shlex.quote(program)}", check=False, timeout=10).ok

    def close(self) -> None:
        """Release transport resources (connections). Safe to repeat."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
