"""Writable copies of a committed pooled reference's members, for tests that pool them again."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

from harness.archive.reference import reference_root
from harness.studies.registry import discover, get_study
from harness.verdicts.pool import member_paths


def members_as_today(pooled: str, parent: Path) -> list[Path]:
    """Writable copies of a pooled reference's members, registered as today (as test_pool.py's
    copy_run: the committed references predate today's registration)."""
    discover()
    out = []
    for member in member_paths(reference_root() / pooled):
        dest = parent / member.name
        shutil.copytree(member, dest)
        for path in [dest, *dest.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        study = json.loads((member / "run.json").read_text())["study"]
        (dest / "registration.json").write_text(json.dumps(get_study(study).registration().to_dict()))
        out.append(dest)
    return out
