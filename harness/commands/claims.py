"""``harness claims show STUDY``, ``harness claims history STUDY`` and ``harness claims pool RUN...``.

``show`` prints a study's registration, read from its file (``Study.registration_file``,
:mod:`harness.verdicts.registration_file`), as a reader reviews a preregistration: each claim with
the paper's sentence and line, the quantity, the regime, the validity checks, the region
and its rule, then the fixed design and every recorded change. ``show relay`` prints the relay
benchmark's own targets (``harness/relay/registration.toml``), which belong to no study.
``references`` lists the committed verdict references and which stands today
(:mod:`harness.verdicts.references`). ``history`` lists the study's archived runs (``$HARNESS_DATA`` and the committed
reference runs) with the registration each was made with, and says, claim by
claim, what changed between them and since the last run. ``pool`` pools runs of one study
and one registration into one verdict table whose intervals have the run as their unit
(:mod:`harness.verdicts.pool`).
"""

from __future__ import annotations

import json
from pathlib import Path

#: a registration that belongs to no study: benchmarks/relay_bench.py's targets
RELAY = "relay"


def _study(name: str):
    from ..studies import study_for

    return study_for(name)


def _registration(name: str):
    """The heading and registration ``harness claims show NAME`` prints: a study's, or the
    relay benchmark's (:data:`RELAY`); an unknown name is one error naming both kinds."""
    from ..errors import SpecError

    if name == RELAY:
        from ..relay import targets

        return f"{RELAY}: {targets.TITLE}", targets.registered()
    try:
        study = _study(name)
    except SpecError as exc:
        raise SpecError(exc.message, f"{exc.hint}; or {RELAY} for the relay benchmark's own "
                        "targets (harness/relay/registration.toml)") from None
    return f"{study.name}: {study.title}", study.registration()


def cmd_claims_show(args) -> int:
    heading, reg = _registration(args.study)
    if args.json:
        print(json.dumps(reg.to_dict(), indent=1, ensure_ascii=False))
        return 0
    print(f"{heading}\nregistration {reg.digest}\n")
    for claim in reg.claims:
        withdrawn = reg.withdrawn(claim.id)  # kept with its record, never judged
        print(f"[{claim.source}] {claim.id}: {claim.text}"
              + (f"  [WITHDRAWN by the change of {withdrawn.date}: never judged]" if withdrawn else ""))
        if claim.quote:
            print(f"    paper ({claim.seed_line}): \u201c{claim.quote}\u201d")
        print(f"    the paper's value: {claim.paper}")
        gates = "; ".join(f"{g.name} ({', '.join(f'{k} {v}' for k, v in sorted(g.params.items()))})"
                          if g.params else g.name for g in claim.gates)
        for label, text in (("quantity", claim.quantity), ("regime", claim.regime),
                            ("checks", ", ".join(claim.checks)), ("gates", gates)):
            if text:
                print(f"    {label}: {text}")
        print(f"    region: {claim.region.text(claim.unit)} -- {claim.region.why}\n")
    if reg.design:
        print("design (fixed before data):")
        for key, value in reg.design.items():
            print(f"    {key}: {json.dumps(value, ensure_ascii=False)}")
    when = {True: " [made after outcomes were read]", False: " [made before any data of it]", None: ""}
    for change in reg.changes:
        print(f"changed {change.date}{when[change.after_outcomes]}: {change.what} -- why: {change.why}")
        for cid, was in change.replaced.items():  # what it replaced, as recorded (before_outcomes)
            unit = reg.claim(cid).unit
            parts = ([f"region {was.region.text(unit)}"] if was.region is not None else []) + (
                [f"gates {', '.join(g.name for g in was.gates) or 'none'}"] if was.gates is not None else []) + (
                [f"also (not restorable, kept as today): {was.also}"] if was.also else [])
            print(f"    replaced of {cid}: {'; '.join(parts)}")
        if change.dropped:
            print(f"    withdrew (kept, never judged): {', '.join(change.dropped)}")
    return 0


