"""The controlling machine itself."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time

from ..errors import CommandTimeout
from .base import Command, Node, Process, ProcessInfo, command_text
from .procfs import process_start_ticks


def in_cgroup(cmd: str, cgroup: str | None) -> str:
    """Wrap a shell command so that it starts inside the cgroup v2 directory ``cgroup``."""
    if not cgroup:
        return cmd
    # Quoted: a cgroup path comes from a study's record and reaches a root shell.
    return f"echo $$ > {quote(cgroup + '/cgroup.procs')} && exec sh -c {quote(cmd)}"


def quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


class PopenProcess(Process):
    """A background process of the controlling machine, in its own session."""

    def __init__(self, popen: subprocess.Popen, info: ProcessInfo):
        self._popen = popen
        self.info = info

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout: float) -> int:
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise CommandTimeout(
                f"did not finish within {timeout:g}s: {self.info.command}"
            ) from None

    def stop(self, grace: float = 3.0) -> int | None:
        if self._popen.poll() is not None:
            return self._popen.returncode
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self._popen.pid, sig)
            except ProcessLookupError:
                break
            try:
                return self._popen.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        return self._popen.poll()

    def output(self) -> str:
        try:
            with open(self.info.log, errors="replace") as fh:
                return fh.read()
        except FileNotFoundError:
            return ""


class LocalNode(Node):
    """Runs commands with ``sh -c`` on this machine."""

    def __init__(self, name: str = "local", prefix: list[str] | None = None):
        self.name = name
        self._prefix = prefix or []

    @property
    def is_local(self) -> bool:
        return True

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _argv(self, cmd: str) -> list[str]:
        return [*self._prefix, "sh", "-c", cmd]

    def _execute(self, cmd: str, timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
        proc = subprocess.Popen(
            self._argv(cmd),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise CommandTimeout(f"was killed after its {timeout:g}s timeout") from None
        except BaseException:
            # Ctrl-C while waiting: take the child down with us.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            raise
        return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")

    def spawn(self, cmd: Command, *, cgroup: str | None = None) -> Process:
        text = in_cgroup(command_text(cmd), cgroup)
        fd, log = tempfile.mkstemp(prefix="harness-proc-", suffix=".log")
        with os.fdopen(fd, "wb") as logfile:
            popen = subprocess.Popen(
                self._argv(text),
                stdin=subprocess.DEVNULL,
                stdout=logfile,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        ticks = process_start_ticks(popen.pid)
        if ticks is None:  # exited already; keep a record anyway
            ticks = -1
        info = ProcessInfo(self.describe(), popen.pid, ticks, text, log)
        return PopenProcess(popen, info)

    def put(self, local_path: str, remote_path: str) -> None:
        shutil.copyfile(local_path, remote_path)

    def get(self, remote_path: str, local_path: str) -> None:
        shutil.copyfile(remote_path, local_path)


def wait_until(predicate, timeout: float, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until it returns true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
