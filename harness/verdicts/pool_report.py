"""A pooled verdict table's ``report.md`` (``harness claims pool``, :mod:`harness.verdicts.pool`).

What a referee reading only this file must be able to see (the S4 and S0 reviews of
2026-11-29): the pooled headline, and right under it each run's own tally over the same claims
and every claim some run judged in its regime although the pool, needing every run, calls it
not testable (a run's verdict that no headline counts stays in sight); which claims are decided
under a rule changed after outcomes were read (:mod:`harness.verdicts.disclosure`); then per
claim the pooled estimate, the figure one run's estimator gives over every run's repetitions
together (a sensitivity reading, not the verdict's basis: :func:`harness.verdicts.run_pooling.
all_units_estimate`), and each run's own estimate and outcome.
"""

from __future__ import annotations

import pandas as pd

from . import disclosure
from .before_outcomes import AS_TODAY, NOT_RECORDED
from .before_outcomes import COLUMN as BEFORE
from .before_outcomes import HOW as BEFORE_HOW
from .claims import COLUMNS, INVALID, NOT_TESTABLE, PAPER, WITHDRAWN, runs_note, summaries, summary
from .gates.registry import stated_only_outcome
from .invalid_points import pooled_invalid_note
from .registration import Registration
from .run_pooling import SENSITIVITY

#: a change made after outcomes were read names up to this many claims by id in the headline block
LISTED = 4
#: the pooled table's columns after :data:`~harness.verdicts.claims.COLUMNS` and before each
#: run's: one run's estimator over every run's repetitions together, a sensitivity reading
#: (harness.verdicts.pool writes them)
ALL_UNITS, ALL_UNITS_HOW = "all repetitions", "all repetitions: how"


def report(study, found: list, frame: pd.DataFrame, own: list[pd.DataFrame],
           copies: list[tuple[str, str]] = ()) -> str:
    """The report of the pool of ``found`` (members with ``run_id``, ``meta`` and ``digest``,
    in time order), ``frame`` its pooled table beside each run's columns, ``own`` each member's
    own table, ``copies`` the pairs of members that are byte-for-byte copies."""
    registration = study.registration()
    lines = [f"# {study.name}: {study.title} -- pooled from {len(found)} runs", "",
             f"**Verdicts on the paper's claims:** {summaries(frame[COLUMNS])}.", ""]
    lines += stated_only_tally(frame) + before_outcomes_headline(frame)
    lines += withdrawn_block(registration, frame)
    lines += measured_anyway(found, frame) + per_run_tallies(found, frame, own) + [""]
    regime = judged_by_some_runs(found, frame)
    if regime:
        lines += regime + [""]
    lines += changed_after_outcomes(registration, frame) + before_outcomes_block(frame)
    lines += [runs_note(frame), ""]
    conditions = [study.run_conditions(m.meta) for m in found]
    shown = any(conditions)  # a condition each run chose itself (S4's anchored limit)
    lines += ["| run | started | commit | repetitions | registration | machine while it ran |"
              + (" measured under |" if shown else ""), "|---|---|---|---|---|---|" + ("---|" if shown else "")]
    for m, condition in zip(found, conditions):
        commit = ((m.meta.get("provenance") or {}).get("git") or {}).get("commit") or "-"
        lines.append(f"| {m.run_id} | {m.meta.get('started') or '-'} | {commit[:12]} | "
                     f"{(m.meta.get('parameters') or {}).get('repetitions')} | {m.digest[7:19]} | "
                     f"{machine_activity(m.meta)} |" + (f" {condition or '-'} |" if shown else ""))
    if shown and len(set(conditions)) > 1:
        lines += ["", "**The runs chose different conditions** (above): a pooled estimate of a "
                  "claim measured under them averages runs whose condition differs; the claim's "
                  "registered regime, not the condition itself, is what every run had to meet."]
    for a, b in copies:
        lines += ["", f"**Warning:** runs {a} and {b} archived the same results byte for byte: they "
                  "are copies of one run, not independent runs, and the pool sees no variation "
                  "between them."]
    lines += ["", "Each run is analysed alone, with its own record (the facts it measured about "
              "its lab); its estimate is one sample of the pooled one. A claim is pooled only "
              "where every run judged it.", "", "## Claims: the pooled estimate beside each run's own", ""]
    for _, row in frame.iterrows():
        late = [disclosure.label(registration, c)
                for c in disclosure.after_outcomes(registration, row["claim_id"])]
        lines += claim_section(row, found, late) + [""]
    alone = sorted({cid for table in own for cid in table.claim_id} - set(frame.claim_id))
    if alone:
        lines += ["## Not pooled", "", "In each run's own table only: not one of the study's "
                  "registered claims, or an estimate over the runs of an archived benchmark that "
                  "every member carries the same. Each run's own outcome:", ""]
        lines += [unpooled_line(cid, found, own) for cid in alone] + [""]
    lines.append(pooled_invalid_note([m.run_id for m in found], own))
    return "\n".join(lines) + "\n"


