"""What provenance.collect records about where a run came from, checked against the real values."""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
from importlib import metadata

import pytest

from harness.archive import provenance


def git(repo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "commit.gpgsign=false", *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A git repository of its own with one commit on branch 'study'."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "study")
    (path / "tracked.txt").write_text("one\n")
    git(path, "add", "tracked.txt")
    git(path, "commit", "-q", "-m", "first")
    return path


def test_clean_repository_gives_its_commit_and_branch(repo):
    state = provenance.git_state(repo)
    assert state["commit"] == git(repo, "rev-parse", "HEAD")
    assert len(state["commit"]) == 40
    assert state["branch"] == "study"
    assert state["dirty"] is False
    assert state["changed_files"] == []


def test_changed_tracked_file_makes_it_dirty_and_is_named(repo):
    first = git(repo, "rev-parse", "HEAD")
    (repo / "tracked.txt").write_text("two\n")
    state = provenance.git_state(repo)
    assert state["dirty"] is True
    assert [line.split()[-1] for line in state["changed_files"]] == ["tracked.txt"]
    assert state["commit"] == first  # the commit the change sits on
    git(repo, "commit", "-q", "-am", "second")
    state = provenance.git_state(repo)
    assert state["commit"] == git(repo, "rev-parse", "HEAD") != first
    assert state["dirty"] is False


def test_untracked_files_outside_the_code_do_not_make_it_dirty(repo):
    """Run outputs and caches lie untracked in a checkout; they are not code changes."""
    (repo / "untracked.txt").write_text("x\n")
    (repo / "data").mkdir()
    (repo / "data" / "run.json").write_text("{}\n")
    assert provenance.git_state(repo)["dirty"] is False


@pytest.mark.parametrize("where", ["harness/studies/s9.py", "notebooks/s9_new.ipynb"])
def test_a_new_study_not_yet_committed_makes_it_dirty_and_is_named(repo, where):
    """A run of a study whose module or notebook is not committed ran code that no commit holds."""
    (repo / where).parent.mkdir(parents=True)
    (repo / where).write_text("x = 1\n")
    state = provenance.git_state(repo)
    assert state["dirty"] is True
    assert [line.split()[-1] for line in state["changed_files"]] == [where]


def test_file_digests_are_content_hashes_whether_tracked_or_not(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("x = 2\n")
    first = provenance.file_digests([a, b])
    assert set(first) == {str(a), str(b)} and first[str(a)] != first[str(b)]
    a.write_text("x = 2\n")
    assert provenance.file_digests([a])[str(a)] == first[str(b)]
    assert provenance.file_digests([tmp_path / "missing.py"]) == {}


def test_outside_a_repository_git_facts_are_unknown_not_false(tmp_path):
    state = provenance.git_state(tmp_path)  # tmp_path is not inside a git repository
    assert state == {"commit": None, "dirty": None, "changed_files": [], "branch": None}


def test_package_versions_are_the_installed_ones_and_missing_ones_are_none(monkeypatch):
    monkeypatch.setattr(provenance, "PACKAGES", ("pandas", "no-such-package-harness-test"))
    import pandas

    assert provenance.package_versions() == {"pandas": pandas.__version__,
                                             "no-such-package-harness-test": None}


def test_collect_records_code_python_packages_and_controller(repo):
    record = provenance.collect(repo)
    assert record["git"]["commit"] == git(repo, "rev-parse", "HEAD")
    assert record["python"] == platform.python_version()
    assert record["python_executable"] == sys.executable
    assert set(record["packages"]) == set(provenance.PACKAGES)
    assert record["packages"]["pandas"] == metadata.version("pandas")
    uname = os.uname()
    assert record["controller"] == {
        "hostname": socket.gethostname(), "kernel": uname.release,
        "kernel_version": uname.version, "machine": uname.machine, "cpus": os.cpu_count()}
    assert record["command"] == sys.argv
    # it goes into run.json as it is
    assert json.loads(json.dumps(record)) == record
