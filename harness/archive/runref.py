"""A run named on the command line: its folder, or its id (``20261122T000632Z-a066ce``),
or the start of an id when only one run has it, or an RO-Crate ``harness export`` wrote
(:mod:`harness.archive.crate_open`)."""

from __future__ import annotations

from pathlib import Path

from ..errors import SpecError
from .archive import RUN_FILE, Run, runs_root


def resolve_run(ref: str, root: Path | None = None) -> Run:
    """The run ``ref`` names; one clear error when it names none or several."""
    path = Path(ref)
    if (path / RUN_FILE).is_file():
        return Run(path.resolve())
    from .crate_open import crate_run

    in_crate = crate_run(ref)
    if in_crate is not None:
        return in_crate
    if path.exists():
        raise SpecError(f"{ref} is not a run folder (it has no {RUN_FILE})",
                        "give a folder under data/runs/<study>/ or a run id (`harness runs`)")
    base = runs_root(root)
    found = sorted(p.parent for p in base.glob(f"*/{path.name}*/{RUN_FILE}"))
    if not found:
        raise SpecError(f"no run {ref!r} under {base}",
                        "`harness runs` lists the archived runs and their ids")
    if len(found) > 1:
        raise SpecError(f"{ref!r} names {len(found)} runs: "
                        + ", ".join(p.name for p in found[:5]),
                        "give more of the id, or the run folder")
    return Run(found[0])