def machine_activity(meta: dict) -> str:
    """A member's machine while it ran, as its run.json recorded it (``machine_activity``,
    :mod:`harness.run.machinewatch`): other harness runs on the machine, and the 1-minute load
    while it measured, before (set-up) and after (archiving), on the host's CPUs. The first S1
    review (2026-11-30) found a member measured beside two other studies' runs at load 4.0 on 2
    cores, which only that member's own report said; shown, never judged here."""
    activity = meta.get("machine_activity") or {}
    phases = activity.get("phases") or {}
    if not activity or not phases:
        return "not recorded"
    others = activity.get("other_runs") or []
    parts = [("SHARED with " + ", ".join(f"{o.get('run_id')} ({o.get('study')})" for o in others))
             if others else "no other run"]
    measure = phases.get("measure")
    if measure:
        parts.append(f"load {measure.get('load1_mean')} mean, {measure.get('load1_max')} max while "
                     f"measuring on {activity.get('cpus')} CPUs")
    around = [f"{word} {phases[name].get('load1_mean')}" for word, name in
              (("before", "setup"), ("after", "archive")) if phases.get(name)]
    if around:
        parts.append("mean load " + ", ".join(around))
    return "; ".join(parts)


def per_run_tallies(found: list, frame: pd.DataFrame, own: list[pd.DataFrame]) -> list[str]:
    """Each member's own verdict counts over the claims the pool judges, one line a run."""
    pooled = set(frame.claim_id)
    lines = ["**Each run alone**, over the same claims (its own verdicts; the pool judges a claim "
             "only where every run judged it, so a run's verdict may count here and not above):", ""]
    for member, table in zip(found, own):
        mine = table[table.claim_id.isin(pooled)].drop_duplicates("claim_id")
        lines.append(f"- run {member.run_id}: {summaries(mine)}")
    return lines


def judged_by_some_runs(found: list, frame: pd.DataFrame) -> list[str]:
    """The claims the pool calls not testable that some run judged in its regime, with what each
    such run said; [] when there are none."""
    out = []
    for _, row in frame[frame.outcome == NOT_TESTABLE].iterrows():
        said = [(m.run_id, row[f"{m.run_id}: outcome"], row[f"{m.run_id}: ours"]) for m in found]
        judged = [(rid, outcome, ours) for rid, outcome, ours in said
                  if outcome and outcome != NOT_TESTABLE]
        if judged:
            out.append(f"- `{row['claim_id']}`: in its regime in {len(judged)} of {len(found)} runs: "
                       + "; ".join(f"run {rid}: {outcome}, {ours}" for rid, outcome, ours in judged))
    if not out:
        return []
    return ["**Judged in its regime by some runs, not testable in the pool** (a pooled verdict needs "
            "the claim in its regime in every run; these runs' own verdicts, counted in their tallies "
            "above):", "", *out]


