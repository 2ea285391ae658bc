"""Which registered changes were made after outcomes were read, claim by claim, for reports.

A referee weighs a verdict by when its rule was fixed: a gate, region or quantity changed after
outcomes were read may have been chosen for the outcome it gives (the S4 and S0 reviews of
2026-11-29: "the rule that allowed a verdict came after the data"; "the gate was relaxed after
data"). Each ``[[changes]]`` table of a registration says so in ``after_outcomes`` (true: made
after outcomes or references were read; false: before any data of it; absent: its reason does
not say). A report names, beside each claim, the changes marked true that touched it (the claim
named in the change under its id of then or of now) and, once for all claims, those of the whole
design (a change naming no claim), so a reader sees a verdict decided under a rule changed after
outcomes were read where the verdict is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: a :class:`~harness.verdicts.registration.Registration` and one of its ``DesignChange`` s: not
#: imported, not even for annotations, since harness.verdicts.claims (which registration imports)
#: shows these notes in a run's claims section
Registration = DesignChange = Any

#: a change's one line in a report is its ``what`` cut to about this many characters
ONE_LINE = 150


def current_ids(registration: Registration) -> dict[str, str]:
    """Each claim id a change may name (former ids included) -> the claim's id today."""
    now = {c.id: c.id for c in registration.claims}
    renamed = {old: new for change in registration.changes for old, new in change.renamed.items()}
    for old in renamed:
        new, seen = renamed[old], {old}
        while new in renamed and new not in seen:  # renamed again later
            seen.add(new)
            new = renamed[new]
        now.setdefault(old, new)
    return now


def touched(registration: Registration, claim_id: str) -> list[DesignChange]:
    """The changes that name ``claim_id`` (under any id it had), in the registration's order."""
    ids = current_ids(registration)
    return [c for c in registration.changes if any(ids.get(cid) == claim_id for cid in c.claims)]


def after_outcomes(registration: Registration, claim_id: str) -> list[DesignChange]:
    """The changes marked ``after_outcomes = true`` that name ``claim_id``."""
    return [c for c in touched(registration, claim_id) if c.after_outcomes is True]


def whole_design_after_outcomes(registration: Registration) -> list[DesignChange]:
    """The changes marked ``after_outcomes = true`` that name no claim: the whole design's."""
    return [c for c in registration.changes if not c.claims and c.after_outcomes is True]


def one_line(change: DesignChange) -> str:
    """``date: what`` cut to its first sentence and about :data:`ONE_LINE` characters."""
    text = " ".join(change.what.split())
    first = re.split(r"(?<=[a-z0-9)])\. (?=[A-Z(])", text, maxsplit=1)[0]
    if len(first) > ONE_LINE:
        first = first[:ONE_LINE].rsplit(" ", 1)[0].rstrip(",;:") + " ..."
    return f"{change.date}: {first}"


def whole(change: DesignChange) -> str:
    """``what`` whole, on one line: a pooled report is what a referee holds, and two referees of
    S0's references asked for the changes cut to one line ("... ") to be printed whole."""
    return " ".join(change.what.split())


def by_claim(registration: Registration, claim_ids: Iterable[str]) -> dict[str, list[str]]:
    """Each of ``claim_ids`` with the one lines of its changes made after outcomes were read
    (claims with none left out)."""
    out = {}
    for cid in claim_ids:
        lines = [one_line(c) for c in after_outcomes(registration, cid)]
        if lines:
            out[cid] = lines
    return out


def label(registration: Registration, change: DesignChange) -> str:
    """``#N (date)``: the change's place in the registration (as its errors name it) and date."""
    return f"#{registration.changes.index(change) + 1} ({change.date})"


def listed(registration: Registration, claim_ids: Iterable[str]) -> list[tuple[DesignChange, list[str]]]:
    """The changes made after outcomes were read that name any of ``claim_ids``, each with the
    ids it names among them, in the registration's order."""
    claim_ids = list(claim_ids)
    out = []
    for change in registration.changes:
        if change.after_outcomes is not True or not change.claims:
            continue
        named = [cid for cid in claim_ids if change in after_outcomes(registration, cid)]
        if named:
            out.append((change, named))
    return out


def counts(registration: Registration) -> str:
    """Every change of the registration counted by when it was made, so that a reader who sees
    some listed knows what the others were (a referee of S3's reference asked where #2, #4
    and #13 of 13 went)."""
    marks = [c.after_outcomes for c in registration.changes]
    after, before, left = marks.count(True), marks.count(False), marks.count(None)
    parts = [f"{after} made after outcomes were read"] + (
        [f"{before} before any data of theirs"] if before else []) + (
        [f"{left} {'does' if left == 1 else 'do'} not say which"] if left else [])
    return (f"Of the registration's {len(marks)} changes, " + ", ".join(parts)
            + " (`harness claims show` lists every change with its reason).")


def note(registration: Registration, claims: Iterable[tuple[str, str]]) -> str:
    """The block under a run's claims table on changes made after outcomes were read, for
    ``claims`` (pairs of id and the name the table shows): each claim with the numbers of the
    changes that touched it, then each such change once with its date and one line; "" when the
    registration marks none of theirs."""
    claims = dict(claims)
    changes = listed(registration, claims)
    design = whole_design_after_outcomes(registration)
    if not changes and not design:
        return ""
    lines = ["**Changed after outcomes were read** (the registration's changes marked "
             "`after_outcomes = true`: these verdicts are decided under a rule changed after "
             "outcomes of earlier runs were read):", ""]
    for cid, name in claims.items():
        late = [f"#{registration.changes.index(c) + 1}" for c in after_outcomes(registration, cid)]
        if late:
            lines.append(f"* {name}: changes {', '.join(late)}")
    lines += ["", "The changes:", ""]
    lines += [f"* {label(registration, c)}: {one_line(c).split(': ', 1)[1]}" for c, _ in changes]
    lines += [f"* {label(registration, c)}: {one_line(c).split(': ', 1)[1]} (the whole design: every "
              "claim)" for c in design]
    return "\n".join([*lines, "", counts(registration)])
