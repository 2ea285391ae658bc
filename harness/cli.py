"""The ``harness`` command: probe, params, run, batch, lab show/clean, runs, index, compare,
rerun, claims, export, site."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import HarnessError


def cmd_probe(args) -> int:
    from .lab.probe import probe
    from .nodes import LocalNode

    nodes = [LocalNode("local")]
    if args.inventory:
        from .machines.inventory import Inventory

        inv = Inventory.load(args.inventory)
        nodes += [inv.connect(name) for name in inv.hosts]
    from .studies import discover

    studies = discover()  # every study's tools are declared when its module loads
    print("studies: " + ", ".join(sorted(studies)))
    for node in nodes:
        print(probe(node).describe())
        node.close()
    from .lab.placement import vm_offer

    print(vm_offer().describe())
    return 0


def share_machine(args) -> None:
    """``--share-machine``: the run's kernel (a child) inherits the request from the environment."""
    if getattr(args, "share_machine", False):
        import os

        from .run.machinelock import SHARE_ENV

        os.environ[SHARE_ENV] = "1"


def cmd_run(args) -> int:
    from .archive.index import refresh
    from .run.execute import parameters_file, parse_value, run_notebook

    share_machine(args)
    params = {**(parameters_file(args.file) if args.file else {}),
              **{name: parse_value(value) for name, value in args.parameter or []}}
    if args.inventory:
        params["inventory"] = args.inventory
    from .commands.slurm import check_flags

    if check_flags(args):  # --slurm (submit) or --inventory slurm (inside an allocation)
        from .commands.slurm import run as slurm_run

        return slurm_run(args, params)
    if args.dry_run:
        from .run.execute import check_parameters
        from .run.runner import dry_run_study

        study, resolved = check_parameters(Path(args.notebook).resolve(), params)
        print(dry_run_study(study, resolved, params.get("inventory") or ""))
        return 0
    result = run_notebook(args.notebook, params, progress=not args.quiet)
    print(f"run {result.run.path}: {result.status} in {result.seconds:.1f}s")
    refresh()
    if result.report:
        print(f"report {result.report}")
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
    if result.left:
        return print_left_behind(result.left, result.run.path)
    return 1 if result.error else 0


def print_left_behind(left: list[dict], run_path) -> int:
    """Name each change still there after its undo (what, why, how to finish); return the
    exit status that says something was left (:data:`~harness.journal.undo_left.EXIT_LEFT_BEHIND`)."""
    from .journal.trust import printable
    from .journal.undo_left import EXIT_LEFT_BEHIND

    print(f"left on the machine by {run_path}: {len(left)} change(s) still there after their undo",
          file=sys.stderr)
    for item in left:
        print(printable(f"  {item.get('kind')} on {item.get('node')}: {item.get('why')}"),
              file=sys.stderr)
    print("  `harness lab clean` retries exactly these", file=sys.stderr)
    return EXIT_LEFT_BEHIND


def cmd_batch(args) -> int:
    from .archive.compare import sweep_summary
    from .archive.index import refresh
    from .run.sweep import run_sweep

    share_machine(args)
    from .commands.slurm import batch as slurm_batch
    from .commands.slurm import check_flags

    if check_flags(args, batch=True):  # --slurm, --status
        return slurm_batch(args)
    if args.dry_run:
        raise HarnessError("batch --dry-run goes with --slurm (it prints the job script)",
                           "add --slurm \"SBATCH OPTIONS\", or dry-run one point with "
                           "harness run NB --dry-run")
    from .archive.archive import Run

    outcomes = run_sweep(args.sweep, progress=not args.quiet)
    failed, left = 0, 0
    for status, point, path in outcomes:
        print(f"{status:10s} {point} {path or ''}")
        failed += status == "incomplete"
        if path is not None and (items := Run(Path(path)).meta.get("left_behind")):
            print_left_behind(items, path)
            left += 1
    refresh()
    if failed < len(outcomes):
        print(f"summary {sweep_summary(args.sweep)[1]}")
    if left:
        from .journal.undo_left import EXIT_LEFT_BEHIND

        return EXIT_LEFT_BEHIND
    return 1 if failed else 0


