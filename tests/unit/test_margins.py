"""The equivalence-margin convention (harness.verdicts.margins) and its form in a registration file."""

from __future__ import annotations

import math

import pytest

from harness.verdicts.margins import FACTOR, Margin, MarginError
from harness.verdicts.registration_file import RegistrationError, parse


def _claim(region: dict, unit: str = "%") -> dict:
    return {"id": "s9.c", "source": "paper", "claim": "c", "paper": "p", "unit": unit, "quote": "q",
            "seed_line": "009:1", "quantity": "q", "regime": "r", "region": region}


def _region(region: dict, unit: str = "%"):
    return parse({"study": "s9", "design": {}, "claims": [_claim(region, unit)]}, "s9.toml").claims[0].region


def test_a_stated_gain_is_read_on_the_ratio_scale_and_never_reproduced_by_no_gain():
    low, high = Margin((5.0, 5.0), "gain", "above").bounds()
    assert low == pytest.approx((math.sqrt(1.05) - 1) * 100)  # 1.05 / 1.1 is a loss: half the gain at least
    assert high == pytest.approx((1.05 * FACTOR - 1) * 100)
    assert "at least half the stated gain" in Margin((5.0, 5.0), "gain", "above").rule("%")
    assert Margin((5.0, 5.0), "gain", "either").bounds()[0] == pytest.approx((1.05 / FACTOR - 1) * 100)
    # a large stated loss keeps the margin's bound (half of it would be wider)
    assert Margin((-28.0, -28.0), "gain", "below").bounds()[1] == pytest.approx((0.72 * FACTOR - 1) * 100)
    assert "half" not in Margin((-28.0, -28.0), "gain", "below").rule("%")


def test_a_claim_and_its_inverse_get_the_same_region():
    lower = Margin((-28.0, -28.0), "gain").bounds()  # "28 % lower"
    higher = Margin((1 / 0.72, 1 / 0.72), "ratio").bounds()  # the same, as "1.39x higher"
    assert 1 + lower[0] / 100 == pytest.approx(1 / higher[1])
    assert 1 + lower[1] / 100 == pytest.approx(1 / higher[0])


def test_a_range_widens_each_end_and_a_cap_is_named_in_the_rule():
    assert Margin((6.0, 16.0), "gain").bounds() == pytest.approx(((1.06 / 1.1 - 1) * 100, (1.16 * 1.1 - 1) * 100))
    margin = Margin((460.0, 460.0), cap_high=487.77, cap_why="the wire carries 478.2 Mbit/s")
    assert margin.bounds() == pytest.approx((460 / 1.1, 487.77))
    assert "the wire carries 478.2" in margin.rule("Mbit/s")
    assert "the wire" not in Margin((100.0, 100.0), cap_high=487.77, cap_why="the wire").rule()  # cap not reached


def test_a_named_difference_lies_beyond_the_margin():
    assert Margin((1.0, 1.0), direction="below", differs=True).bounds() == pytest.approx((-math.inf, 1 / 1.1))
    assert Margin((1.0, 1.0), direction="above", differs=True).bounds() == pytest.approx((1.1, math.inf))


@pytest.mark.parametrize("kwargs, words", [
    ({"figure": (1.0, 1.0), "differs": True}, "needs one value and a direction"),
    ({"figure": (2.0, 1.0)}, "runs backwards"),
    ({"figure": (-120.0, -120.0), "scale": "gain"}, "not on a ratio scale"),
    ({"figure": (1.0, 1.0), "cap_high": 2.0}, "needs cap_why"),
    ({"figure": (1.0, 1.0), "scale": "log"}, "scale 'log'"),
])
def test_a_margin_the_convention_does_not_allow_is_refused(kwargs, words):
    with pytest.raises(MarginError, match=words):
        Margin(**kwargs)


def test_caps_that_leave_nothing_are_refused():
    with pytest.raises(MarginError, match="beyond what the physics allows"):
        Margin((20.0, 20.0), "gain", cap_high=5.8, cap_why="the headers' share").bounds()


def test_a_registration_file_region_by_the_convention_is_computed_and_digested():
    region = _region({"equivalent_to": 25, "scale": "gain", "direction": "above"})
    assert (region.low, region.high) == pytest.approx(((1.25 / 1.1 - 1) * 100, 37.5))
    assert "equivalent to 25% within a factor 1.1" in region.why
    reg = parse({"study": "s9", "design": {}, "claims": [_claim({"equivalent_to": 25, "scale": "gain"})]}, "w")
    other = parse({"study": "s9", "design": {}, "claims": [_claim({"equivalent_to": 26, "scale": "gain"})]}, "w")
    assert reg.claims[0].registration()["region"]["margin"]["equivalent_to"] == 25
    assert reg.digest != other.digest


@pytest.mark.parametrize("region, words", [
    ({"equivalent_to": 5, "low": 4, "rule": "r"}, "field region.low: a region made by the convention"),
    ({"equivalent_to": 5, "differs_from": 1}, "both equivalent_to and differs_from"),
    ({"equivalent_to": [1, 2, 3]}, "is not a figure"),
    ({"low": 1, "high": 2, "rule": "r", "direction": "above"}, "field region.direction: only a region made"),
    ({"equivalent_to": 20, "scale": "gain", "cap_high": 3, "cap_why": "w"}, "beyond what the physics allows"),
    ({"equivalent_to": "5"}, "must be a number or an array of two numbers"),
])
def test_a_region_the_schema_does_not_allow_is_one_error_naming_the_field(region, words):
    with pytest.raises(RegistrationError, match="s9.c") as info:
        _region(region)
    assert words in str(info.value)


def test_a_benefit_the_paper_states_as_a_bound_is_one_sided():
    """000:28 'can reduce the cost of context switching to half' (the fourth S0 review): at most
    0.5 within the margin, <= 0.55; doing better (0.45) is not a miss. 'At least 2x' likewise."""
    half = Margin((0.5, 0.5), limit="at_most")
    assert half.bounds() == (-math.inf, pytest.approx(0.55))
    assert "at most 0.5x, within a factor 1.1" in half.rule("x") and "<= 0.55x" in half.rule("x")
    assert half.registration()["at_most"] == 0.5 and "equivalent_to" not in half.registration()
    twice = Margin((2.0, 2.0), limit="at_least")
    assert twice.bounds() == (pytest.approx(2 / FACTOR), math.inf)
    gain = Margin((25.0, 25.0), scale="gain", limit="at_least")  # at least +25 %: >= +13.6 %
    assert gain.bounds()[0] == pytest.approx((1.25 / FACTOR - 1) * 100)
    with pytest.raises(MarginError, match="one value and no direction"):
        Margin((0.5, 0.5), direction="below", limit="at_most")
    with pytest.raises(MarginError, match="limit 'most'"):
        Margin((0.5, 0.5), limit="most")
    region = _region({"at_most": 0.5}, "x")
    assert (region.low, region.high) == (-math.inf, pytest.approx(0.55)) and region.margin.limit == "at_most"
    with pytest.raises(RegistrationError, match="both equivalent_to and at_most"):
        _region({"at_most": 0.5, "equivalent_to": 0.5})
    reg = parse({"study": "s9", "design": {}, "claims": [_claim({"at_most": 0.5}, "x")]}, "w")
    assert reg.claims[0].registration()["region"]["margin"]["at_most"] == 0.5
