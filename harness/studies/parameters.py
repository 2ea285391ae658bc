"""A study's parameters, declared once: a frozen dataclass whose fields carry their rules.

Each field is made with :func:`param`, which puts a :class:`ParamRules` (help
text, unit, range, choices, a custom parser) in the field's metadata. The
field's type says how a value is read: ``int`` and ``float`` are numbers in
``[low, high]``, ``bool`` is true/false (``bool | None`` also takes "empty:
let the study decide"), ``tuple[int, ...]`` is a list of integers ("1,2,4",
"1-10", 4 or a list), ``tuple[str, ...]`` a list of names from ``choices``.

One generic :meth:`Parameters.resolve` merges the dataclass defaults, the
chosen profile's values and what was given -- a given value that is empty
(None or "") keeps the profile's, which is how a notebook's ``None`` defaults
mean "the profile decides" -- and checks every value, for every study. A
notebook builds its study's parameters from its own namespace with
:meth:`Parameters.from_namespace`, so no list of names is repeated by hand.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from types import NoneType, UnionType
from typing import Any, ClassVar

from ..errors import SpecError

META_KEY = "harness"


@dataclass(frozen=True)
class ParamRules:
    """The rules and the documentation of one parameter."""

    help: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    zero: str = ""  # what 0 means when 0 is allowed below ``low`` ("unshaped", "no limit")
    above: str = ""  # why ``high`` is the limit, said when a value exceeds it
    parse: Callable[[str, Any], Any] | None = None  # custom reader: (name, raw) -> value
    item: str = "value"  # what one item of a list is called in errors ("protocol")

    def range_text(self) -> str:
        parts = []
        if self.choices is not None:
            parts.append("one of " + ", ".join(str(c) for c in self.choices))
        if self.low is not None or self.high is not None:
            low = "" if self.low is None else f"{self.low:g}"
            high = "" if self.high is None else f"{self.high:g}"
            parts.append(f"{low}..{high}")
        if self.zero:
            parts.append(f"0: {self.zero}")
        return "; ".join(parts)


def param(default: Any, help: str, *, unit: str = "", low: float | None = None,
          high: float | None = None, choices: Iterable | None = None, zero: str = "",
          above: str = "", parse: Callable[[str, Any], Any] | None = None,
          item: str = "value") -> Any:
    """A dataclass field with its rules (see :class:`ParamRules`)."""
    rules = ParamRules(help, unit, low, high, tuple(choices) if choices is not None else None,
                       zero, above, parse, item)
    return field(default=default, metadata={META_KEY: rules})


# A sweep of more points than this would run for weeks; a range wider than it is a typo.
MAX_RANGE_ITEMS = 10_000


# -- readers for each kind of value ---------------------------------------------------------

def int_list(name: str, value, low: float | None, high: float | None,
             above: str = "") -> tuple[int, ...]:
    """Accept 4, "1,2,4", "1-10", [1, 2] or (1, 2); check each is in [low, high]."""
    if isinstance(value, str):
        items: list[int] = []
        for part in value.replace(" ", "").split(","):
            if not part:
                continue
            try:
                if "-" in part:
                    a, b = (int(x) for x in part.split("-", 1))
                    # The bounds first: "1-10000000000" would otherwise be a list of
                    # 10^10 items (tens of GB) before its range was ever checked.
                    _check_range(name, a, low, high, above)
                    _check_range(name, b, low, high, above)
                    if b < a or b - a >= MAX_RANGE_ITEMS:
                        raise SpecError(f"parameter {name}={value!r}: range {part} is "
                                        + ("backwards" if b < a else
                                           f"more than {MAX_RANGE_ITEMS} values"),
                                        "write low-high with low <= high, "
                                        f"at most {MAX_RANGE_ITEMS} values")
                    items.extend(range(a, b + 1))
                else:
                    items.append(int(part))
            except ValueError:
                raise SpecError(f"parameter {name}={value!r} is not a list of integers",
                                "write e.g. 1,2,4 or 1-10") from None
            if len(items) > MAX_RANGE_ITEMS:  # each range is bounded, and so is their sum:
                # 300 times "1-9999" was 3 million values, a million times 10^10
                raise SpecError(f"parameter {name}={value[:60]!r}...: more than "
                                f"{MAX_RANGE_ITEMS} values", f"give at most {MAX_RANGE_ITEMS}")
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise SpecError(f"parameter {name}={value!r} is not a list of integers",
                        "write e.g. 1,2,4 or 1-10")
    if not items:
        raise SpecError(f"parameter {name} is empty", "give at least one value")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int):
            raise SpecError(f"parameter {name} has a non-integer value {item!r}",
                            "write e.g. 1,2,4 or 1-10")
        _check_range(name, item, low, high, above)
    return tuple(items)


def number(name: str, value, low: float | None, high: float | None, *, integer: bool = False,
           zero: str = "", above: str = ""):
    """A number in [low, high]; 0 is also accepted when ``zero`` says what it means."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"parameter {name}={value!r} is not a number", "give a number")
    if integer and int(value) != value:
        raise SpecError(f"parameter {name}={value!r} must be a whole number",
                        "give a whole number")
    if not (zero and value == 0):
        _check_range(name, value, low, high, above, zero)
    return int(value) if integer else float(value)


