"""The archive's commands: ``harness index``, ``harness compare``, ``harness rerun``.

Kept apart from :mod:`harness.cli` (which adds them with :func:`add_commands`);
each only reads archived runs, and writes outside every run folder (a rerun: into this
user's own data folder).
"""

from __future__ import annotations

import sys


def cmd_index(args) -> int:
    from ..archive.index import write_index

    print(f"index {write_index()}")
    return 0


def cmd_compare(args) -> int:
    from ..archive.compare import Comparison, compare_page, page_name, sweep_summary
    from ..archive.runref import resolve_run
    from ..errors import SpecError

    if args.sweep:
        if args.runs:
            raise SpecError("give runs or --sweep, not both")
        comparison, page = sweep_summary(args.sweep)
    else:
        if len(args.runs) < 2:
            raise SpecError("compare needs two runs or more",
                            "harness compare RUN RUN... (ids or folders; `harness runs` lists "
                            "them), or --sweep SWEEP.yaml")
        runs = [resolve_run(ref) for ref in args.runs]
        comparison = Comparison.of(runs)
        page = compare_page(comparison, page_name(runs),
                            "compare " + ", ".join(r.run_id for r in runs))
    print(comparison.text())
    print(f"\npage {page}")
    return 0


def cmd_rerun(args) -> int:
    from ..archive.index import refresh
    from ..archive.runref import resolve_run
    from ..run.rerun import rerun

    original = resolve_run(args.run)
    result = rerun(original, progress=not args.quiet, inventory=args.inventory,
                   warn=lambda text: print(text, file=sys.stderr))
    print(f"run {result.run.path}: {result.status} in {result.seconds:.1f}s (rerun of "
          f"{original.run_id})")
    if result.report:
        print(f"report {result.report}")
    refresh()  # the index of the data folder the rerun went to: this user's own
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    return 0


def add_commands(sub) -> None:
    index = sub.add_parser("index", help="write data/index.html: every run, with filters")
    index.set_defaults(func=cmd_index)

    compare = sub.add_parser("compare", help="what differs between runs, results side by side")
    compare.add_argument("runs", nargs="*", help="run ids or folders")
    compare.add_argument("--sweep", help="a sweep file: compare the runs of its points")
    compare.set_defaults(func=cmd_compare)

    rerun = sub.add_parser("rerun", help="run an archived run's notebook and parameters again")
    rerun.add_argument("run", help="a run id or folder")
    rerun.add_argument("--inventory", help="run on the real machines of this inventory "
                       "(needed for a run made on machines: the one its run.json names is "
                       "never used)")
    rerun.add_argument("-q", "--quiet", action="store_true", help="no progress")
    rerun.set_defaults(func=cmd_rerun)
