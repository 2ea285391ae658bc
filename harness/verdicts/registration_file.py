"""A study's registration read from its file: TOML, no code, checked against a schema.

The file sits beside the study's module (``Study.registration_file`` names it relative to
the module's folder) and reads like a preregistration: one ``[[claims]]`` table per claim
(id, source, the paper's sentence and seed line, the quantity and unit, the regime, the
validity checks its points must pass, and ``[claims.region]`` with its bounds and rule; a
*reading*, ``source = "reading"``, has no region: it is shown, judged against nothing),
then ``[design]`` and one ``[[changes]]`` table per change (a change that renames claims says
so in ``renamed``, old id = new id, so that earlier changes may still name the old ids; a change
says in ``after_outcomes`` whether it was made after outcomes were read, true or false, or
leaves it out where its reason does not say; a change that withdraws claims lists them in
``dropped``: each keeps its ``[[claims]]`` table, and is never judged again).
:func:`load` turns it into a
:class:`~harness.verdicts.registration.Registration`; anything the schema does not allow (an
unknown key, a missing field, a wrong type, a region whose low is above its high, a
repeated claim id, a validity check that does not exist) is one :class:`RegistrationError`
naming the file, the claim and the field, and how to fix it, before anything runs.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from dataclasses import replace
from pathlib import Path

from ..errors import SpecError
from .claims import PAPER, READING, SOURCES, Claim, Region
from .gates.registry import GATES, Gate
from .margins import Margin, MarginError
from .registration import DesignChange, Registration, Replaced
from .validity import CHECKS

TOP = {"study": str, "claims": list, "design": dict, "changes": list}
TOP_REQUIRED = ("study", "claims", "design")
#: a claim's keys and their types; the first four are needed by every claim
CLAIM = {"id": str, "source": str, "claim": str, "paper": str, "unit": str, "quote": str,
         "seed_line": str, "quantity": str, "regime": str, "checks": list, "gates": list,
         "region": dict}
CLAIM_REQUIRED = ("id", "source", "claim", "paper")
#: what a paper's claim must say besides (a target's or a lab check's need not)
PAPER_REQUIRED = ("quote", "seed_line", "quantity", "regime")
#: what a reading must say: what it measures and where, since no region says what it is for
READING_REQUIRED = ("quantity", "regime")
#: a reading's region, as shown and digested: none
NO_REGION = "none: a reading is shown with its interval and judged against nothing"
REGION = {"low": (int, float), "high": (int, float), "rule": str,
          "equivalent_to": (int, float, list), "differs_from": (int, float),
          "at_most": (int, float), "at_least": (int, float), "scale": str,
          "direction": str, "cap_low": (int, float), "cap_high": (int, float), "cap_why": str,
          "why": str}
#: a region made by the convention (harness.verdicts.margins) names its figure with one of these
CONVENTION = ("equivalent_to", "differs_from", "at_most", "at_least")
_MARGIN_ONLY = ("scale", "direction", "cap_low", "cap_high", "cap_why", "why")
CHANGE = {"date": str, "what": str, "why": str, "claims": list, "renamed": dict, "after_outcomes": bool,
          "replaced": dict, "dropped": list}
#: what a change's ``replaced`` table records per claim: the claim's region and gates as they stood
#: before the change (harness.verdicts.before_outcomes judges the claim under them again), and
#: ``also``: in words, what else it replaced that no record can restore (kept as today, said so)
REPLACED = {"region": dict, "gates": list, "also": str}
CHANGE_REQUIRED = ("date", "what", "why")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?Z)?")  # a date, or a date and UTC time
#: what a field's error adds to "write KEY as ..."
_FIX = {"after_outcomes": ", unquoted: true where the change's reason says it was made after outcomes "
                          "(or references) were read, false where it says before any data of it; leave "
                          "it out where it says neither"}
_TYPE_NAMES = {bool: "a boolean (true or false)", str: "a string", list: "an array", dict: "a table", int: "an integer",
               float: "a number", (int, float): "a number",
               (int, float, list): "a number or an array of two numbers"}


class RegistrationError(SpecError):
    """A registration file that does not follow the schema (module docstring)."""


def load(path: str | Path) -> Registration:
    """The registration in ``path`` (cached while the file is unchanged)."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as exc:
        raise RegistrationError(f"{path}: the study's registration file cannot be read "
                                f"({exc.strerror or exc})",
                                "create it beside the study's module, or correct the study's "
                                "registration_file") from None
    return _load(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _load(path: str, _mtime_ns: int, _size: int) -> Registration:
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RegistrationError(f"{path}: not valid TOML: {exc}",
                                "correct the syntax at that line (strings in double quotes, "
                                "one [[claims]] table per claim)") from None
    return parse(data, path)


def parse(data: dict, where: str) -> Registration:
    """A registration from the parsed file ``data`` (``where``: the file, for errors)."""
    _keys(data, TOP, TOP_REQUIRED, where, "the file")
    claims, seen = [], set()
    for index, entry in enumerate(data["claims"]):
        claim = _claim(entry, index, where)
        if claim.id in seen:
            raise RegistrationError(f"{where}: claim {claim.id}: field id: the id is given "
                                    "twice", "give each [[claims]] table its own id")
        seen.add(claim.id)
        claims.append(claim)
    entries = data.get("changes", [])
    former = _renamed_ids(entries, seen, where)
    todays = _todays_ids(entries)
    units = {c.id: c.unit for c in claims}
    changes = tuple(_change(entry, index, where, seen | former, units, todays)
                    for index, entry in enumerate(entries))
    _check_dropped(changes, seen, where)
    return Registration(data["study"], tuple(claims), data["design"], changes)


def _keys(table, schema: dict, required, where: str, what: str) -> None:
    """Unknown keys, missing ones and wrong types of one table, each one error."""
    if not isinstance(table, dict):
        raise RegistrationError(f"{where}: {what}: must be a table, not {_kind(table)}",
                                "write it as a [[...]] table with key = value lines")
    for key in table:
        if key not in schema:
            raise RegistrationError(
                f"{where}: {what}: field {key}: unknown key",
                f"remove it or correct its spelling; the known keys are {', '.join(schema)}")
    for key in required:
        if key not in table:
            raise RegistrationError(f"{where}: {what}: field {key}: missing",
                                    f"add {key} = ... to it")
    for key, value in table.items():
        want = schema[key]
        if isinstance(value, bool) != (want is bool) or not isinstance(value, want):
            raise RegistrationError(
                f"{where}: {what}: field {key}: must be {_TYPE_NAMES[want]}, not {_kind(value)}",
                f"write {key} as {_TYPE_NAMES[want]}" + (" (in double quotes)" if want is str
                                                          else _FIX.get(key, "")))


def _kind(value) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    for kind, name in ((str, "a string"), (dict, "a table"), (list, "an array"),
                       (int, "an integer"), (float, "a number")):
        if isinstance(value, kind):
            return f"{name} ({value!r})" if kind in (int, float) else name
    return type(value).__name__


def _claim(entry, index: int, where: str) -> Claim:
    cid = entry.get("id") if isinstance(entry, dict) else None
    what = f"claim {cid}" if isinstance(cid, str) and cid else f"claim #{index + 1} (no id)"
    _keys(entry, CLAIM, CLAIM_REQUIRED, where, what)
    if entry["source"] not in SOURCES:
        raise RegistrationError(f"{where}: {what}: field source: {entry['source']!r} is not a "
                                "source", f"write one of {', '.join(SOURCES)}")
    if entry["source"] == PAPER:
        for key in PAPER_REQUIRED:
            if not entry.get(key):
                raise RegistrationError(
                    f"{where}: {what}: field {key}: missing (a paper's claim needs its quote, "
                    "seed_line, quantity and regime)",
                    f"add {key} = ...; or, if the claim is not the paper's, make its source "
                    "target or lab")
    if entry["source"] == READING:
        if "region" in entry:
            raise RegistrationError(f"{where}: {what}: field region: a reading is judged against "
                                    "nothing, so it has no region",
                                    "remove its [claims.region] table, or make it a paper's claim, "
                                    "a target or a lab check")
        for key in READING_REQUIRED:
            if not entry.get(key):
                raise RegistrationError(
                    f"{where}: {what}: field {key}: missing (a reading needs its quantity and the "
                    "regime it is measured in, saying that it is not the paper's)",
                    f"add {key} = ...")
    elif "region" not in entry:
        raise RegistrationError(f"{where}: {what}: field region: missing",
                                "add a [claims.region] table (low/high and its rule, or the "
                                "convention); a figure judged against nothing is source = "
                                "\"reading\"")
    checks = entry.get("checks", [])
    for name in checks:
        if not isinstance(name, str) or name not in CHECKS:
            raise RegistrationError(
                f"{where}: {what}: field checks: {name!r} is no validity check",
                f"use the names of harness.verdicts.validity.CHECKS: {', '.join(sorted(CHECKS))}")
    gates = tuple(_gate(g, where, what) for g in entry.get("gates", []))
    region = (Region(why=NO_REGION) if entry["source"] == READING
              else _region(entry["region"], where, what, entry.get("unit", "")))
    return Claim(entry["id"], entry["claim"], entry["paper"], region, entry.get("unit", ""),
                 entry["source"], entry.get("quote", ""), entry.get("seed_line", ""),
                 entry.get("quantity", ""), entry.get("regime", ""), gates=gates,
                 checks=tuple(checks))


def _gate(table, where: str, what: str) -> Gate:
    """One of a claim's regime gates: ``{ name = "...", <its parameters> }`` (harness.verdicts.gates)."""
    if not isinstance(table, dict) or not isinstance(table.get("name"), str):
        raise RegistrationError(f"{where}: {what}: field gates: {table!r} is not a gate",
                                'write each gate as { name = "no_oversubscription" } with the '
                                f"parameters it takes; the gates are {', '.join(sorted(GATES))}")
    params = {k: v for k, v in table.items() if k != "name"}
    try:
        return Gate(table["name"], params)
    except ValueError as exc:
        raise RegistrationError(f"{where}: {what}: field gates: {exc}",
                                "name a gate of harness.verdicts.gates with exactly the parameters it "
                                "takes") from None


def _region(table, where: str, what: str, unit: str = "") -> Region:
    _keys(table, REGION, (), where, f"{what}: region")
    given = [key for key in CONVENTION if key in table]
    if given:
        return _margin_region(table, given, where, what, unit)
    stray = [key for key in _MARGIN_ONLY if key in table]
    if stray:
        raise RegistrationError(f"{where}: {what}: field region.{stray[0]}: only a region made by the "
                                "convention takes it",
                                "give equivalent_to (or differs_from) with it, or remove it")
    if "rule" not in table:
        raise RegistrationError(f"{where}: {what}: region: field rule: missing",
                                "add rule = ... saying why these bounds, or make the region by the "
                                "convention (equivalent_to = the paper's figure)")
    low, high = table.get("low", -math.inf), table.get("high", math.inf)
    for key, value in (("low", low), ("high", high)):
        if key in table and not math.isfinite(value):
            raise RegistrationError(f"{where}: {what}: field region.{key}: {value} is not a "
                                    "finite number", f"leave {key} out for an open side")
    if "low" not in table and "high" not in table:
        raise RegistrationError(f"{where}: {what}: field region: neither low nor high",
                                "give the region at least one bound (low, high or both)")
    if low > high:
        raise RegistrationError(f"{where}: {what}: field region: low {low} is above high "
                                f"{high}", "swap them, or correct the one that is wrong")
    return Region(low, high, table["rule"])


def _margin_region(table: dict, given: list[str], where: str, what: str, unit: str) -> Region:
    """A region by the project's equivalence convention (harness.verdicts.margins)."""
    for key in ("low", "high", "rule"):
        if key in table:
            raise RegistrationError(f"{where}: {what}: field region.{key}: a region made by the "
                                    "convention has its bounds and rule computed",
                                    f"remove {key}, or remove {given[0]} and write the region out "
                                    "with low/high and its rule")
    if len(given) > 1:
        raise RegistrationError(f"{where}: {what}: field region: both {given[0]} and {given[1]}",
                                "keep the one the paper's sentence states")
    figure = table[given[0]]
    if isinstance(figure, list):
        if given[0] != "equivalent_to" or len(figure) != 2 or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in figure):
            raise RegistrationError(f"{where}: {what}: field region.{given[0]}: {figure!r} is not a "
                                    "figure", "write one number, or [low, high] for a range the "
                                    "paper gives")
        pair = (float(figure[0]), float(figure[1]))
    else:
        pair = (float(figure), float(figure))
    try:
        margin = Margin(pair, table.get("scale", "ratio"), table.get("direction", "either"),
                        differs=given[0] == "differs_from",
                        limit=given[0] if given[0] in ("at_most", "at_least") else "",
                        cap_low=table.get("cap_low", -math.inf), cap_high=table.get("cap_high", math.inf),
                        cap_why=table.get("cap_why", ""))
        region = Region.by_margin(margin, unit)
    except MarginError as exc:
        raise RegistrationError(f"{where}: {what}: field region: {exc}",
                                "see harness.verdicts.margins for what the convention takes") from None
    if "why" in table:  # why the claim's sentence is read with this figure and scale: in its rule
        region = replace(region, why=f"{region.why}; why this reading: {' '.join(table['why'].split())}")
    return region