def changed_after_outcomes(registration: Registration, frame: pd.DataFrame) -> list[str]:
    """The block on verdicts decided under a rule changed after outcomes were read: how many of
    the paper's claims, and each such change once, with date, its whole text and the claims it names
    (each claim's section names them again by number)."""
    changes = disclosure.listed(registration, frame.claim_id)
    design = disclosure.whole_design_after_outcomes(registration)
    if not changes and not design:
        return []
    late = disclosure.by_claim(registration, frame.claim_id)
    paper = list(frame[frame.source == PAPER].claim_id) if "source" in frame else list(frame.claim_id)
    lines = [f"**Changed after outcomes were read:** {sum(cid in late for cid in paper)} of "
             f"{len(paper)} paper claims are decided under a rule that the registration changed after "
             "outcomes of earlier runs were read (its changes marked `after_outcomes = true`; each "
             "claim's section below names them by number):", ""]
    lines += [f"- {disclosure.label(registration, c)}: {disclosure.whole(c)} ({_claims(named)})"
              for c, named in changes]
    lines += [f"- {disclosure.label(registration, c)}: {disclosure.whole(c)} (the whole design: every claim)"
              for c in design]
    return lines + ["", disclosure.counts(registration), ""]


def measured_anyway(found: list, frame: pd.DataFrame) -> list[str]:
    """The paper's claims not testable or invalid in the pool, each with its pooled estimate and
    each run's, in one table before any reason: a referee of S4 found what every run measured
    (10 MPTCP streams delivering half of one) only inside the long reasons; a claim gated only by
    causes its paper does not state (``unstated`` gates) shows beside its verdict what it reads under
    the paper's stated testbed only (the sixth and seventh S0 reviews); [] when none."""
    rows = frame[(frame["source"] == PAPER) & frame["outcome"].isin([NOT_TESTABLE, INVALID])]
    if rows.empty:
        return []
    ids = [m.run_id for m in found]
    lines = ["**Measured anyway** (the paper's claims this lab cannot decide: each estimate is a "
             "measurement, not a verdict; why, in each claim's section):", "",
             "| claim | verdict | pooled | " + " | ".join(f"run {i[-6:]}" for i in ids) + " | region |",
             "|---|---|---|" + "---|" * len(ids) + "---|"]
    for _, row in rows.iterrows():
        each = " | ".join(str(row.get(f"{i}: ours", "-") or "-") for i in ids)
        reads = stated_only_outcome(row.get("reason", ""))  # a negative result is not hidden
        verdict = f"{row['outcome']} (under the paper's stated testbed only: {reads})" if reads else row["outcome"]
        lines.append(f"| `{row['claim_id']}` | {verdict} | {row['ours']} | {each} | {row['region']} |")
    return lines + [""]


def stated_only_tally(frame: pd.DataFrame) -> list[str]:
    """The paper claims not testable here only by a cause the paper does not state of its testbed,
    counted by what they read under the stated testbed alone, for the headline (the eighth S0
    review: five such 'not reproduced' sat only in a parenthesis); [] when there are none."""
    paper = frame[(frame.source == PAPER) & (frame.outcome == NOT_TESTABLE)]
    reads = [r for r in (stated_only_outcome(x) for x in paper.get("reason", [])) if r]
    if not reads:
        return []
    counts = ", ".join(f"{reads.count(r)} {r}" for r in dict.fromkeys(reads))
    return [f"**Under the paper's stated testbed only:** {counts} -- of the claims above not testable "
            "here by a cause the paper does not state of its testbed, read as if that gate were met "
            "(each claim's section says which gate and why).", ""]


def before_outcome(cell: str) -> str:
    """The outcome a recomputed before-outcomes cell reads ('reproduced: 0.21x against ...',
    'not testable here (the gates then): ...' -> 'reproduced', 'not testable here')."""
    return cell.split(":")[0].split(" (")[0]


