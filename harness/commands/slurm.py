"""The Slurm side of ``harness run`` and ``harness batch``: --slurm, --wait, --status,
--inventory slurm, --inventory-template and --dry-run with --slurm (harness/cli.py hands over).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ..errors import SpecError


def _index() -> None:
    from ..archive.index import refresh

    refresh()


def check_flags(args, batch: bool = False) -> bool:
    """True when this command is Slurm's; Slurm-only flags without Slurm are refused."""
    slurm = getattr(args, "slurm", None) is not None
    in_allocation = getattr(args, "inventory", None) == "slurm"
    if slurm and in_allocation:
        raise SpecError("--slurm submits a job and --inventory slurm runs inside one",
                        "give one of them")
    if not (slurm or in_allocation):
        for flag in ("wait", "inventory_template"):
            if getattr(args, flag, None):
                raise SpecError(f"--{flag.replace('_', '-')} goes with --slurm"
                                + ("" if batch else " or --inventory slurm"),
                                "add --slurm \"SBATCH OPTIONS\", or leave it out")
        return bool(batch and getattr(args, "status", False))
    if getattr(args, "wait", False) and getattr(args, "dry_run", False):
        raise SpecError("--dry-run submits nothing, so there is nothing to --wait for",
                        "leave out one of them")
    return True


def run(args, params: dict) -> int:
    """``harness run NB --slurm OPTS`` (submit) or ``--inventory slurm`` (inside a job)."""
    if args.inventory == "slurm":
        return run_in_allocation(args, params)
    from ..slurm.submit import follow_job, submit_points, template_of

    notebook = Path(args.notebook).resolve()
    job_id, script = submit_points(notebook, notebook, [params], args.slurm,
                                   template_of(None, args.inventory_template),
                                   args.share_machine, args.dry_run)
    if job_id is None:
        print(script, end="")
        return 0
    print(f"submitted job {job_id}")
    if not args.wait:
        from ..archive.archive import data_root

        print(f"its log: {data_root().resolve() / 'slurm' / 'logs' / f'{job_id}.out'}; "
              "its run.json names the job (slurm.job_id)")
        return 0
    state, found = follow_job(job_id)
    _index()
    if found is not None and found.meta.get("status") == "complete":
        print(f"run {found.path}: complete")
        return 0
    from ..slurm.submit import failure

    print(failure(job_id, state, found, None), file=sys.stderr)
    return 1


def run_in_allocation(args, params: dict) -> int:
    """Inside a job or salloc: the allocation's hosts onto the study's roles, then the run."""
    from ..run.execute import check_parameters, run_notebook
    from ..slurm.allocation import allocated_hosts, build, job_inventory_name, load_template, roles, write_inventory
    from ..slurm.sbatch import job_in_allocation

    if not args.inventory_template:
        raise SpecError("--inventory slurm needs --inventory-template FILE: how the allocated "
                        "nodes' devices and addresses map onto the study's interfaces",
                        "see the format in harness/slurm/allocation.py")
    template = load_template(args.inventory_template)
    notebook = Path(args.notebook).resolve()
    given = {k: v for k, v in params.items() if k != "inventory"}
    study, resolved = check_parameters(notebook, given)
    topology = study.topology(resolved)
    hosts = allocated_hosts()
    if not args.dry_run:
        from ..archive.archive import data_root
        from ..slurm.sbatch import check_data_folder

        check_data_folder(data_root().resolve())
    inventory = build(topology, template, hosts)
    with tempfile.TemporaryDirectory(prefix="harness-slurm-inv-") as tmp:
        path = write_inventory(inventory, Path(tmp))  # checked before anything is written
        study, resolved = check_parameters(notebook, {**given, "inventory": str(path)})
        if args.dry_run:
            from ..run.runner import dry_run_study

            print(dry_run_study(study, resolved, str(path)))
            return 0
    from ..archive.archive import data_root

    path = write_inventory(inventory, data_root().resolve() / "slurm" / "inventories",
                           job_inventory_name())
    job = job_in_allocation()
    note = {"slurm": {**job, "roles": dict(zip(roles(topology, template),
                                               (h.hostname for h in hosts))),
                      "inventory": inventory, "inventory_template": template}}
    from ..run.kernel_death import quiet_kernel_death
    from ..slurm.ending import ending_line
    from ..slurm.submit import runs_by_job  # imported now: not while SIGTERM unwinds

    quiet_kernel_death()  # Slurm's SIGTERM reaches the kernel too: its death is no news
    try:
        result = run_notebook(notebook, {**given, "inventory": str(path)},
                              progress=not args.quiet, note=note)
    except KeyboardInterrupt:  # scancel or the time limit: SIGTERM, the run undone
        print(ending_line(runs_by_job().get(job_inventory_name())), file=sys.stderr)
        return 130
    print(f"run {result.run.path}: {result.status} in {result.seconds:.1f}s")
    if "script" not in job:  # an salloc shell: refresh the index; a batch job of ours
        _index()             # leaves it to --wait/--status (jobs side by side would race)
    if result.error:
        print(f"error: {result.error}", file=sys.stderr)
        return 1
    return 0