def _renamed_ids(entries, ids: set[str], where: str) -> set[str]:
    """The former ids the changes' ``renamed`` tables retire (old id = new id), each checked:
    the new id a claim of the file, the old one no longer one."""
    former: set[str] = set()
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        renamed = entry.get("renamed") if isinstance(entry, dict) else None
        if not isinstance(renamed, dict):
            continue  # absent, or a wrong type that _change reports
        for old, new in renamed.items():
            if not isinstance(new, str) or new not in ids or old in ids:
                raise RegistrationError(
                    f"{where}: change #{index + 1}: field renamed: {old} = {new!r} is not a "
                    "former id renamed to a claim of this registration",
                    "write old_id = \"new_id\" with new_id a [[claims]] id and old_id none")
            former.add(old)
    return former


def _todays_ids(entries) -> dict[str, str]:
    """Each former id the changes' ``renamed`` tables retire -> the claim's id today (renamed
    again later: followed), so that a change naming a claim under its id of then may record what
    it replaced of it under its id of today (S4's change #5 names the @cpu0.01 claims)."""
    renamed = {old: new for entry in (entries if isinstance(entries, list) else [])
               if isinstance(entry, dict) and isinstance(entry.get("renamed"), dict)
               for old, new in entry["renamed"].items()}
    out = {}
    for old, new in renamed.items():
        seen = {old}
        while new in renamed and new not in seen:
            seen.add(new)
            new = renamed[new]
        out[old] = new
    return out


