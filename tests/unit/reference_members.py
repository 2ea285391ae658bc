"""Writable copies of committed reference runs, for tests that pool them again."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

from harness.archive.reference import reference_root
from harness.studies.registry import discover, get_study
from harness.verdicts.pool import member_paths, pool


def writable_copy(src: Path, dest: Path, as_today: bool = True) -> Path:
    """A writable copy at ``dest`` of the archived run ``src``. ``as_today``: its
    registration.json says today's registration of its study (the committed references
    predate today's registration, so a plain copy is refused by the pool)."""
    shutil.copytree(src, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    if as_today:
        discover()
        study = json.loads((src / "run.json").read_text())["study"]
        (dest / "registration.json").write_text(json.dumps(get_study(study).registration().to_dict()))
    return dest


def members_as_today(pooled: str, parent: Path) -> list[Path]:
    """Writable copies of a pooled reference's members, registered as today."""
    return [writable_copy(member, parent / member.name) for member in member_paths(reference_root() / pooled)]


def pooled_as_today(pooled: str, parent: Path) -> tuple[list[Path], Path]:
    """A pooled reference's members registered as today (under ``parent/runs``) and today's
    pool of them (``parent/pooled``)."""
    runs = members_as_today(pooled, parent / "runs")
    return runs, pool([str(r) for r in runs], str(parent / "pooled"))