def batch(args) -> int:
    """``harness batch SWEEP --slurm OPTS [--wait|--dry-run]`` or ``--status``."""
    from ..run.sweep import Sweep
    from ..slurm.submit import follow, submit_points, sweep_status, template_of

    path = Path(args.sweep)
    if getattr(args, "status", False):
        if args.slurm is not None:
            raise SpecError("--status only reports", "leave out --slurm")
        return report(path, sweep_status(path))
    sweep = Sweep.load(path)
    template = template_of(sweep, args.inventory_template)
    before = sweep_status(path)
    todo = [s.point for s in before if s.status in ("failed", "not submitted")]
    for s in before:
        if s.status in ("pending", "running"):
            print(f"{s.status:10s} {s.point} {s.job.describe() if s.job else ''} "
                  "(queued already: not submitted again)")
    if not todo:
        print(f"every point of {path.name} has a complete run or a job queued or running")
        return report(path, follow(path) if args.wait else before)
    job_id, script = submit_points(path, sweep.notebook, todo, args.slurm, template,
                                   args.share_machine, args.dry_run)
    if job_id is None:
        print(script, end="")
        return 0
    complete = sum(s.status == "complete" for s in before)
    print(f"submitted job {job_id}: {len(todo)} point(s) of {len(before)}"
          + (f" ({complete} complete already)" if complete else ""))
    for i, point in enumerate(todo):
        print(f"  {job_id}_{i} {point}" if len(todo) > 1 else f"  {job_id} {point}")
    if not args.wait:
        print(f"follow with: harness batch {path} --status")
        return 0
    return report(path, follow(path))


def report(path: Path, statuses) -> int:
    """Each point's status, the failed ones with Slurm's state and log, then the summary."""
    from ..slurm.submit import progress_line

    for s in statuses:
        where = s.run or (s.job.describe() if s.job else "")
        print(f"{s.status:13s} {s.point} {where}")
        if s.status == "failed":
            print("    " + s.detail.replace("\n", "\n    "))
    print(progress_line(path.name, statuses))
    if any(s.status == "complete" for s in statuses):
        from ..archive.compare import sweep_summary

        _index()
        print(f"summary {sweep_summary(path)[1]}")
    return 1 if any(s.status == "failed" for s in statuses) else 0


def joined_option_values(argv: list[str]) -> list[str]:
    """``--slurm "--time=30 -p debug"`` as ``--slurm=--time=30 -p debug``: argparse would take
    a value that starts with '-' for an option of its own and refuse the command."""
    out, words = [], list(argv)
    while words:
        word = words.pop(0)
        if word == "--slurm" and words:
            word = f"--slurm={words.pop(0)}"
        out.append(word)
    return out
