"""Runs of one study and one registration pooled into one verdict table (``harness claims pool``).

One run cannot see the variation between runs: its own lab build, VM boot and the machine's
state on its day (issue 33: successive S4 references put TCP's peak at 403 [375, 427] and
336 [315, 354] Mbit/s). A verdict reference is several independent runs, and its intervals
have the run as their top-level unit.

:func:`pool` analyses each member alone with the study's own analysis (``Study.claims``,
today's code), each with its own record, and pools every registered claim from the members'
own estimates, the run as the unit (:mod:`harness.verdicts.run_pooling`, which says why the
members' tables are not joined into one). The pooled table shows each run's own estimate and
outcome beside the pooled ones.

The pooled folder (``$HARNESS_DATA/pooled/<study>/<id>/``, or ``--out``) holds
``claims.csv``/``.parquet``, ``run.json`` (its members with their registration digests),
``registration.json`` (the members' one registration) and ``report.md`` (:mod:`.pool_report`); it is created
exclusively and made read-only. A pooled *reference* (``--reference``: the repository's
``data/reference/<study>/<id>/``) also keeps a copy of each member under ``members/<run id>/``,
named in run.json by that relative path, so that the committed reference can be pooled again
from its own members by tomorrow's code. The member runs are only
read. Runs that cannot be pooled are refused, each with one error, before anything is
written (:func:`members`).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ..archive.archive import COMPLETE, RUN_FILE, data_root
from ..errors import ArchiveError, SpecError
from .before_outcomes import COLUMN as BEFORE
from .before_outcomes import HOW as BEFORE_HOW
from .before_outcomes import brief, earlier_claims, without_record
from .claims import INVALID, NOT_TESTABLE, Region, table
from .lab_kind import differences
from .pool_report import ALL_UNITS, ALL_UNITS_HOW, report
from .registration import read_archived
from .run_pooling import _brief, all_units_estimate, pooled_verdict

#: parameters that may differ between the runs of one pooled reference: each run has fewer
#: repetitions than one long run would, and its own random order
MAY_DIFFER = ("repetitions", "seed")
POOLED = "pooled"
MEMBERS = "members"  # a pooled reference's copies of its member runs
REGISTRATION = "registration.json"


@dataclass(frozen=True)
class Member:
    """One run of a pool: its folder, run.json and registration digest."""

    path: Path
    meta: dict
    digest: str

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id") or self.path.name)


def _resolve(ref: str) -> Path:
    from ..archive.runref import resolve_run

    return resolve_run(ref).path


def members(refs: list[str]) -> list[Member]:
    """The runs ``refs`` name, checked to be poolable; one :class:`SpecError` otherwise:
    fewer than two runs, a run given twice, a run that is not complete, runs of different
    studies, registrations (or none), parameters (beyond :data:`MAY_DIFFER`), placements or
    privileges (the analyses read the first run's record for all of them)."""
    if len(refs) < 2:
        raise SpecError(f"pooling needs at least two runs, got {len(refs)}",
                        "give every run of the reference: harness claims pool RUN RUN RUN")
    found: list[Member] = []
    for ref in refs:
        path = _resolve(ref)
        try:
            meta = json.loads((path / RUN_FILE).read_text())
        except (OSError, ValueError) as exc:
            raise SpecError(f"{path}: its {RUN_FILE} cannot be read ({exc})",
                            "pool complete runs archived by harness") from None
        if not isinstance(meta, dict):
            raise SpecError(f"{path}: its {RUN_FILE} is not a run's record")
        member = Member(path, meta, read_archived(path).digest)
        for other in found:
            if other.path == path or other.run_id == member.run_id:
                raise SpecError(f"run {member.run_id} is given twice ({other.path} and {path}; a "
                                "reference is a copy of an archived run)",
                                "give each run once: pooling a run with itself counts it twice")
        if meta.get("status") != COMPLETE or meta.get("error"):
            why = meta.get("error") or f"status {meta.get('status') or 'unknown'}"
            raise SpecError(f"run {member.run_id} is not complete ({why}): an interrupted or "
                            "failed run measured only part of its design",
                            "pool complete runs only; run the study again for the missing one")
        found.append(member)
    first = found[0]
    for member in found[1:]:
        _same(first, member)
    for i, one in enumerate(found):  # a margin is not transitive: every pair, not each vs the first
        for other in found[i + 1:]:
            _same_lab(one, other)
    return sorted(found, key=lambda m: (str(m.meta.get("started") or ""), m.run_id))


def copies(found: list[Member]) -> list[tuple[str, str]]:
    """Pairs of members whose archived results are byte for byte the same: copies of one run
    under two ids, not independent runs (the pool shows no variation between them)."""
    seen: dict[str, str] = {}
    out = []
    for m in found:
        path = m.path / "results.parquet"
        if not path.is_file():
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest in seen:
            out.append((seen[digest], m.run_id))
        else:
            seen[digest] = m.run_id
    return out


def _same(first: Member, member: Member) -> None:
    a, b = first.meta, member.meta
    if a.get("study") != b.get("study"):
        raise SpecError(f"runs of different studies: {first.run_id} is {a.get('study')}, "
                        f"{member.run_id} is {b.get('study')}", "pool runs of one study")
    for m in (first, member):
        if not m.digest:
            raise SpecError(f"run {m.run_id} archived no registration (it was made before its "
                            "study's claims were registered): nothing says what it was made to test",
                            "pool runs made under a registration")
    if first.digest != member.digest:
        raise SpecError(f"runs of different registrations: {first.run_id} was registered as "
                        f"{first.digest[7:19] or '(none)'}, {member.run_id} as "
                        f"{member.digest[7:19] or '(none)'}",
                        f"pool runs of one registration; `harness claims history {a.get('study')}` "
                        "says what changed between them")
    pa, pb = dict(a.get("parameters") or {}), dict(b.get("parameters") or {})
    moved = sorted(k for k in set(pa) | set(pb) if k not in MAY_DIFFER and pa.get(k) != pb.get(k))
    if moved:
        raise SpecError(f"runs {first.run_id} and {member.run_id} differ in parameters "
                        + ", ".join(f"{k} ({pa.get(k)!r} vs {pb.get(k)!r})" for k in moved),
                        f"pool runs of one design (only {', '.join(MAY_DIFFER)} may differ)")
    if a.get("as_found") != b.get("as_found"):
        raise SpecError(f"runs {first.run_id} and {member.run_id} differ in what they could change "
                        "(run.json's as_found: a run on machines as found made fewer changes)",
                        "pool runs made with the same privileges")


def _same_lab(one: Member, other: Member) -> None:
    placed = differences(one.meta.get("placement"), other.meta.get("placement"))
    if placed:
        raise SpecError(f"runs {one.run_id} and {other.run_id} were made in different kinds "
                        f"of lab (run.json placement): {'; '.join(placed)}",
                        "pool runs made in the same kind of lab (one boot's facts -- pids, ports, "
                        "boot times, measured ceilings -- may differ)")


def _check_current(study, found: list[Member]) -> None:
    now = study.registration().digest
    if found[0].digest != now:
        raise SpecError(f"the runs were registered as {found[0].digest[7:19]}, today's code "
                        f"registers {study.name}'s claims as {now[7:19]}: their pooled verdicts "
                        "would judge them against claims they were not made under",
                        f"`harness claims history {study.name}` says what changed; pool runs "
                        "made under today's registration")


def pooled_table(study, found: list[Member], own: list[pd.DataFrame],
                 regions: list[dict[str, Region]] | None = None) -> pd.DataFrame:
    """Each registered claim pooled from the members' own rows (:mod:`.run_pooling`), in the
    order of the first member's table. ``regions``: each member's regions its design set
    (``Study.design_regions``; None: none did). Not pooled: rows that are not the study's
    registered claims, and rows a run's table already counts in runs (S0's relay and peer
    targets: the relay benchmark's runs, archived once and copied into every member, so the
    same samples in each)."""
    regions = regions if regions is not None else [{} for _ in own]
    registration = study.registration()
    ids = {c.id for c in registration.claims}
    by_run = [table.drop_duplicates("claim_id").set_index("claim_id", drop=False) for table in own]
    run_ids = [m.run_id for m in found]
    verdicts, carried = [], []
    order = list(dict.fromkeys(cid for table in own for cid in table.claim_id))
    for cid in order:
        if cid not in ids or not all(cid in t.index for t in by_run):
            continue
        if any(str(t.loc[cid].get("units")) == "runs" for t in by_run):
            continue  # not the members' samples: another apparatus's runs
        claim, rows = registration.claim(cid), [t.loc[cid] for t in by_run]
        verdict, columns = pooled_verdict(claim, rows, run_ids, [r.get(cid) for r in regions])
        verdicts.append(verdict)
        together, why = (all_units_estimate(rows, run_ids, claim.unit) if verdict.estimate is not None
                         else (None, "no pooled estimate"))
        columns[ALL_UNITS] = together.text() if together else "-"
        columns[ALL_UNITS_HOW] = together.method if together else why
        carried.append(columns)
    frame = table(verdicts)
    for column in ("note", "gates", "invalid", ALL_UNITS, ALL_UNITS_HOW):
        frame[column] = [c[column] for c in carried]
    return frame


def before_outcomes(study, found: list[Member], loaded: list, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each claim's pooled verdict under its region and gates as registered before
    the changes made after outcomes that replaced them (:mod:`.before_outcomes`), recomputed from
    each member's archived data (``loaded``) and pooled as today's are, in the columns
    ``before outcomes`` and ``before outcomes: how``; "" for a claim no such change recorded."""
    registration = study.registration()
    frame = frame.copy()
    frame[BEFORE], frame[BEFORE_HOW] = "", ""
    earlier = {cid: b for cid, b in earlier_claims(registration).items() if cid in set(frame.claim_id)}
    claims = {cid: b.claim for cid, b in earlier.items()}
    # each member judged once against every earlier claim, before the one pass over the rows
    by_run = [study.claims_as_registered(data, claims).drop_duplicates("claim_id").set_index(
        "claim_id", drop=False) for data in loaded] if claims else []
    registered = {c.id for c in registration.claims}
    run_ids = [m.run_id for m in found]
    for i, cid in frame.claim_id.items():
        if cid not in earlier:
            if cid in registered:
                frame.at[i, BEFORE], frame.at[i, BEFORE_HOW] = without_record(registration, cid)
            continue
        if not all(cid in t.index for t in by_run):
            continue
        verdict, _ = pooled_verdict(claims[cid], [t.loc[cid] for t in by_run], run_ids)
        row = verdict.row()
        frame.at[i, BEFORE] = brief(row["outcome"], row["ours"], row["region"])
        why = (f"why {row['outcome']}: {_brief(row['reason'])}; " if row["outcome"] in (INVALID, NOT_TESTABLE)
               else "")  # a verdict that decides nothing says why, as registered then
        frame.at[i, BEFORE_HOW] = why + earlier[cid].how(registration)
    return frame


def pool(refs: list[str], out: str | None = None, reference: bool = False) -> Path:
    """Pool the runs ``refs`` name into a new folder (see the module's docstring); with
    ``reference`` into the repository's references, the members copied in beside it."""
    from ..studies import study_for

    found = members(refs)
    study = study_for(found[0].meta["study"])
    _check_current(study, found)
    if reference and out:
        raise SpecError("--reference and --out both name where the pool goes",
                        "give one: --reference writes data/reference/<study>/<id>/")
    target = _target(study.name, str(_reference_target(study.name)) if reference else out)
    loaded = [study.load(m.path) for m in found]
    own = [study.claims(data) for data in loaded]
    frame = beside(pooled_table(study, found, own, [study.design_regions(data) for data in loaded]),
                   found, own)
    frame = before_outcomes(study, found, loaded, frame)
    record = _record(target, study, found, kept=reference)
    _write(target, frame, record, report(study, found, frame, own, copies(found)), found[0].path / REGISTRATION)
    if reference:
        _keep_members(target, found)
    return target


def _reference_target(study: str) -> Path:
    from ..archive.reference import reference_root

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return reference_root() / study / f"{stamp}-pool-{secrets.token_hex(3)}"


def _keep_members(target: Path, found: list[Member]) -> None:
    """Each member copied under ``members/<run id>/`` of a pooled reference, read-only."""
    for member in found:
        dest = target / MEMBERS / member.run_id
        shutil.copytree(member.path, dest, symlinks=True)
        for path in dest.rglob("*"):
            if path.is_file() and not path.is_symlink():
                os.chmod(path, path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def member_paths(pooled: Path) -> list[Path]:
    """The member runs of a pooled folder, as its run.json names them (relative to the folder
    for a pooled reference's kept copies)."""
    record = json.loads((pooled / RUN_FILE).read_text())
    return [pooled / m["path"] if not Path(m["path"]).is_absolute() else Path(m["path"])
            for m in record.get("members") or []]


def beside(pooled: pd.DataFrame, found: list[Member], own: list[pd.DataFrame]) -> pd.DataFrame:
    """The pooled table with each member's own estimate, outcome and reason in columns
    ``<run id>: ours``, ``<run id>: outcome`` and ``<run id>: reason`` (empty where that run has
    no such claim)."""
    frame = pooled.copy()
    for member, own_table in zip(found, own):
        by_id = own_table.drop_duplicates("claim_id").set_index("claim_id")
        for col in ("ours", "outcome", "reason"):
            frame[f"{member.run_id}: {col}"] = frame.claim_id.map(by_id[col]).fillna("")
    return frame


def _target(study: str, out: str | None) -> Path:
    if out:
        target = Path(out)
        if target.exists():
            raise SpecError(f"{target} exists already: a pooled folder is never overwritten",
                            "give a new folder with --out, or leave it out")
        return target
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return data_root() / POOLED / study / f"{stamp}-pool-{secrets.token_hex(3)}"


def _record(target: Path, study, found: list[Member], kept: bool = False) -> dict:
    return {
        "run_id": target.name, "study": study.name, "status": COMPLETE, "kind": POOLED,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "registration": {"digest": found[0].digest},
        "parameters": {**(found[0].meta.get("parameters") or {}),
                       "repetitions": [(m.meta.get("parameters") or {}).get("repetitions")
                                       for m in found]},
        "members": [{"run_id": m.run_id, "path": f"{MEMBERS}/{m.run_id}" if kept else str(m.path),
                     "registration": m.digest,
                     "started": m.meta.get("started"), "ended": m.meta.get("ended"),
                     "commit": ((m.meta.get("provenance") or {}).get("git") or {}).get("commit"),
                     "repetitions": (m.meta.get("parameters") or {}).get("repetitions")}
                    for m in found],
        "copies": [list(pair) for pair in copies(found)],
        "interval": "the run is the unit: each run's own estimate (its own record) one sample, Student t "
                    "over the runs below 30, a bootstrap of the runs from 30 (harness.verdicts.run_pooling)",
    }


def _write(target: Path, frame: pd.DataFrame, record: dict, report: str, registration: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        target.mkdir()  # exclusive: a pooled folder is never reused
    except FileExistsError:
        raise ArchiveError(f"{target} exists already") from None
    frame.to_parquet(target / "claims.parquet", index=False)
    frame.to_csv(target / "claims.csv", index=False)
    (target / RUN_FILE).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    (target / "report.md").write_text(report)
    (target / REGISTRATION).write_bytes(registration.read_bytes())  # the members' one registration
    for path in target.iterdir():
        if path.is_file() and not path.is_symlink():
            os.chmod(path, path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
