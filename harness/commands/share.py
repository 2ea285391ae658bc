"""Sharing the archive: ``harness export RUN... --crate OUT`` and ``harness site OUT``.

Kept apart from :mod:`harness.cli` (which adds them with :func:`add_commands`). Both only
read archived runs and write one new path, never over an existing one.
"""

from __future__ import annotations


def cmd_export(args) -> int:
    from pathlib import Path

    from ..archive.crate import DEFAULT_LICENSE, export
    from ..archive.runref import resolve_run
    from ..errors import SpecError

    runs = [resolve_run(ref) for ref in args.runs]
    if args.sweep:
        from ..run.sweep import Sweep, point_runs

        found = [run for _point, run in point_runs(Sweep.load(args.sweep)) if run is not None]
        if not found:
            raise SpecError(f"no point of sweep {args.sweep} has a complete run yet",
                            f"run it first: harness batch {args.sweep}")
        runs += found
    if not runs:
        raise SpecError("export needs a run", "harness export RUN... --crate OUT (ids, run or "
                        "pooled folders), or --sweep SWEEP.yaml")
    done = export(runs, Path(args.crate), args.license or DEFAULT_LICENSE)
    print(f"crate {done.path}: {len(done.runs)} run(s), {done.files} files "
          f"({', '.join(done.runs)})")
    return 0


def cmd_site(args) -> int:
    from pathlib import Path

    from ..archive.site import write_site

    site = write_site(Path(args.out))
    print(f"site {site.path}: {site.runs} run(s), {site.pages} compare page(s), "
          f"{site.files} files; open {site.path / 'index.html'}")
    return 0


def add_commands(sub) -> None:
    export = sub.add_parser("export", help="runs as an RO-Crate (Process Run Crate) to deposit")
    export.add_argument("runs", nargs="*", metavar="RUN",
                        help="run ids or folders (a pooled reference's folder too)")
    export.add_argument("--crate", required=True, metavar="OUT",
                        help="the new crate: a folder, or a zip for a name ending .zip "
                        "(never written over)")
    export.add_argument("--sweep", help="also the latest complete run of each point of this sweep")
    export.add_argument("--license", metavar="SPDX",
                        help="the crate's license as an SPDX id (default CC-BY-4.0, Zenodo's)")
    export.set_defaults(func=cmd_export)

    site = sub.add_parser("site", help="the archive as one folder of static pages to publish")
    site.add_argument("out", help="the new folder (never written over)")
    site.set_defaults(func=cmd_site)
