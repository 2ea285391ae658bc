"""Whether a run's registration was committed before the run started (issue 33 item 9).

A verdict reference counts only if its claims were fixed before its data: the registration
file the run read (its SHA-256 in ``run.json``'s ``code_digests``) must be the study's file as
committed in the repository at the run's commit, that commit's tree clean, and the last commit
that changed the file older than the run's start. The file's bytes are compared, not a digest
of its parsed form, so a later change of the parser cannot hide or invent a difference. All
of it is read from what the run recorded (``run.json``'s provenance, ``code_digests`` and
``started``) and from git, never from the run's own word.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


@dataclass(frozen=True)
class RegisteredFirst:
    """The answer for one run: ``ok``, or why not, with the times read."""

    ok: bool
    why: str
    committed: str = ""  # the last commit time of the registration file, at the run's commit
    started: str = ""


def _git(repo: Path, *args: str) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    if done.returncode != 0:
        raise LookupError(done.stderr.decode(errors="replace").strip() or f"git {' '.join(args)} failed")
    return done.stdout


def registered_first(run: Path, registration_file: Path, repo: Path) -> RegisteredFirst:
    """Check ``run`` (a complete run folder) against ``registration_file`` (its study's file, a
    path inside ``repo``, the git checkout the run was made from)."""
    meta = json.loads((run / "run.json").read_text())
    git = (meta.get("provenance") or {}).get("git") or {}
    started = str(meta.get("started") or "")
    commit = str(git.get("commit") or "")
    if not commit:
        return RegisteredFirst(False, "run.json records no git commit: the registration's commit cannot be "
                                      "checked", started=started)
    if git.get("dirty"):
        changed = ", ".join(git.get("changed_files") or []) or "files not listed"
        return RegisteredFirst(False, f"made from a dirty tree at {commit[:12]} ({changed}): what ran was "
                                      "not what was committed", started=started)
    relative = registration_file.resolve().relative_to(repo.resolve()).as_posix()
    read = str((meta.get("code_digests") or {}).get(relative) or "")
    if not read:
        return RegisteredFirst(False, f"run.json's code_digests has no {relative}: the run did not record "
                                      "which registration file it read", started=started)
    try:
        committed = _git(repo, "log", "-1", "--format=%cI", commit, "--", relative).decode().strip()
        content = _git(repo, "show", f"{commit}:{relative}")
    except LookupError as exc:
        return RegisteredFirst(False, f"git cannot show {relative} at {commit[:12]}: {exc}", started=started)
    if not committed:
        return RegisteredFirst(False, f"{relative} was not committed at {commit[:12]}", started=started)
    digest = "sha256:" + hashlib.sha256(content).hexdigest()
    if digest != read:
        return RegisteredFirst(False, f"the run read {relative} {read[7:19]}, but at {commit[:12]} it is "
                                      f"{digest[7:19]}", committed, started)
    if not started or datetime.fromisoformat(committed) >= datetime.fromisoformat(started):
        return RegisteredFirst(False, f"{relative} was last committed {committed}, not before the run "
                                      f"started ({started or 'no start recorded'})", committed, started)
    return RegisteredFirst(True, f"registered {committed}, before the run started {started}", committed, started)
