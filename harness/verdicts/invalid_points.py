"""The invalid points a claims table names, said in words: each point, or each kind of point
with its count and an example.

A claim's ``invalid`` cell (:meth:`harness.verdicts.claims.Verdict.row`) joins the texts of
the points it rests on (:meth:`harness.verdicts.validity.Invalid.text`: "<point>: <quantity>
<value> <unit> > <bound> <unit> (<why>)"). A run's notebook lists them, by kind beyond
:data:`LISTED_POINTS` (:func:`invalid_note`); a pooled claim counts its runs' points by kind,
one worked example each (:func:`by_kind`, used by :mod:`harness.verdicts.run_pooling`), so
that no reason is cut short however many points the runs found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

#: a report lists each invalid point up to this many; beyond, one line per kind of point
LISTED_POINTS = 20

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|inf|nan)"
#: an Invalid's text: its point, then quantity, value [unit], how it stands to the bound
_TEXT = re.compile(rf"^(?P<point>.*?): (?P<quantity>(?:(?!: ).)+?) {_NUMBER}(?: [^\s()]+)? (?P<breaks>[<>]) ")


def invalid_points(frame: pd.DataFrame) -> list[str]:
    """Each invalid point (impossible or failed) named by any claim of a run, once."""
    seen: list[str] = []
    for text in frame.get("invalid", pd.Series(dtype=object)).dropna():
        for point in split_points(str(text)):
            if point and point not in seen:
                seen.append(point)
    return seen


def split_points(text: str) -> list[str]:
    """The points of a claim's ``invalid`` cell, which :meth:`Verdict.row` joins with "; ".

    A point's own reason, in parentheses at its end, may hold "; " too (check_rate's "...
    at MTU 1500; 2% slack for the clocks"), so only a "; " outside parentheses separates
    two points; a plain split cut each such point in two.
    """
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    out.append(text[start:])
    return [p for p in out if p]


def shape(point: str) -> str:
    """What an invalid point broke, without where and by how much: the text after its label
    (and after a pooled table's "run <id>: "), its figures replaced by '#'."""
    text = re.sub(r"^run \S+: ", "", point)
    text = text.split(": ", 1)[1] if ": " in text else text
    return re.sub(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?", "#", text)


def kind(point: str) -> str:
    """The kind of an invalid point in words: the quantity it measured and which way it broke
    its bound ("goodput above its bound", "completed rounds below its bound"); a text that is
    not an Invalid's: its :func:`shape`."""
    found = _TEXT.match(point)
    if not found:
        return shape(point)
    return f"{found['quantity']} {'above' if found['breaks'] == '>' else 'below'} its bound"


@dataclass(frozen=True)
class Kind:
    """The invalid points of one kind over a pool's runs: how many, in which runs, one example."""

    name: str
    runs: tuple[tuple[str, int], ...]  # (run id, its points of this kind), in the order they show
    example: tuple[str, str]  # (run id, the point's whole text)

    @property
    def points(self) -> int:
        return sum(n for _, n in self.runs)

    def text(self) -> str:
        each = ", ".join(f"run {rid}: {n}" for rid, n in self.runs)
        return (f"{self.name}: {self.points} point{'s' if self.points != 1 else ''} in "
                f"{len(self.runs)} run{'s' if len(self.runs) != 1 else ''} ({each}), "
                f"e.g. run {self.example[0]}: {self.example[1]}")


def by_kind(points: list[tuple[str, str]]) -> list[Kind]:
    """``points`` (run id, point text) counted by :func:`kind` and run, the most frequent kind
    first (ties in the order they first show); each kind's example is its first point."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for run_id, point in points:
        groups.setdefault(kind(point), []).append((run_id, point))
    kinds = []
    for name, found in groups.items():
        runs: dict[str, int] = {}
        for run_id, _ in found:
            runs[run_id] = runs.get(run_id, 0) + 1
        kinds.append(Kind(name, tuple(runs.items()), found[0]))
    return sorted(kinds, key=lambda k: -k.points)


def invalid_note(frame: pd.DataFrame) -> str:
    """The notebook's words on the run's invalid points, also when there are none.

    A reader must see that the points were checked even when none failed: a section that is
    silent then reads the same as a study that checks nothing (S4's reference report said
    nothing of its 400 iperf3 points, S0's "0 invalid points of 1890"). Invalid covers both
    kinds :mod:`harness.verdicts.validity` names: physically impossible (faster than the wire, above
    100 % of a CPU) and failed (a fan-in point with no completed round).
    """
    bad = invalid_points(frame)
    if not bad:
        return ("**Invalid points:** none: no claim of this run rests on a point that failed "
                "its study's physical checks (`harness.verdicts.validity`).")
    head = ("**Invalid points** (physically impossible or failed; they decide no claim, and "
            "each claim resting on one is *invalid*)")
    if len(bad) <= LISTED_POINTS:
        return head + ":\n\n" + "\n".join(f"* {p}" for p in bad)
    kinds: dict[str, list[str]] = {}
    for point in bad:
        kinds.setdefault(shape(point), []).append(point)
    lines = [f"* {len(points)} x {key}; e.g. {points[0]}" for key, points in
             sorted(kinds.items(), key=lambda kv: -len(kv[1]))]
    return (f"{head}: {len(bad)} points of {len(kinds)} kinds, each kind with its count and its "
            "first point (every point: the `invalid` column of claims.csv):\n\n" + "\n".join(lines))


def pooled_invalid_note(run_ids: list[str], own: list[pd.DataFrame]) -> str:
    """A pooled report's words on its runs' invalid points, read from each run's own table
    (``own``, in ``run_ids`` order): each kind with its count per run and one whole example
    (:func:`by_kind`), also when there are none. The pooled table's ``invalid`` column names a
    run only before its first point, so a count over it merged runs and left examples unnamed."""
    points = [(rid, point) for rid, table in zip(run_ids, own) for point in invalid_points(table)]
    if not points:
        return (f"**Invalid points:** none: no claim of the {len(run_ids)} runs rests on a point that "
                "failed its study's physical checks (`harness.verdicts.validity`).")
    kinds = by_kind(points)
    runs = len({rid for rid, _ in points})
    return ("**Invalid points** (physically impossible or failed; they decide no claim, and each claim "
            f"resting on one is *invalid*): {len(points)} points in {runs} of {len(run_ids)} runs, of "
            f"{len(kinds)} kind{'s' if len(kinds) != 1 else ''}, each with its count per run and one "
            "example (every point: the `invalid` column of each run's own claims.csv):\n\n"
            + "\n".join(f"* {k.text()}" for k in kinds))