def before_outcomes_headline(frame: pd.DataFrame) -> list[str]:
    """The paper claims' counts as registered before outcomes were read, for the headline where they
    differ from today's (the fourth S3 review: three collapse claims that read reproduced under the
    gates of before the outcomes sat only in the table further down); [] where they are the same or
    nothing was recomputed. A claim no change made after outcomes touched counts as today's; one
    whose changes record nothing they replaced is counted apart, as not recorded."""
    if BEFORE not in frame:
        return []
    paper = frame[frame.source == PAPER]
    then, unrecorded = [], 0
    for _, row in paper.iterrows():
        cell = str(row[BEFORE]) if isinstance(row[BEFORE], str) else ""
        if cell == NOT_RECORDED:
            unrecorded += 1
        elif cell in ("", AS_TODAY, WITHDRAWN):
            then.append(row["outcome"])
        else:
            then.append(before_outcome(cell))
    counted = pd.DataFrame({"source": PAPER, "outcome": then})
    said = summary(counted)
    if said == summary(paper) and not unrecorded:
        return []
    rest = f"; {unrecorded} cannot be recomputed (their changes record nothing they replaced)" if unrecorded else ""
    return [f"**The paper's claims as registered before outcomes were read:** {said}{rest} -- the same "
            "runs judged under each claim's region and gates as they stood before the first change made after outcomes "
            "(the table below).", ""]


def before_outcomes_block(frame: pd.DataFrame) -> list[str]:
    """Each claim whose region or gates a change made after outcomes replaced, with today's pooled
    verdict beside the one it gets as registered before those changes (recomputed from the members'
    archived data: :mod:`harness.verdicts.before_outcomes`), or why it cannot be recomputed; []
    when the table has no such column (a pool from before it) or every cell is empty."""
    if BEFORE not in frame:
        return []
    rows = frame[frame[BEFORE].fillna("").astype(str) != ""]
    if rows.empty:
        return []
    lines = ["**Today's verdict beside the one registered before outcomes were read:** each claim whose "
             "region or gates a change made after outcomes replaced, judged again from the same runs' "
             "archived data under its region and gates as they stood before the first such change (its "
             "record of what it replaced); a change recording nothing it replaced (a quantity, the "
             "sizes counted, a validity rule, the analysis's code) stands as today, each claim's section "
             "says which; \"not recorded\" where the changes made after outcomes that touched a claim "
             "record nothing they replaced, \"as today\" where none touched it:", "",
             "| claim | today | as registered before outcomes |", "|---|---|---|"]
    for _, row in rows.iterrows():
        today = f"{row['outcome']}: {row['ours']} against {row['region']}"
        lines.append(f"| `{row['claim_id']}` | {today} | {row[BEFORE]} |")
    return lines + ["", before_outcomes_tally(rows), ""]


def before_outcomes_tally(rows: pd.DataFrame) -> str:
    """The sentence under the before-outcomes table: how many recomputed verdicts read otherwise,
    how many cannot be recomputed, how many no change made after outcomes touched; a part whose
    count is zero is left out, and none recomputed is said in words (not "0 of 0 recomputed")."""
    recomputed = rows[~rows[BEFORE].isin([NOT_RECORDED, AS_TODAY, WITHDRAWN])]
    changed = sum(before_outcome(str(r[BEFORE])) != r["outcome"] for _, r in recomputed.iterrows())
    unrecorded, untouched = int((rows[BEFORE] == NOT_RECORDED).sum()), int((rows[BEFORE] == AS_TODAY).sum())
    withdrawn = int((rows[BEFORE] == WITHDRAWN).sum())
    rest = ([f"{unrecorded} cannot be recomputed (changes made after outcomes that record nothing they "
             "replaced)"] if unrecorded else []) + ([f"{untouched} no such change touched"] if untouched else []) + (
        [f"{withdrawn} withdrawn (never judged)"] if withdrawn else [])
    if recomputed.empty:
        return "No verdict here is recomputed as registered before outcomes: " + "; ".join(rest) + "."
    return "; ".join([f"{changed} of {len(recomputed)} recomputed read otherwise as registered before outcomes",
                      *rest]) + "."


def _claims(ids: list[str]) -> str:
    if len(ids) <= LISTED:
        return ", ".join(f"`{cid}`" for cid in ids)
    return f"{len(ids)} claims, each naming it in its section"


def _pooled_figure(row: pd.Series) -> str:
    """The pooled estimate as the section shows it; for an invalid claim, that it is withheld by
    rule (the fourth S0 review: a bare "-" beside each run's estimate did not say why)."""
    if row["outcome"] == INVALID and row["ours"] in ("-", "", None):
        return ("- (withheld by rule: a run rests on a point impossible in its own lab; each run's own "
                "estimate is below)")
    return str(row["ours"])


