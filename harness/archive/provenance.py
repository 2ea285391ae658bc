"""Where a run came from: code version, packages, tools, kernel, machine."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

#: the folders whose untracked files are code a run may have run (see git_state)
CODE_FOLDERS = ("harness", "notebooks", "tests/studies")
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
    # A new study's module or notebook that is not committed yet is code the run ran: an
    # untracked file where code lives makes the checkout dirty (data/ and the rest do not).
    untracked = git("status", "--porcelain", "--untracked-files=all", "--", *CODE_FOLDERS)
    new_code = [line for line in (untracked or "").splitlines() if line.startswith("??")]
    changed = (status.splitlines() if status else []) + new_code
    return {
        "commit": commit,
        "dirty": bool(changed) if status is not None else None,
        "changed_files": changed,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
    }


def file_digests(paths) -> dict[str, str]:
    """SHA-256 of each file, by its path relative to the project (absolute when outside it):
    what a run's code was, whether git tracks it or not."""
    import hashlib

    root = Path(__file__).resolve().parents[2]
    out = {}
    for path in paths:
        path = Path(path).resolve()
        try:
            data = path.read_bytes()
        except OSError:
            continue
        try:
            name = str(path.relative_to(root))
        except ValueError:
            name = str(path)
        out[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    return out


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