def _change(entry, index: int, where: str, ids: set[str], units: dict[str, str],
            todays: dict[str, str] | None = None) -> DesignChange:
    what = f"change #{index + 1}"
    if isinstance(entry, dict) and isinstance(entry.get("date"), str):
        what += f" ({entry['date']})"
    _keys(entry, CHANGE, CHANGE_REQUIRED, where, what)
    if not _DATE.fullmatch(entry["date"]):
        raise RegistrationError(f"{where}: {what}: field date: {entry['date']!r} is not an ISO "
                                "date", "write it as YYYY-MM-DD, or YYYY-MM-DDTHH:MMZ with the UTC "
                                "time (in double quotes)")
    for cid in entry.get("claims", []):
        if not isinstance(cid, str) or cid not in ids:
            raise RegistrationError(f"{where}: {what}: field claims: {cid!r} is no claim of "
                                    "this registration",
                                    "name the ids of the claims the change touches")
    replaced = {cid: _replaced(cid, table, entry, where, what, units, todays or {})
                for cid, table in entry.get("replaced", {}).items()}
    return DesignChange(entry["date"], entry["what"], entry["why"], tuple(entry.get("claims", ())),
                        dict(entry.get("renamed", {})), entry.get("after_outcomes"), replaced,
                        tuple(entry.get("dropped", ())))


