"""JupyterLab on the study notebooks in one command (``nox -s lab``), also as root, also from afar.

The server listens on 127.0.0.1 only, behind a fresh token: a reader on another machine
forwards the port over SSH, so nothing is exposed on the network. It runs as root too (the
harness needs root for namespaces, qdiscs and cgroups; ``jupyter lab`` refuses root without
``--allow-root``). The port is chosen before the start and retries are off, so the URL and
the ``ssh -L`` line printed are the ones that work. Kernels talk to the server over
Unix sockets (see :mod:`harness.run.kernels`), not TCP ports.

The lab opens without noise: its settings' defaults come from ``lab_settings/overrides.json``
beside this module (``--LabApp.app_settings_dir``): no "news" prompt, no update check (each
would ask, or fetch from the internet, at every start); a user's own settings still win. The
study notebooks name the ``python3`` kernel, which every environment of the project has, so
no kernel-choice dialog is asked either.

The token reaches the server in its environment (``JUPYTER_TOKEN``, which jupyter_server's
``IdentityProvider.token`` reads when not given on the command line), never in its argv:
/proc/PID/cmdline is readable by every local user, /proc/PID/environ only by the server's
own user (and root), and the server runs as root.

The URL with the token is printed only once the server listens on its port -- and only if
every socket listening where a browser's ``127.0.0.1:PORT`` would arrive is one of the
server's own (``/proc/net/tcp`` against the server's descriptors). A port found free can
be taken by another local user before the server binds it; that user would then receive
the token the browser sends. Then nothing is printed but the error.
"""

from __future__ import annotations

import argparse
import getpass
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..archive.archive import project_root
from ..errors import HarnessError

LOOPBACK = "127.0.0.1"
#: the lab's settings defaults (JupyterLab's app settings folder: only overrides.json in it)
SETTINGS_DIR = Path(__file__).resolve().parent / "lab_settings"
START_TIMEOUT = 120.0  # seconds for JupyterLab to listen (its first start builds caches)
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


@dataclass(frozen=True)
class LabServer:
    port: int
    token: str
    root_dir: Path
    as_root: bool

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/lab?token={self.token}"

    def argv(self) -> list[str]:
        args = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ip={LOOPBACK}",
                f"--port={self.port}", "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={self.root_dir}",
                f"--LabApp.app_settings_dir={SETTINGS_DIR}",
                "--KernelManager.transport=ipc"]
        return [*args, "--allow-root"] if self.as_root else args

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The server's environment: ``base`` (default ours) with the token in it."""
        env = dict(os.environ if base is None else base)
        env.pop("JUPYTER_TOKEN_FILE", None)  # ours, not a file someone else may have named
        env["JUPYTER_TOKEN"] = self.token
        return env

    def instructions(self, user: str, host: str) -> str:
        return "\n".join([
            f"JupyterLab on {self.root_dir}, listening on {LOOPBACK}:{self.port} only.",
            f"  on this machine, open:   {self.url}",
            "  from another machine, forward the port first, then open the same URL there:",
            f"    ssh -N -L {self.port}:{LOOPBACK}:{self.port} {user}@{host}",
            f"  (use the address by which that machine reaches this one if not {host})",
            "  stop it with Ctrl-C.",
        ])


def host_name() -> str:
    """This machine's name for the ``ssh -L`` line: its FQDN when it has a real one (on many
    machines ``getfqdn`` answers ``localhost`` from /etc/hosts), else its host name."""
    fqdn = socket.getfqdn()
    return fqdn if "." in fqdn and not fqdn.startswith("localhost") else socket.gethostname()


def free_port(first: int = 8888, tries: int = 50) -> int:
    """The first port from ``first`` on that nothing listens on at 127.0.0.1."""
    for port in range(first, first + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((LOOPBACK, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port in {first}..{first + tries - 1} on {LOOPBACK}")


def server(port: int | None = None, root_dir: Path | None = None) -> LabServer:
    return LabServer(port=port or free_port(), token=secrets.token_hex(24),
                     root_dir=(root_dir or project_root() / "notebooks").resolve(),
                     as_root=os.geteuid() == 0)


def _proc_net_address(ip: str) -> str:
    """``ip`` as /proc/net/tcp{,6} print it: each 32-bit word in this machine's byte order."""
    raw = socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)
    return "".join(f"{int.from_bytes(raw[i:i + 4], sys.byteorder):08X}"
                   for i in range(0, len(raw), 4))


#: The addresses whose listener a connection to 127.0.0.1 reaches: loopback and "any", over
#: IPv4 and (v4-mapped, dual-stack) IPv6.
_REACHED = {_proc_net_address(ip) for ip in (LOOPBACK, "0.0.0.0", "::", f"::ffff:{LOOPBACK}")}


def port_listeners(port: int) -> list[tuple[int, int]]:
    """(uid, socket inode) of every socket listening where ``127.0.0.1:port`` arrives."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, _, hexport = fields[1].partition(":")
            if fields[3] == _LISTEN and int(hexport, 16) == port and address in _REACHED:
                found.append((int(fields[7]), int(fields[9])))
    return found


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets process ``pid`` holds open."""
    inodes = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


class PortTaken(HarnessError):
    """Someone else listens on the lab's port: its URL and token are not shown."""


def await_own_listener(proc: subprocess.Popen, port: int, timeout: float = START_TIMEOUT) -> None:
    """Return once ``proc`` listens on ``127.0.0.1:port`` and no other socket does; raise
    :class:`PortTaken` (another's listener, naming its uid) or :class:`HarnessError` (the
    server ended or never listened) otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        listeners = port_listeners(port)
        ours = socket_inodes(proc.pid)
        others = sorted({uid for uid, inode in listeners if inode not in ours})
        if others:
            raise PortTaken(f"port {port} on {LOOPBACK} is taken by another process (uid "
                            f"{', '.join(map(str, others))}); the URL and its token are not "
                            "shown: that process would receive the token",
                            "start again (a free port is chosen anew), or give one: nox -s lab "
                            "-- --port N")
        if listeners:
            return
        if proc.poll() is not None:
            raise HarnessError(f"JupyterLab ended (exit status {proc.returncode}) before it "
                               f"listened on {LOOPBACK}:{port}; its own message is above",
                               "start again; if the port was taken, a free one is chosen anew")
        if time.monotonic() > deadline:
            raise HarnessError(f"JupyterLab did not listen on {LOOPBACK}:{port} within "
                               f"{timeout:g}s", "look at its messages above")
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nox -s lab --", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="port on 127.0.0.1 (default: the first free from 8888)")
    parser.add_argument("--root-dir", type=Path, help="folder JupyterLab shows (default: notebooks/)")
    args = parser.parse_args(argv)
    lab = server(args.port, args.root_dir)
    proc = subprocess.Popen(lab.argv(), env=lab.env())
    try:
        await_own_listener(proc, lab.port)
    except BaseException as exc:
        _stop(proc)
        if not isinstance(exc, HarnessError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(lab.instructions(getpass.getuser(), host_name()), flush=True)
    # A SIGTERM for this process is the server's (it used to replace this process); Ctrl-C
    # reaches the server by itself (one process group), which decides when to end.
    signal.signal(signal.SIGTERM, lambda _sig, _frame: proc.terminate())
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:
            continue


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
