"""JupyterLab on the study notebooks in one command (``nox -s lab``), also as root, also from afar.

The server listens on 127.0.0.1 only, behind a fresh token: a reader on another machine
forwards the port over SSH, so nothing is exposed on the network. It runs as root too (the
harness needs root for namespaces, qdiscs and cgroups; ``jupyter lab`` refuses root without
``--allow-root``). The port is chosen before the start and retries are off, so the URL and
the ``ssh -L`` line printed first are the ones that work. Kernels talk to the server over
Unix sockets (see :mod:`harness.run.kernels`), not TCP ports.

The token reaches the server in its environment (``JUPYTER_TOKEN``, which jupyter_server's
``IdentityProvider.token`` reads when not given on the command line), never in its argv:
/proc/PID/cmdline is readable by every local user, /proc/PID/environ only by the server's
own user (and root), and the server runs as root.
"""

from __future__ import annotations

import argparse
import getpass
import os
import secrets
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from ..archive.archive import project_root

LOOPBACK = "127.0.0.1"


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="nox -s lab --", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, help="port on 127.0.0.1 (default: the first free from 8888)")
    parser.add_argument("--root-dir", type=Path, help="folder JupyterLab shows (default: notebooks/)")
    args = parser.parse_args(argv)
    lab = server(args.port, args.root_dir)
    print(lab.instructions(getpass.getuser(), host_name()), flush=True)
    os.execve(sys.executable, lab.argv(), lab.env())


if __name__ == "__main__":
    main()