def _check_range(name: str, value, low, high, above: str = "", zero: str = "") -> None:
    if high is not None and value > high and above:
        raise SpecError(f"parameter {name}={value} is more than {above}",
                        f"use at most {high:g}")
    if (low is not None and value < low) or (high is not None and value > high):
        span = f"{'' if low is None else f'{low:g}'}..{'' if high is None else f'{high:g}'}"
        raise SpecError(f"parameter {name}={value} is out of range",
                        f"use {span}" + (f" (or 0: {zero})" if zero else ""))


def flag(name: str, value, allow_none: bool = False) -> bool | None:
    """A true/false parameter (and, if allowed, None: "let the study decide")."""
    if isinstance(value, bool) or (allow_none and value is None):
        return value
    raise SpecError(f"parameter {name}={value!r} must be true or false"
                    + (", or empty for the default" if allow_none else ""),
                    f"set {name} to true or false"
                    + (", or leave it empty for the default" if allow_none else ""))


def name_list(name: str, value, choices: tuple | None, item: str = "value") -> tuple[str, ...]:
    """Names as "a,b" or a list; each one of ``choices`` when given."""
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [str(item).strip() for item in items if str(item).strip()]
    if not items:
        raise SpecError(f"parameter {name} is empty", "give at least one name")
    bad = [item for item in items if choices is not None and item not in choices]
    if bad:
        raise SpecError(f"parameter {name} has unknown {item}(s) {', '.join(bad)}",
                        f"use some of {', '.join(map(str, choices))}")
    return tuple(items)


def _read(name: str, kind, rules: ParamRules, value):
    """One value, read and checked according to the field's type and rules."""
    if rules.parse is not None:
        return rules.parse(name, value)
    optional = isinstance(kind, UnionType) and NoneType in typing.get_args(kind)
    base = next((k for k in typing.get_args(kind) if k is not NoneType), kind) if optional else kind
    if base is bool:
        return flag(name, value, allow_none=optional)
    if optional and value is None:
        return None
    if base is int or base is float:
        read = number(name, value, rules.low, rules.high, integer=base is int, zero=rules.zero,
                      above=rules.above)
        if rules.choices is not None and read not in rules.choices:
            raise SpecError(f"parameter {name}={value!r} is not one of the choices",
                            f"use one of {', '.join(map(str, rules.choices))}")
        return read
    if typing.get_origin(base) is tuple:
        item = typing.get_args(base)[0]
        if item is int:
            return int_list(name, value, rules.low, rules.high, rules.above)
        return name_list(name, value, rules.choices, rules.item)
    if base is str:
        if rules.choices is not None and value not in rules.choices:
            raise SpecError(f"parameter {name}={value!r} is not one of the choices",
                            f"use one of {', '.join(map(str, rules.choices))}")
        if not isinstance(value, str):
            raise SpecError(f"parameter {name}={value!r} is not text", "give a string")
        return value
    raise TypeError(f"parameter {name}: no reader for type {kind!r}; give param(..., parse=)")