def _check_dropped(changes: tuple[DesignChange, ...], ids: set[str], where: str) -> None:
    """Each change's ``dropped``: ids (of today) of claims the file still registers and the change
    names in ``claims``, each withdrawn by one change only (its record stays; nothing judges it)."""
    withdrawn: dict[str, int] = {}
    for index, change in enumerate(changes):
        what = f"change #{index + 1} ({change.date})"
        for cid in change.dropped:
            if not isinstance(cid, str) or cid not in ids or cid not in change.claims:
                raise RegistrationError(
                    f"{where}: {what}: field dropped: {cid!r} is not a claim of this registration "
                    "that the change names in claims",
                    "keep the withdrawn claim's [[claims]] table in the file (its record stays) and "
                    "name its id in the change's claims and dropped")
            if cid in withdrawn:
                raise RegistrationError(
                    f"{where}: {what}: field dropped: {cid} was withdrawn already by change "
                    f"#{withdrawn[cid] + 1}", "withdraw a claim once; remove it from this dropped")
            withdrawn[cid] = index


def _replaced(cid: str, table, entry: dict, where: str, what: str, units: dict[str, str],
              todays: dict[str, str]) -> Replaced:
    """What a change replaced of claim ``cid``: its region and/or gates as they stood before it,
    in the form a claim registers them (so that the claim can be judged under them again), and in
    words (``also``) what else it replaced that no record can restore."""
    if cid not in units or cid not in {todays.get(c, c) for c in entry.get("claims", ())}:
        raise RegistrationError(f"{where}: {what}: field replaced: {cid!r} is not a claim of this "
                                "registration that the change names in claims",
                                "key replaced by the ids (of today) of claims the change lists in claims "
                                "(under the id they had then or any later one)")
    _keys(table, REPLACED, (), where, f"{what}: replaced.{cid}")
    if not table:
        raise RegistrationError(f"{where}: {what}: field replaced.{cid}: empty",
                                "give region = {...} and/or gates = [...] as they stood before the change, "
                                "and/or also = \"...\": what else it replaced, in words")
    if "also" in table and not table["also"].strip():
        raise RegistrationError(f"{where}: {what}: field replaced.{cid}.also: empty",
                                "say in words what else the change replaced of the claim (a quantity, the "
                                "sizes counted, a validity rule), or leave also out")
    return Replaced(_region(table["region"], where, f"{what}: replaced.{cid}", units[cid])
                    if "region" in table else None,
                    tuple(_gate(g, where, f"{what}: replaced.{cid}") for g in table["gates"])
                    if "gates" in table else None,
                    " ".join(table.get("also", "").split()))
