"""``harness claims show STUDY`` and ``harness claims history STUDY``.

``show`` prints a study's registration, read from its file (``Study.registration_file``,
:mod:`harness.registration_file`), as a reader reviews a preregistration: each claim with
the paper's sentence and line, the quantity, the regime, the validity checks, the region
and its rule, then the fixed design and every recorded change.
``history`` lists the study's archived runs (``$HARNESS_DATA`` and the committed
reference runs) with the registration each was made with, and says, claim by
claim, what changed between them and since the last run.
"""

from __future__ import annotations

import json
from pathlib import Path


def _study(name: str):
    from .studies import study_for

    return study_for(name)


def cmd_claims_show(args) -> int:
    study = _study(args.study)
    reg = study.registration()
    if args.json:
        print(json.dumps(reg.to_dict(), indent=1, ensure_ascii=False))
        return 0
    print(f"{study.name}: {study.title}\nregistration {reg.digest}\n")
    for claim in reg.claims:
        print(f"[{claim.source}] {claim.id}: {claim.text}")
        if claim.quote:
            print(f"    paper ({claim.seed_line}): \u201c{claim.quote}\u201d")
        print(f"    the paper's value: {claim.paper}")
        for label, text in (("quantity", claim.quantity), ("regime", claim.regime),
                            ("checks", ", ".join(claim.checks))):
            if text:
                print(f"    {label}: {text}")
        print(f"    region: {claim.region.text(claim.unit)} -- {claim.region.why}\n")
    if reg.design:
        print("design (fixed before data):")
        for key, value in reg.design.items():
            print(f"    {key}: {json.dumps(value, ensure_ascii=False)}")
    for change in reg.changes:
        print(f"changed {change.date}: {change.what} -- why: {change.why}")
    return 0


def archived_runs(study: str) -> list[Path]:
    """The study's run folders in the archive and among the committed reference runs."""
    from .archive import list_runs
    from .reference import reference_root

    folders = [run.path for run in list_runs(study)]
    ref = reference_root() / study
    folders += [p.parent for p in sorted(ref.glob("*/run.json"))]
    return folders


def cmd_claims_history(args) -> int:
    from .registration import history

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
    return 0


def add_claims_command(sub) -> None:
    claims = sub.add_parser("claims", help="a study's registered claims and their history")
    csub = claims.add_subparsers(dest="claims_command", required=True)
    show = csub.add_parser("show", help="the registration: sentences, regimes, regions, design")
    show.add_argument("study", help="a study's name or its notebook")
    show.add_argument("--json", action="store_true", help="as archived (registration.json)")
    show.set_defaults(func=cmd_claims_show)
    hist = csub.add_parser("history", help="archived runs and what changed in the claims")
    hist.add_argument("study", help="a study's name or its notebook")
    hist.add_argument("-v", "--verbose", action="store_true", help="also each run's folder")
    hist.set_defaults(func=cmd_claims_history)
