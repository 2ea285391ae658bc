"""A reference's registration committed before the run started (harness.archive.registered_first)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.archive.registered_first import registered_first

REL = "harness/studies/s9/registration.toml"


def _git(repo: Path, *args: str, when: str = "2026-11-29T01:00:00+00:00") -> str:
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when, "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    (root / REL).parent.mkdir(parents=True)
    (root / REL).write_text('study = "s9"\n')
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "register s9")
    return root, _git(root, "rev-parse", "HEAD")


def _run(tmp_path: Path, commit: str, started: str, content: bytes = b'study = "s9"\n', dirty: bool = False,
         digests: bool = True) -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    meta = {"started": started, "provenance": {"git": {"commit": commit, "dirty": dirty,
                                                      "changed_files": [REL] if dirty else []}}}
    if digests:
        meta["code_digests"] = {REL: "sha256:" + hashlib.sha256(content).hexdigest()}
    (run / "run.json").write_text(json.dumps(meta))
    return run


def test_a_run_started_after_its_registration_was_committed_passes(repo, tmp_path):
    root, commit = repo
    got = registered_first(_run(tmp_path, commit, "2026-11-29T02:00:00+00:00"), root / REL, root)
    assert got.ok and got.committed == "2026-11-29T01:00:00+00:00"


@pytest.mark.parametrize("case, words", [
    ("started before the commit", "not before the run started"),
    ("dirty tree", "dirty tree"),
    ("read another file", "but at"),
    ("no digest recorded", "did not record which registration file"),
    ("no commit recorded", "records no git commit"),
])
def test_a_run_whose_registration_was_not_committed_first_is_refused_with_the_reason(repo, tmp_path, case, words):
    root, commit = repo
    kwargs = {"started before the commit": dict(started="2026-11-29T00:59:00+00:00"),
              "dirty tree": dict(dirty=True),
              "read another file": dict(content=b'study = "s9"\n# edited before the run\n'),
              "no digest recorded": dict(digests=False),
              "no commit recorded": dict(commit="")}[case]
    run = _run(tmp_path, **{"commit": commit, "started": "2026-11-29T02:00:00+00:00", **kwargs})
    got = registered_first(run, root / REL, root)
    assert not got.ok and words in got.why, got.why


def test_a_later_commit_of_the_registration_does_not_count_against_an_earlier_run(repo, tmp_path):
    root, commit = repo
    (root / REL).write_text('study = "s9"\n# changed after the run\n')
    _git(root, "commit", "-qam", "change", when="2026-11-29T03:00:00+00:00")
    assert registered_first(_run(tmp_path, commit, "2026-11-29T02:00:00+00:00"), root / REL, root).ok
