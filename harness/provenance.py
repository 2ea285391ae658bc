"""Where a run came from: code version, packages, tools, kernel, machine."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("harness", "papermill", "nbformat", "nbconvert", "jupyterlab", "ipykernel",
            "pandas", "pyarrow", "seaborn", "matplotlib", "paramiko", "pyroute2", "pyyaml",
            "nbval")


def git_state(repo: Path) -> dict:
    def git(*args: str) -> str | None:
        try:
            res = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                                 timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return res.stdout.strip() if res.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "dirty": bool(status) if status is not None else None,
        "changed_files": status.splitlines() if status else [],
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
    }


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def collect(repo: Path) -> dict:
    """Provenance of the controlling machine (node capabilities are recorded separately)."""
    uname = platform.uname()
    return {
        "git": git_state(repo),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "packages": package_versions(),
        "controller": {
            "hostname": socket.gethostname(),
            "kernel": uname.release,
            "kernel_version": uname.version,
            "machine": uname.machine,
            "cpus": os.cpu_count(),
        },
        "command": sys.argv,
    }
