"""A run inside an RO-Crate that ``harness export`` wrote, opened for reading.

``harness compare`` and ``harness claims`` take a crate where they take a run folder: the
crate (a folder, or a zip, which the ``rocrate`` library extracts into a temporary folder
removed at exit) when it holds one run, or ``CRATE/<study>/<run-id>`` for one of several.
The runs are the results of the crate's ``CreateAction``s (:mod:`harness.archive.crate`)
that are folders holding a run.json. Nothing is written into the crate: commands that
write (a compare page, a pooled folder) write into the data folder, as for any run.
"""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath

from ..errors import SpecError
from .archive import RUN_FILE, Run

METADATA_FILE = "ro-crate-metadata.json"


def crate_of(path: Path) -> tuple[Path, PurePosixPath] | None:
    """(the crate, the path inside it) when ``path`` is a crate or names something inside a
    zipped one; None otherwise."""
    if path.is_dir() and (path / METADATA_FILE).is_file():
        return path, PurePosixPath(".")
    for crate in (path, *path.parents):
        if crate.is_file() and zipfile.is_zipfile(crate):
            return crate, PurePosixPath(path.relative_to(crate).as_posix())
    return None


def crate_runs(crate: Path) -> tuple[Path, list[Path]]:
    """The crate's folder (a zip's: where it was extracted) and the run folders it describes."""
    from rocrate.rocrate import ROCrate

    try:
        opened = ROCrate(crate)
    except (ValueError, KeyError, OSError, zipfile.BadZipFile) as exc:
        raise SpecError(f"{crate} is not an RO-Crate harness can read: {exc}",
                        "give a crate `harness export` wrote, or a run folder") from None
    root = Path(opened.source)
    found = []
    for action in opened.get_by_type("CreateAction"):
        results = action.get("result") or []
        for result in results if isinstance(results, list) else [results]:
            if "Dataset" not in _types(result):
                continue
            folder = (root / result.id).resolve()
            if folder.is_relative_to(root.resolve()) and (folder / RUN_FILE).is_file():
                found.append(folder)
    return root.resolve(), sorted(dict.fromkeys(found))


def _types(entity) -> set[str]:
    kind = getattr(entity, "type", None)
    return set(kind if isinstance(kind, list) else [kind])


def crate_run(ref: str) -> Run | None:
    """The run ``ref`` names in a crate; None when ``ref`` is no crate; one clear error when
    the crate holds no such run, or several and ``ref`` does not say which."""
    found = crate_of(Path(ref))
    if found is None:
        return None
    crate, inside = found
    root, runs = crate_runs(crate)
    if inside != PurePosixPath("."):
        wanted = [r for r in runs if PurePosixPath(r.relative_to(root).as_posix()) == inside]
        if not wanted:
            raise SpecError(f"the crate {crate} holds no run {inside}",
                            "its runs: " + ", ".join(f"{crate}/{r.relative_to(root).as_posix()}"
                                                     for r in runs))
        return Run(wanted[0])
    if len(runs) == 1:
        return Run(runs[0])
    if not runs:
        raise SpecError(f"the crate {crate} describes no run (no CreateAction whose result is "
                        f"a folder with a {RUN_FILE})", "give a crate `harness export` wrote")
    raise SpecError(f"the crate {crate} holds {len(runs)} runs",
                    "name one: " + ", ".join(f"{crate}/{r.relative_to(root).as_posix()}"
                                             for r in runs))