def cmd_lab_show(args) -> int:
    from .run.execute import parse_value
    from .studies import study_for

    study = study_for(args.study)
    params = study.parameters(**{name: parse_value(value) for name, value in args.parameter or []})
    print(study.describe())
    print(study.topology(params).describe())
    return 0


def cmd_params(args) -> int:
    """Each parameter of a study notebook: its value in the notebook, profiles, range and help."""
    from .run.execute import HARNESS_PARAMETERS, notebook_defaults
    from .studies import study_for
    from .studies.parameters import format_parameters

    study = study_for(args.notebook)
    defaults = notebook_defaults(Path(args.notebook)) if args.notebook.endswith(".ipynb") else None
    print(study.describe())
    print(format_parameters(study.Params, defaults, HARNESS_PARAMETERS))
    return 0


def cmd_lab_clean(args) -> int:
    """Finish the undo of runs that crashed, from each run's own journal.

    A journal is trusted no further than it can be checked (harness.journal.journal): its unsound
    lines are reported and skipped, its writer counts as running only if the same pid
    started at the same tick on this machine and boot, records of another machine or
    boot are refused, and one run that cannot be cleaned does not stop the others."""
    from .archive.archive import list_runs
    from .journal.trust import printable  # a journal's text never reaches the terminal raw

    cleaned = failed = left = 0
    for run in list_runs(root=Path(args.data) if args.data else None):
        try:
            journal = run.journal
        except HarnessError as exc:  # a folder, FIFO or symlink for a journal: the others go on
            print(printable(f"could not clean {run.path}: {exc}"))
            failed += 1
            continue
        for problem in journal.problems:
            print(printable(f"warning: {problem}"))
        pending = journal.pending()
        if not pending:
            continue
        running = journal.live_writers()
        if running:
            print(printable(f"skip {run.path}: process {running[0]} that made these changes still runs"))
            continue
        try:
            from .vm import forget_changes_in_vms

            forgotten = forget_changes_in_vms(journal)
            if forgotten:
                print(printable(f"{run.path}: {forgotten} change(s) inside VMs end with their VM"))
            pending = journal.pending()
            print(printable(f"{run.path}: undoing {len(pending)} change(s)"))
            for entry in reversed(pending):
                again = f" (its undo failed before: {entry.undo_error})" if entry.undo_error else ""
                print(printable(f"  {entry.kind} {entry.data}{again}"))
            journal.undo_all()
            cleaned += 1
        except Exception as exc:  # noqa: BLE001 -- report it, clean the other runs
            print(printable(f"could not clean {run.path} completely: {exc}"))
            failed += 1
            left += len(journal.left())
    from .run.machinelock import clear_stale

    for run_id in clear_stale():
        print(printable(f"released this machine's lock left by run {run_id}, whose process is gone"))
        cleaned += 1
    print(f"cleaned {cleaned} run(s)" if cleaned else "nothing cleaned" if failed else
          "nothing to clean")
    if left:
        from .journal.undo_left import EXIT_LEFT_BEHIND

        print(f"left on the machine: {left} change(s) still there after their undo (listed "
              "above); run `harness lab clean` again once what holds them is gone", file=sys.stderr)
        return EXIT_LEFT_BEHIND
    return 1 if failed else 0


def cmd_runs(args) -> int:
    from .archive.archive import list_runs

    for run in list_runs(args.study):
        try:
            meta = run.meta
            status = meta["status"]
        except (ValueError, KeyError, TypeError, OSError):  # one damaged run.json: the others
            print(f"{'unreadable':10s} {run.path}  (run.json is not a run's record)")
            continue
        print(f"{status:10s} {run.path}  {meta.get('started')}  "
              f"{meta.get('parameters', {}).get('profile') or '':8s} "
              f"{verdict_summary(run.path) if status == 'complete' else ''}"
              f"{meta.get('error') or ''}")
    return 0


