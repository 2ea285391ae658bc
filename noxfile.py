"""Tasks: `nox -s tests`, `nox -s reproduce`, `nox -s lint` (see README.md)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "tests"]

ROOT = Path(__file__).parent
# Studies whose notebooks are ready, in the order `reproduce` runs them.
NOTEBOOKS = [
    "notebooks/s4_mptcp.ipynb",
    "notebooks/s0_relay.ipynb",
    "notebooks/s3_tipc.ipynb",
]
# Notebooks nbval executes at their defaults. S3's quick profile needs a TCG VM
# for ~10-15 min; tests/integration/test_s3.py runs the same notebook through
# papermill with small parameters instead.
NBVAL_NOTEBOOKS = [nb for nb in NOTEBOOKS if "s3_" not in nb]


def install(session: nox.Session, extras: str = "") -> None:
    session.install("-e", f".[{extras}]" if extras else ".")


@nox.session
def tests(session: nox.Session) -> None:
    """Unit, integration (real namespaces, iperf3, sshd, VMs) and notebook (nbval) tests."""
    install(session, "test")
    data = tempfile.mkdtemp(prefix="harness-test-data-")
    try:
        session.run(
            "pytest", "-ra", "--nbval-lax", "--nbval-sanitize-with",
            "notebooks/nbval-sanitize.cfg", "tests", *NBVAL_NOTEBOOKS, *session.posargs,
            env={"HARNESS_DATA": data, "PYTHONUNBUFFERED": "1"},
        )
    except BaseException:
        session.log(f"the tests' run archive is kept for inspection: {data}")
        raise
    shutil.rmtree(data)  # passed: the tests' own runs are not worth keeping


@nox.session
def reproduce(session: nox.Session) -> None:
    """Every ready study on the local lab, archived under data/runs/, reports rendered."""
    install(session)
    profile = os.environ.get("HARNESS_PROFILE", "quick")
    for notebook in NOTEBOOKS:
        session.run("harness", "run", notebook, "-p", "profile", profile)
    session.run("harness", "runs")


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "harness", "tests", "noxfile.py", "benchmarks")