def archived_runs(study: str) -> list[Path]:
    """The study's run folders in the archive and among the committed reference runs."""
    from ..archive.archive import list_runs
    from ..archive.reference import reference_root

    folders = [run.path for run in list_runs(study)]
    ref = reference_root() / study
    folders += [p.parent for p in sorted(ref.glob("*/run.json"))]
    return folders


def cmd_claims_history(args) -> int:
    from ..errors import SpecError
    from ..verdicts.registration import history

    if args.study == RELAY:
        raise SpecError(f"{RELAY} is the relay benchmark's registration, not a study's: it has no "
                        "archived runs to list",
                        "`harness claims show relay` prints it; each benchmark archives what it was "
                        "judged under (targets_registered), and `git log -p harness/relay/"
                        "registration.toml data/benchmarks/relay.json` is its history")
    study = _study(args.study)
    rows = history(study.registration(), archived_runs(study.name))
    if not rows:
        print(f"{study.name}: no archived run; the registration now is "
              f"{study.registration().digest}")
        return 0
    for row in rows:
        where = f"  ({row['path']})" if args.verbose and row["path"] else ""
        print(f"{row['run_id']:28s} commit {row['commit'] or '-':12s} registration "
              f"{row['digest']}{where}")
        for line in row["changed"]:
            print(f"    changed: {line}")
        if row.get("note"):
            print(f"    note: {row['note']}")
    for change in study.registration().changes:
        print(f"recorded change {change.date}: {change.what} -- why: {change.why}")
        if change.dropped:
            print(f"    withdrew (kept, never judged): {', '.join(change.dropped)}")
    return 0


def cmd_claims_pool(args) -> int:
    import pandas as pd

    from ..verdicts.claims import summaries
    from ..verdicts.pool import pool

    target = pool(args.runs, args.out, reference=args.reference)
    frame = pd.read_csv(target / "claims.csv")
    print(f"pooled {len(args.runs)} runs: {summaries(frame)}")
    print(f"  {target}  (claims.csv, run.json, report.md)")
    return 0


def cmd_claims_power(args) -> int:
    """Per claim of a run (a study's committed reference by default): the repetitions its
    region needs, from the spread that run showed (harness.verdicts.power)."""
    from ..archive.reference import find_reference, reference_root
    from ..relay import targets as relay_targets
    from ..verdicts.power import FEASIBLE_REPETITIONS, FEASIBLE_RUNS, run_power

    if args.run:
        from ..archive.runref import resolve_run

        runs = [resolve_run(args.run).path]  # a folder, an id, or a crate's run
    else:
        names = args.study or sorted(p.name for p in reference_root().iterdir() if p.is_dir())
        runs = [ref.path for ref in map(find_reference, names) if ref is not None]
    if not runs:
        print("no run to plan from: name a run folder (--run) or a study with a committed reference")
        return 2
    for run in runs:
        if not (run / "claims.csv").is_file():
            print(f"{run}: no claims.csv: the run did not finish its analysis")
            return 2
        regions = None
        # the relay benchmark's targets a run shows (S0's): registered in the benchmark it
        # archived, or today in harness/relay/registration.toml
        beside = relay_targets.registered_in_run(run)
        if args.today:
            from ..studies.registry import discover, get_study
            discover()
            regions = get_study(run.parent.name).registration()
            beside = {c.id: c.registration() for c in relay_targets.registered().claims}
        print(f"{run.parent.name}/{run.name} (feasible: at most {FEASIBLE_REPETITIONS} repetitions, "
              f"or {FEASIBLE_RUNS} runs for a pooled run"
              f"{'; regions registered today, spread from this run' if regions else ''})")
        for c in run_power(run, regions, beside):
            spread = "-" if c.spread is None else f"{c.spread:.3g}"
            needed = "-" if c.needed is None else str(c.needed)
            feasible = {None: "-", True: "yes", False: "no"}[c.feasible]
            print(f"  {c.claim_id:40s} {c.region:24s} n={c.n:<3d} {c.units:11s} sd={spread:8s} "
                  f"needs {needed:>7s}  feasible {feasible:3s}  ({c.why})")
    return 0