def verdict_summary(run_path) -> str:
    """'2 reproduced, 1 inconclusive; targets: 1 met' from a run's archived claims table."""
    from pathlib import Path

    import pandas as pd

    from .verdicts.claims import summaries

    path = Path(run_path) / "claims.csv"
    return summaries(pd.read_csv(path)) if path.exists() else "(no claims table)"


SHARE_HELP = ("measure even while another run measures on the same machine (both runs record "
              "it); without it such a run is refused")


def add_slurm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--slurm", metavar="OPTIONS",
                   help="submit to Slurm as a batch job (a sweep: one job array), with these "
                   "sbatch options (--partition, --account, --time, --qos, --constraint, ...)")
    p.add_argument("--wait", action="store_true",
                   help="with --slurm: follow the jobs to their end (else print their ids)")
    p.add_argument("--inventory-template", metavar="FILE",
                   help="with --slurm or --inventory slurm: the allocated nodes' SSH settings, "
                   "devices and addresses (harness/slurm/allocation.py); '-' reads stdin")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    probe = sub.add_parser("probe", help="what this machine (and inventory hosts) can do")
    probe.add_argument("--inventory", help="YAML inventory of real machines to probe too")
    probe.set_defaults(func=cmd_probe)

    run = sub.add_parser("run", help="run a study notebook through papermill and archive it")
    run.add_argument("notebook")
    run.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                     help="set a notebook parameter (value parsed as YAML)")
    run.add_argument("-f", "--file", help="parameters from a YAML file (-p overrides it)")
    run.add_argument("--inventory", help="run on the real machines of this inventory; 'slurm': "
                     "on the nodes of the Slurm allocation this runs in")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    run.add_argument("--dry-run", action="store_true",
                     help="print every change the run would make, change nothing, archive nothing")
    run.add_argument("--share-machine", action="store_true", help=SHARE_HELP)
    add_slurm_options(run)
    run.set_defaults(func=cmd_run)

    batch = sub.add_parser("batch", help="run a resumable parameter sweep")
    batch.add_argument("sweep")
    batch.add_argument("-q", "--quiet", action="store_true")
    batch.add_argument("--share-machine", action="store_true", help=SHARE_HELP)
    batch.add_argument("--dry-run", action="store_true",
                       help="with --slurm: print the job script, submit nothing")
    batch.add_argument("--status", action="store_true",
                       help="each point's state: complete, pending, running, failed (with "
                       "Slurm's state and the job's log)")
    add_slurm_options(batch)
    batch.set_defaults(func=cmd_batch)

    lab = sub.add_parser("lab", help="inspect or clean labs")
    labsub = lab.add_subparsers(dest="lab_command", required=True)
    show = labsub.add_parser("show", help="print a study's topology")
    show.add_argument("study", help="a study's name or its notebook")
    show.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                      help="a study parameter (value parsed as YAML)")
    show.set_defaults(func=cmd_lab_show)
    clean = labsub.add_parser("clean", help="undo what crashed runs left, from their journals")
    clean.add_argument("--data", help="data folder (default: the project's data/)")
    clean.set_defaults(func=cmd_lab_clean)

    params = sub.add_parser("params", help="a study's parameters: defaults, ranges, help")
    params.add_argument("notebook", help="a study notebook (or a study's name)")
    params.set_defaults(func=cmd_params)

    runs = sub.add_parser("runs", help="list archived runs")
    runs.add_argument("study", nargs="?")
    runs.set_defaults(func=cmd_runs)

    from .commands.claims import add_claims_command
    from .commands.runs import add_commands
    from .commands.share import add_commands as add_share_commands

    add_commands(sub)  # index, compare, rerun
    add_share_commands(sub)  # export, site
    add_claims_command(sub)  # claims show, claims history
    return p


def main(argv: list[str] | None = None) -> int:
    from .commands.slurm import joined_option_values

    args = parser().parse_args(joined_option_values(sys.argv[1:] if argv is None else argv))
    try:
        return args.func(args)
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        left = getattr(exc, "left_behind", None)
        if left:
            print("harness: interrupted; the run is marked incomplete", file=sys.stderr)
            return print_left_behind(left, getattr(exc, "run_path", "the run"))
        print("harness: interrupted; every change was undone and the run is marked incomplete",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
