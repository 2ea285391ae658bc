"""Parameters declared once: field metadata carries the rules, one resolve() reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import pytest

from harness.errors import SpecError
from harness.studies.parameters import Parameters, format_parameters, int_list, param


def sizes(_name, value):
    if value == "bad":
        raise SpecError("sizes: bad", "give sizes as 1,4")
    items = value.split(",") if isinstance(value, str) else value
    return tuple(sorted({int(v) for v in items}))


@dataclass(frozen=True)
class Demo(Parameters):
    profiles: ClassVar[dict] = {"quick": {"rounds": 10}, "paper": {"rounds": 1000, "fanin": (1, 48)}}
    rounds: int = param(10, "rounds per point", low=1, high=100_000)
    rate_mbit: float = param(100.0, "link rate", unit="Mbit/s", low=1, high=10_000,
                             zero="unshaped")
    fanin: tuple[int, ...] = param((8, 48), "fan-in values", low=1, high=48,
                                   above="the lab holds")
    protocols: tuple[str, ...] = param(("tcp", "tipc"), "protocols", choices=("tcp", "sctp", "tipc"))
    bench: bool = param(True, "also run the benchmark")
    own_kernel: bool | None = param(None, "a second VM; empty: the study decides")
    sizes: tuple[int, ...] = param((1,), "sizes", parse=sizes)
    mode: str = param("fast", "how", choices=("fast", "slow"))
    mtu: int = param(1500, "MTU", choices=(1500, 9000))

    def check(self) -> None:
        if self.mode == "slow" and self.rounds > 500:
            raise SpecError("slow mode with more than 500 rounds takes days", "use fewer rounds")


def test_defaults_then_profile_then_given_and_empty_keeps_the_profile():
    assert Demo.resolve().rounds == 10 and Demo.resolve().fanin == (8, 48)
    paper = Demo.resolve(profile="paper")
    assert paper.rounds == 1000 and paper.fanin == (1, 48) and paper.profile == "paper"
    assert Demo.resolve(profile="paper", rounds=None, fanin="").rounds == 1000
    assert Demo.resolve(profile="paper", rounds=5).rounds == 5


def test_each_kind_of_value_is_read_by_its_type():
    p = Demo.resolve(rounds=3, rate_mbit=0, fanin="1-3,48", protocols="tcp, sctp", bench=False,
                     own_kernel=True, sizes="4,1,4", mode="slow")
    assert (p.rounds, p.rate_mbit, p.fanin, p.protocols) == (3, 0.0, (1, 2, 3, 48), ("tcp", "sctp"))
    assert (p.bench, p.own_kernel, p.sizes, p.mode) == (False, True, (1, 4), "slow")
    assert isinstance(p.rounds, int) and isinstance(p.rate_mbit, float)
    assert Demo.resolve(own_kernel=None).own_kernel is None
    assert Demo.resolve(mtu=9000).mtu == 9000


@pytest.mark.parametrize("given, message", [
    ({"rounds": 0}, r"rounds=0 is out of range"),
    ({"rounds": 2.5}, "whole number"),
    ({"rounds": "ten"}, "is not a number"),
    ({"rounds": True}, "is not a number"),
    ({"rate_mbit": 0.5}, r"out of range"),
    ({"fanin": "8,49"}, "more than the lab holds"),
    ({"fanin": "x"}, "not a list of integers"),
    ({"protocols": "tcp,udp"}, "unknown value.*udp"),
    ({"bench": "yes"}, "true or false"),
    ({"own_kernel": "maybe"}, "true or false, or empty"),
    ({"sizes": "bad"}, "sizes: bad"),
    ({"mode": "medium"}, "not one of the choices"),
    ({"mtu": 4000}, "mtu=4000 is not one of the choices"),
    ({"mode": "slow", "rounds": 600}, "takes days"),
    ({"nope": 1}, "unknown parameter.*nope"),
    ({"profile": "huge"}, "unknown profile"),
])
def test_bad_values_are_refused_with_the_rule_they_break(given, message):
    with pytest.raises(SpecError, match=message) as info:
        Demo.resolve(**given)
    assert info.value.hint, "every refusal says how to fix it"


def test_range_hint_names_the_range_and_what_zero_means():
    with pytest.raises(SpecError) as info:
        Demo.resolve(rate_mbit=20_000)
    assert info.value.hint == "use 1..10000 (or 0: unshaped)"


def test_from_namespace_takes_every_field_and_ignores_the_rest():
    namespace = {"rounds": 7, "bench": False, "run_dir": "/x", "pd": object(), "profile": "quick"}
    p = Demo.from_namespace(namespace)
    assert p.rounds == 7 and p.bench is False and p.fanin == (8, 48)


def test_a_field_without_rules_is_a_programming_error():
    @dataclass(frozen=True)
    class Undeclared(Parameters):
        rounds: int = field(default=1)

    with pytest.raises(TypeError, match="Undeclared.rounds is not declared with param"):
        Undeclared.resolve()


def test_the_parameter_table_shows_profiles_ranges_units_and_help():
    text = format_parameters(Demo, {"rounds": None, "rate_mbit": 100.0, "run_dir": ""}, ["run_dir"])
    lines = text.splitlines()
    rounds = next(line for line in lines if line.startswith("rounds "))
    assert "(profile)" in rounds and "10" in rounds and "1000" in rounds and "1..100000" in rounds
    assert lines[lines.index(rounds) + 1].strip() == "rounds per point"
    rate = next(line for line in lines if line.startswith("rate_mbit "))
    assert "0: unshaped" in rate and "Mbit/s" in rate
    assert "one of tcp, sctp, tipc" in text
    assert lines[-1].startswith("set by the harness: run_dir")


def test_stream_lists_accept_ranges_and_refuse_nonsense():
    assert int_list("streams", "1-3,10", 1, 128) == (1, 2, 3, 10)
    assert int_list("streams", 4, 1, 128) == (4,)
    for bad in ("0", "1,x", "", [1, 200], True):
        with pytest.raises(SpecError):
            int_list("streams", bad, 1, 128)