# -- the base class -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Parameters:
    """Base of every study's parameters: ``profile`` plus the study's own fields.

    Subclasses are frozen dataclasses with a ``profiles`` class variable:
    ``{"quick": {...}, "paper": {...}}``, each a dict of field values.
    """

    profiles: ClassVar[dict[str, dict]] = {"quick": {}}
    profile: str = param("quick", "named set of values for the fields left empty "
                                  "(quick: minutes; paper: the paper's scale)")

    @classmethod
    def rules(cls) -> dict[str, tuple[Any, ParamRules]]:
        """Every field's (type, rules), in declaration order."""
        hints = typing.get_type_hints(cls)
        out = {}
        for f in fields(cls):
            rules = f.metadata.get(META_KEY)
            if rules is None:
                raise TypeError(f"{cls.__name__}.{f.name} is not declared with param(...)")
            out[f.name] = (hints[f.name], rules)
        return out

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return {f.name: f.default for f in fields(cls) if f.default is not MISSING}

    @classmethod
    def resolve(cls, **given) -> Parameters:
        """Check names and values; a profile supplies what is given empty (None or "")."""
        declared = cls.rules()
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise SpecError(f"unknown parameter(s) {', '.join(unknown)} for {cls.__qualname__}",
                            f"known parameters: {', '.join(declared)}")
        profile = given.get("profile") or "quick"
        if profile not in cls.profiles:
            raise SpecError(f"unknown profile {profile!r}",
                            f"use one of {', '.join(cls.profiles)}")
        values = {**cls.defaults(), **cls.profiles[profile], "profile": profile}
        values.update({k: v for k, v in given.items() if v is not None and v != ""})
        checked = {name: _read(name, kind, rules, values[name])
                   for name, (kind, rules) in declared.items() if name != "profile"}
        params = cls(profile=profile, **checked)
        params.check()
        return params

    @classmethod
    def from_namespace(cls, namespace: Mapping[str, Any]) -> Parameters:
        """The parameters from a notebook's namespace (``globals()``): every field found there."""
        return cls.resolve(**{name: namespace[name] for name in cls.rules() if name in namespace})

    def check(self) -> None:
        """Rules that involve several fields; raise SpecError. Override where needed."""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def table(cls, notebook_defaults: Mapping[str, Any] | None = None) -> list[dict]:
        """One row per parameter: name, type, default, each profile's value, range, unit, help."""
        rows = []
        for name, (kind, rules) in cls.rules().items():
            row = {"name": name, "type": _type_text(kind),
                   "default": cls.defaults().get(name)}
            if notebook_defaults is not None and name in notebook_defaults:
                row["notebook"] = notebook_defaults[name]
            for profile, values in cls.profiles.items():
                row[profile] = values.get(name, row["default"]) if name != "profile" else profile
            row.update(range=rules.range_text() if name != "profile"
                       else ", ".join(cls.profiles), unit=rules.unit, help=rules.help)
            rows.append(row)
        return rows


def _type_text(kind) -> str:
    if isinstance(kind, type):
        return kind.__name__
    return str(kind).replace("typing.", "")


def format_parameters(params_class: type[Parameters], notebook_defaults: Mapping[str, Any] | None,
                      harness_parameters: Iterable[str] = ()) -> str:
    """A readable table of every parameter: its value in the notebook (None: the profile
    decides), each profile's value, its range or choices and unit, and its help."""
    rows = params_class.table(notebook_defaults)
    profiles = list(params_class.profiles)
    head = ["name", *(["notebook"] if notebook_defaults is not None else []), *profiles,
            "range", "unit"]

    def show(value) -> str:
        if isinstance(value, tuple) and len(value) > 10:
            return f"{value[0]}..{value[-1]} ({len(value)} values)"
        if isinstance(value, tuple):
            return ",".join(map(str, value))
        return "-" if value is None else str(value)

    def show_notebook(value) -> str:
        return "(profile)" if value is None else show(value)

    table = [[row["name"], *([show_notebook(row.get("notebook"))] if notebook_defaults is not None else []),
              *(show(row[p]) for p in profiles), row["range"], row["unit"]] for row in rows]
    widths = [max(len(str(line[i])) for line in [head, *table]) for i in range(len(head))]
    lines = []
    for line, row in zip([head, *table], [None, *rows]):
        lines.append("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip())
        if row is not None:
            lines.append(" " * 4 + row["help"])
    extra = [name for name in harness_parameters
             if notebook_defaults is None or name in notebook_defaults]
    if extra:
        lines.append("set by the harness: " + ", ".join(extra)
                     + " (run_dir: the run folder; inventory: a YAML inventory of real machines)")
    return "\n".join(lines)
