"""Validation helpers shared by the studies' parameter dataclasses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict

from ..errors import SpecError


def int_list(name: str, value, low: int, high: int) -> tuple[int, ...]:
    """Accept 4, "1,2,4", "1-10", [1, 2] or (1, 2); check each is in [low, high]."""
    if isinstance(value, str):
        items: list[int] = []
        for part in value.replace(" ", "").split(","):
            if not part:
                continue
            try:
                if "-" in part:
                    a, b = (int(x) for x in part.split("-", 1))
                    items.extend(range(a, b + 1))
                else:
                    items.append(int(part))
            except ValueError:
                raise SpecError(f"parameter {name}={value!r} is not a list of integers",
                                "write e.g. 1,2,4 or 1-10") from None
    elif isinstance(value, int) and not isinstance(value, bool):
        items = [value]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise SpecError(f"parameter {name}={value!r} is not a list of integers")
    if not items:
        raise SpecError(f"parameter {name} is empty", "give at least one value")
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int):
            raise SpecError(f"parameter {name} has a non-integer value {item!r}")
        if not low <= item <= high:
            raise SpecError(f"parameter {name} has {item}, out of range",
                            f"use values from {low} to {high}")
    return tuple(items)


def number(name: str, value, low: float, high: float, *, integer: bool = False,
           allow_zero: bool = False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"parameter {name}={value!r} is not a number")
    if integer and int(value) != value:
        raise SpecError(f"parameter {name}={value!r} must be a whole number")
    if allow_zero and value == 0:
        return int(value) if integer else float(value)
    if not low <= value <= high:
        raise SpecError(f"parameter {name}={value} is out of range",
                        f"use {low:g}..{high:g}" + (" (or 0 to disable)" if allow_zero else ""))
    return int(value) if integer else float(value)


def check_known(given: dict, known: Iterable[str], what: str) -> None:
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise SpecError(f"unknown parameter(s) {', '.join(unknown)} for {what}",
                        f"known parameters: {', '.join(sorted(known))}")


def profile_values(params_class, given: dict, profiles: dict[str, dict],
                   what: str) -> tuple[str, dict]:
    """The chosen profile and every parameter's raw value: the dataclass defaults, then
    the profile's, then what was given -- where a given value is empty (None or "") the
    profile's stays. Unknown names and profiles are refused."""
    check_known(given, list(params_class.__dataclass_fields__), what)
    profile = given.get("profile") or "quick"
    if profile not in profiles:
        raise SpecError(f"unknown profile {profile!r}", f"use one of {sorted(profiles)}")
    values = {**asdict(params_class()), **profiles[profile], "profile": profile}
    values.update({k: v for k, v in given.items() if v not in (None, "")})
    return profile, values


def flag(name: str, value, allow_none: bool = False) -> bool | None:
    """A true/false parameter (and, if allowed, None: "let the study decide")."""
    if isinstance(value, bool) or (allow_none and value is None):
        return value
    raise SpecError(f"parameter {name}={value!r} must be true or false"
                    + (", or empty for the default" if allow_none else ""),
                    f"set {name} to true or false"
                    + (", or leave it empty for the default" if allow_none else ""))