def cmd_claims_references(args) -> int:
    """Each study's committed verdict references, oldest first: its runs, its registration, what
    its table says, and whether it stands under today's registration (harness.verdicts.references)."""
    from ..archive.reference import reference_root
    from ..studies.registry import discover
    from ..verdicts.references import references, standing

    known = discover()
    names = args.study or sorted(known)
    studies = [_study(name) for name in names]  # an unknown name: one error before anything prints
    listed = {s.name: references(s.name, s.registration(), reference_root()) for s in studies}
    if args.json:
        print(json.dumps({name: [r.to_dict() for r in refs] for name, refs in listed.items()}, indent=1))
        return 0
    for study in studies:
        refs = listed[study.name]
        now = standing(refs)
        print(f"{study.name}: {study.title} -- {len(refs)} reference{'s' if len(refs) != 1 else ''}; "
              + (f"standing: {now.run_id}" if now else "none stands under today's registration "
                 f"({study.registration().digest[7:19]})"))
        for ref in refs:
            took = ", ".join("-" if r.minutes is None else f"{r.minutes:.0f}" for r in ref.runs)
            print(f"  {ref.run_id:30s} {len(ref.runs)} run{'s' if len(ref.runs) != 1 else ' '} "
                  f"({took} min)  registration {ref.digest[7:19] or '-':12s}  {ref.status()}")
            print(f"    {ref.verdicts}")
    return 0


def add_claims_command(sub) -> None:
    claims = sub.add_parser("claims", help="a study's registered claims and their history")
    csub = claims.add_subparsers(dest="claims_command", required=True)
    show = csub.add_parser("show", help="the registration: sentences, regimes, regions, design")
    show.add_argument("study", help="a study's name or its notebook; relay: the relay benchmark's targets")
    show.add_argument("--json", action="store_true", help="as archived (registration.json)")
    show.set_defaults(func=cmd_claims_show)
    hist = csub.add_parser("history", help="archived runs and what changed in the claims")
    hist.add_argument("study", help="a study's name or its notebook")
    hist.add_argument("-v", "--verbose", action="store_true", help="also each run's folder")
    hist.set_defaults(func=cmd_claims_history)
    pool = csub.add_parser("pool", help="pool runs of one study and registration into one "
                           "verdict table (the run as the intervals' unit)")
    pool.add_argument("runs", nargs="+", metavar="RUN",
                      help="a run's folder or id (at least two; a reference's folder too)")
    pool.add_argument("--out", metavar="DIR", help="the new pooled folder (default: "
                      "$HARNESS_DATA/pooled/<study>/<time>-pool-<id>); never overwritten")
    pool.add_argument("--reference", action="store_true",
                      help="write it as the study's committed reference: data/reference/<study>/"
                      "<time>-pool-<id>/ with a copy of each member under members/")
    pool.set_defaults(func=cmd_claims_pool)
    power = csub.add_parser("power", help="repetitions each claim's region needs, from a run's spread")
    power.add_argument("study", nargs="*", help="studies whose committed reference to read (all)")
    power.add_argument("--run", help="an archived run (folder, id or exported crate) to read instead")
    power.add_argument("--today", action="store_true",
                       help="plan the regions today's code registers (the run gives only the spread)")
    power.set_defaults(func=cmd_claims_power)
    refs = csub.add_parser("references", help="the committed verdict references and which of them "
                           "stands under today's registration")
    refs.add_argument("study", nargs="*", help="studies to list (all)")
    refs.add_argument("--json", action="store_true", help="as data")
    refs.set_defaults(func=cmd_claims_references)