def claim_section(row: pd.Series, found: list, late: list[str]) -> list[str]:
    """One claim: the pooled verdict, its note (what the runs' analyses say beside the verdict: the
    eighth S0 review found the gains' measured ceilings only in claims.csv), the all-repetitions
    figure, the changes made after outcomes were read that name it (``late``: their labels), each
    run's own."""
    lines = [f"### {row['claim']} (`{row['claim_id']}`, {row['source']})", "",
             f"- paper: {row['paper']}; region: {row['region']}",
             f"- **pooled: {_pooled_figure(row)} -- {row['outcome']}**: {row['reason']}"]
    if isinstance(row["interval"], str) and row["interval"]:
        lines.append(f"- interval: {row['interval']}")
    note = row.get("note")
    if isinstance(note, str) and note.strip():  # a run's context (S0's gain ceiling), each run's if they differ
        lines.append(f"- note: {note}")
    together = row.get(ALL_UNITS)
    if isinstance(together, str) and together and together != "-":
        lines.append(f"- all repetitions together: {together} -- {row[ALL_UNITS_HOW]}; {SENSITIVITY}")
    if late:
        lines.append("- **decided under a rule changed after outcomes were read:** changes "
                     + ", ".join(late) + " (listed above)")
    before = row.get(BEFORE)
    if isinstance(before, str) and before:
        lines.append(f"- **as registered before outcomes were read:** {before} -- {row[BEFORE_HOW]}")
    for m in found:
        ours, outcome = row[f"{m.run_id}: ours"], row[f"{m.run_id}: outcome"]
        said = row.get(f"{m.run_id}: reason")
        why = f": {said}" if outcome and outcome != row["outcome"] and isinstance(said, str) \
            and said else ""  # a run that says other than the pool says why, in its own figures
        lines.append(f"- run {m.run_id} alone: {ours or '-'} -- {outcome or '(no such claim)'}{why}")
    return lines


def unpooled_line(claim_id: str, found: list, own: list[pd.DataFrame]) -> str:
    """One claim no pool judges, with every run's own estimate and outcome (a 'not met' in every
    run stays in sight: a headline over the pooled claims would leave it out)."""
    said, regions = [], []
    for member, claims_table in zip(found, own):
        rows = claims_table[claims_table.claim_id == claim_id]
        if rows.empty:
            continue
        row = rows.iloc[0]
        said.append(f"run {member.run_id}: {row.get('ours') or '-'} -- {row['outcome']}")
        region = row.get("region")
        if isinstance(region, str) and region and region != "-" and region not in regions:
            regions.append(region)
    # its region beside it: rows of near-identical names judged against different bounds
    # (relay.target.srd_vs_forward >= 0.9x, s0.target.srd_vs_forward >= 0.7x: the S0 review of
    # 2026-11-29 could not tell them apart in the pooled report)
    head = f"- `{claim_id}`" + (f" (region {' / '.join(regions)})" if regions else "")
    figures = {part.split(": ", 1)[1] for part in said}
    if len(said) > 1 and len(figures) == 1:  # one archived benchmark every run carries: said once
        return (f"{head}: {figures.pop()} (one measurement, the same in all {len(said)} "
                "runs: not replicated by them)")
    return f"{head}: " + "; ".join(said)


def withdrawn_block(registration: Registration, frame: pd.DataFrame) -> list[str]:
    """The claims a registered change withdrew, each with that change: kept in the registration,
    never judged (:mod:`harness.verdicts.withdrawal`); [] when none."""
    ids = [cid for cid in frame[frame.outcome == WITHDRAWN].claim_id if registration.withdrawn(cid)]
    if not ids:
        return []
    return ["**Withdrawn** (kept in the registration with the change that withdrew it, never judged; "
            "`harness claims show` prints its record):", "",
            *(f"- `{cid}`: by change {disclosure.label(registration, registration.withdrawn(cid))}"
              for cid in ids), ""]
