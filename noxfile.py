"""Tasks: `nox -s unit` (before every commit), `nox -s tests`, `nox -s slow`, `nox -s reproduce`,
`nox -s lab`, `nox -s lint`, `nox -s docs` (see README.md)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["lint", "tests"]

ROOT = Path(__file__).parent


def study_notebooks() -> list[tuple[str, dict]]:
    """Every study notebook under notebooks/, in the order its metadata asks (harness.order).

    Read from the notebooks themselves, so a new study's notebook is found without editing
    this file. A notebook whose metadata says ``"nbval": false`` is run by `reproduce` but not
    executed at its defaults under nbval (its ``nbval_reason`` says why and what tests it).
    """
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        meta = json.loads(path.read_text()).get("metadata", {}).get("harness") or {}
        if meta.get("study"):
            found.append((meta.get("order", 100), path.name, str(path.relative_to(ROOT)), meta))
    return [(notebook, meta) for _order, _name, notebook, meta in sorted(found)]


def test_workers() -> int:
    """pytest-xdist workers for `tests`: one per CPU, at most 4 (the VM tests' QEMUs are what
    fills a core; more workers would only stretch each test's runs)."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


def install(session: nox.Session, extras: str = "") -> None:
    session.install("-e", f".[{extras}]" if extras else ".")


LINTED = ("harness", "tests", "noxfile.py", "benchmarks", "docsgen")


@nox.session
def unit(session: nox.Session) -> None:
    """Before every commit, in under 3 minutes: ruff, then the unit tests."""
    install(session, "test,lint")
    session.run("ruff", "check", *LINTED)
    data = tempfile.mkdtemp(prefix="harness-unit-data-")
    session.run("pytest", "-q", "-n", str(test_workers()), "tests/unit", *session.posargs,
                env={"HARNESS_DATA": data, "PYTHONUNBUFFERED": "1", "HARNESS_SHARE_MACHINE": "1"})
    shutil.rmtree(data)


@nox.session
def tests(session: nox.Session) -> None:
    """Unit, integration (real namespaces, iperf3, sshd, VMs) and notebook (nbval) tests."""
    install(session, "test")
    data = tempfile.mkdtemp(prefix="harness-test-data-")
    try:
        session.run(
            "pytest", "-ra", "--nbval-lax", "--nbval-sanitize-with",
            "notebooks/nbval-sanitize.cfg",
            # side by side on test_workers() workers, the longest units first (tests/conftest.py)
            "-n", str(test_workers()), "--dist", "loadfile", "--no-loadscope-reorder", "tests",
            # every log shows where the time went (the suite's budget: docs/explanation/tests.md)
            "--durations=25",
            *(nb for nb, meta in study_notebooks() if meta.get("nbval", True)), *session.posargs,
            # the tests' runs measure nothing for keeps: they share the machine rather than
            # refuse to start beside another run (each records that it shared)
            env={"HARNESS_DATA": data, "PYTHONUNBUFFERED": "1", "HARNESS_SHARE_MACHINE": "1"},
        )
    except BaseException:
        session.log(f"the tests' run archive is kept for inspection: {data}")
        raise
    shutil.rmtree(data)  # passed: the tests' own runs are not worth keeping


@nox.session
def slow(session: nox.Session) -> None:
    """The tests too long for every run of the suite: `nox -s slow`.

    The tests marked ``slow`` (HARNESS_SLOW_TESTS=1; the suite skips them, saying so): S1's
    quick run on two TCG VMs reached as plain machines through an inventory (~15 min), S2's and
    S3's runs killed once their VMs are up, S4 as one Slurm job on the inventory's machines; then
    every study notebook the suite leaves out of nbval
    (metadata ``"nbval": false``: their quick profiles take minutes; the suite runs each
    through ``harness run`` with small parameters) executed under nbval at its defaults.
    """
    install(session, "test")
    data = tempfile.mkdtemp(prefix="harness-test-data-")
    env = {"HARNESS_DATA": data, "PYTHONUNBUFFERED": "1", "HARNESS_SHARE_MACHINE": "1"}
    session.run("pytest", "-ra", "-m", "slow", "tests", *session.posargs,
                env={**env, "HARNESS_SLOW_TESTS": "1"})
    session.run("pytest", "-ra", "--nbval-lax", "--nbval-sanitize-with",
                "notebooks/nbval-sanitize.cfg",
                *(nb for nb, meta in study_notebooks() if not meta.get("nbval", True)), env=env)
    shutil.rmtree(data)


@nox.session
def reproduce(session: nox.Session) -> None:
    """Every ready study on the local lab, archived under data/runs/, reports rendered.

    ``nox -s reproduce -- --share-machine``: measure even while another run measures here.
    """
    install(session)
    profile = os.environ.get("HARNESS_PROFILE", "quick")
    unknown = [arg for arg in session.posargs if arg != "--share-machine"]
    if unknown:
        session.error(f"reproduce takes only --share-machine, not {' '.join(unknown)}")
    share = ["--share-machine"] if "--share-machine" in session.posargs else []
    for notebook, _meta in study_notebooks():
        session.run("harness", "run", notebook, "-p", "profile", profile, *share)
    session.run("harness", "runs")


@nox.session
def lab(session: nox.Session) -> None:
    """JupyterLab on notebooks/ at 127.0.0.1 with a token (root too); prints the URL and `ssh -L` line."""
    install(session)
    session.run("python", "-m", "harness.run.jupyterlab", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff alone (CI runs it before the suite: a lint error fails in seconds)."""
    session.install("ruff>=0.5")
    session.run("ruff", "check", *LINTED)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation (docs/) as a static site in build/site/: each study's registered claims and
    parameters rendered from the harness's CLI first (docsgen/generate.py), MkDocs strict (a broken
    link or anchor, or a page missing from the nav, fails), then checked to fetch nothing from outside
    itself (docsgen/offline.py)."""
    install(session, "docs")
    session.run("python", "docsgen/generate.py")
    session.run("mkdocs", "build", "--strict", "--clean")
    session.run("python", "docsgen/offline.py", "build/site")
