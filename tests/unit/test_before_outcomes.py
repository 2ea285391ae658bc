"""Each claim judged again as registered before the changes made after outcomes were read
(harness.verdicts.before_outcomes), the records of what a change replaced in a registration file,
and the gain-scale margin ('change') the fifth S0 review asked for."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from harness.verdicts.before_outcomes import AS_TODAY, NOT_RECORDED, as_before, earlier_claims, rejudged, without_record
from harness.verdicts.claims import INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, Claim, Region, judge, table
from harness.verdicts.intervals import mean_estimate
from harness.verdicts.margins import Margin, MarginError
from harness.verdicts.pool_report import before_outcomes_block
from harness.verdicts.registration_file import RegistrationError, parse

from .reference_members import pooled_as_today

CLAIM = {"id": "s9.gain", "source": "paper", "claim": "gain", "paper": "+18..27%", "unit": "%",
         "quote": "q", "seed_line": "009:1", "quantity": "q", "regime": "r",
         "region": {"equivalent_to": [18, 27], "scale": "change"},
         "gates": [{"name": "uniprocessor"}]}


def change(date: str, after: bool | None, replaced: dict | None = None, claims=("s9.gain",)) -> dict:
    out = {"date": date, "what": f"w {date}", "why": "y", "claims": list(claims)}
    if after is not None:
        out["after_outcomes"] = after
    if replaced is not None:  # what it replaced of s9.gain
        out["replaced"] = {"s9.gain": replaced}
    return out


def registration(*changes: dict):
    return parse({"study": "s9", "design": {}, "claims": [CLAIM], "changes": list(changes)}, "s9.toml")


# -- the gain scale (item 1 of the fifth S0 review) -----------------------------------------------

@pytest.mark.parametrize("figure, bounds", [
    ((18.0, 27.0), (18 / 1.1, 27 * 1.1)),  # was 8.63..39.7 % on the ratio scale
    ((6.0, 16.0), (6 / 1.1, 16 * 1.1)),  # was 2.956..27.6 %
    ((25.0, 25.0), (25 / 1.1, 27.5)),
    ((-28.0, -28.0), (-30.8, -28 / 1.1)),  # a loss: its size widened, its sign kept
    ((-95.0, -95.0), (-100.0, -95 / 1.1)),  # never beyond the whole
])
def test_a_stated_change_is_widened_on_its_own_scale(figure, bounds):
    margin = Margin(figure, "change")
    assert margin.bounds() == pytest.approx(bounds)
    assert "read on its own scale" in margin.rule("%")
    assert Margin(figure, "gain").bounds() != pytest.approx(bounds)  # not the ratio scale's


@pytest.mark.parametrize("kwargs, words", [
    ({"figure": (-5.0, 5.0), "scale": "change"}, "includes no change"),
    ({"figure": (0.0, 0.0), "scale": "change"}, "includes no change"),
    ({"figure": (18.0, 27.0), "scale": "change", "direction": "above"}, "takes no direction"),
    ({"figure": (50.0, 50.0), "scale": "change", "limit": "at_most"}, "takes no direction"),
    ({"figure": (-120.0, -120.0), "scale": "change"}, "more than the whole"),
])
def test_a_change_scale_margin_it_cannot_widen_is_refused(kwargs, words):
    with pytest.raises(MarginError, match=words):
        Margin(**kwargs)


def test_a_convention_regions_why_is_in_its_rule_and_a_written_out_region_takes_none():
    claim = {**CLAIM, "region": {"equivalent_to": 0.5, "why": "the design gives one relay of two"}}
    region = parse({"study": "s9", "design": {}, "claims": [claim]}, "s9.toml").claims[0].region
    assert region.why.endswith("; why this reading: the design gives one relay of two")
    with pytest.raises(RegistrationError, match="only a region made by the convention takes it"):
        parse({"study": "s9", "design": {}, "claims": [
            {**CLAIM, "region": {"low": 1, "high": 2, "rule": "r", "why": "w"}}]}, "s9.toml")


# -- what a change replaced, and the claim as it stood before -------------------------------------

def test_the_earliest_change_after_outcomes_that_recorded_a_part_gives_it_and_the_rest_is_named():
    reg = registration(
        change("2026-11-01", False, {"region": {"low": 1, "high": 2, "rule": "before any data"}}),
        change("2026-11-02", True),  # after outcomes, recording nothing: a limit, named
        change("2026-11-03", True, {"region": {"low": 17, "high": 28, "rule": "printed digits"}}),
        change("2026-11-04", True, {"gates": []}),
        change("2026-11-05", True, {"region": {"equivalent_to": [18, 27], "scale": "gain",
                                               "direction": "above"}}),
    )
    before = as_before(reg, "s9.gain")
    assert (before.claim.region.low, before.claim.region.high) == (17, 28)  # not #1's: before data
    assert before.claim.gates == () and reg.claim("s9.gain").gates != ()
    assert before.region_from is reg.changes[2] and before.gates_from is reg.changes[3]
    assert before.unrecorded == (reg.changes[1],)
    how = before.how(reg)
    assert "region as registered before change #3 (2026-11-03) (17..28%)" in how
    assert "gates as registered before change #4 (2026-11-04) (none)" in how
    assert "whatever changes #2 (made after outcomes" in how
    assert as_before(registration(change("2026-11-02", True)), "s9.gain") is None
    assert earlier_claims(registration()) == {}


def test_a_change_that_also_replaced_what_no_record_restores_is_named_with_its_words():
    """The sixth S0 review: the column "as registered before outcomes" kept the sizes and validity
    rules of changes that recorded a region or gates but had changed more (#20: the region of
    'halved' recorded, its voluntary-only count not), and said nothing of it. A record's ``also``
    says in words what else the change replaced; the verdict keeps that part as today and names it,
    and a change recording only ``also`` is named with its words, not as one recording nothing."""
    also = "the sizes counted (was 1 B-1 MB, then only the paced ones), in the analysis's code"
    reg = registration(
        change("2026-11-02", True, {"also": also}),
        change("2026-11-03", True, {"region": {"low": 17, "high": 28, "rule": "printed digits"},
                                    "also": "its count: voluntary switches only (was all)"}),
        change("2026-11-04", True, {"gates": []}),
        change("2026-11-05", True),
    )
    before = as_before(reg, "s9.gain")
    assert (before.claim.region.low, before.claim.region.high) == (17, 28)
    assert before.unrecorded == (reg.changes[0], reg.changes[1], reg.changes[3])
    how = before.how(reg)
    assert f"#1: {also}" in how and "#2: its count: voluntary switches only (was all)" in how
    assert "whatever changes #4 (made after outcomes, naming it, recording nothing of it)" in how
    assert "#3" not in how.split("as today:")[1]  # a gates record with no also: wholly undone
    assert reg.changes[1].replaced["s9.gain"].to_dict()["also"].startswith("its count")
    assert "also" not in reg.changes[2].replaced["s9.gain"].to_dict()  # digests stay as they were
    cell, said = without_record(registration(change("2026-11-02", True, {"also": also})), "s9.gain")
    assert cell == NOT_RECORDED and f"in their words: #1: {also}" in said
    with pytest.raises(RegistrationError, match="also: empty"):
        registration(change("2026-11-02", True, {"also": "  "}))


def test_a_claim_no_record_can_rebuild_says_why_rather_than_a_blank_cell():
    """The third S4 review: the "before outcomes" columns were empty for every claim, with no word
    why (S4's changes made after outcomes record nothing they replaced)."""
    unrecorded = registration(change("2026-11-01", False), change("2026-11-02", True))
    cell, how = without_record(unrecorded, "s9.gain")
    assert cell == NOT_RECORDED
    assert "changes #2 (2026-11-02) name this claim" in how and "cannot be recomputed" in how
    design_wide = registration(change("2026-11-02", True, claims=()))
    cell, how = without_record(design_wide, "s9.gain")
    assert cell == NOT_RECORDED and "#1 (2026-11-02) changed the whole design" in how
    cell, how = without_record(registration(change("2026-11-02", False)), "s9.gain")
    assert cell == AS_TODAY and "as registered before any outcome" in how


def tallied(*cells: str) -> str:
    """The sentence under a pooled report's before-outcomes table, for claims whose ``before
    outcomes`` cells are ``cells`` (today's verdict reproduced, a recomputed one not reproduced)."""
    frame = pd.DataFrame({"claim_id": [f"s9.c{i}" for i in range(len(cells))], "outcome": REPRODUCED,
                          "ours": "1.0x", "region": "0.9..1.1x", "before outcomes": list(cells)})
    lines = before_outcomes_block(frame)
    assert lines[-1] == "" and lines[-3] == ""
    return lines[-2]


def test_a_pooled_report_with_no_verdict_recomputed_says_so_in_words():
    """A pool where no change made after outcomes recorded what it replaced (S4's today) read
    "0 of 0 recomputed read otherwise"; it says none was recomputed, and why each was not."""
    sentence = tallied(NOT_RECORDED, NOT_RECORDED, AS_TODAY)
    assert sentence == ("No verdict here is recomputed as registered before outcomes: 2 cannot be recomputed "
                        "(changes made after outcomes that record nothing they replaced); 1 no such change touched.")
    assert tallied(AS_TODAY) == "No verdict here is recomputed as registered before outcomes: 1 no such change touched."


def test_a_pooled_reports_before_outcomes_tally_leaves_out_what_counts_none():
    not_reproduced = f"{NOT_REPRODUCED}: 1.3x [1.2, 1.4] (n=3) against 0.95..1.05x"
    assert tallied(not_reproduced, NOT_RECORDED) == (
        "1 of 1 recomputed read otherwise as registered before outcomes; 1 cannot be recomputed (changes made "
        "after outcomes that record nothing they replaced).")
    assert tallied(not_reproduced, AS_TODAY) == \
        "1 of 1 recomputed read otherwise as registered before outcomes; 1 no such change touched."
    # a recomputed verdict that reads the same is counted, not dropped: "0 of 1" is a finding
    assert tallied(f"{REPRODUCED}: 1.0x [0.9, 1.1] (n=3) against 0.8..1.2x") == \
        "0 of 1 recomputed read otherwise as registered before outcomes."


def test_a_replaced_record_is_part_of_the_digest_and_is_refused_where_it_names_no_claim_of_the_change():
    plain = registration(change("2026-11-03", True))
    recorded = registration(change("2026-11-03", True, {"region": {"low": 17, "high": 28, "rule": "r"}}))
    assert plain.digest != recorded.digest
    assert recorded.to_dict()["changes"][0]["replaced"]["s9.gain"]["region"] == {
        "low": 17, "high": 28, "rule": "r"}
    assert "replaced" not in plain.to_dict()["changes"][0]  # every other digest stays as it was
    bad = change("2026-11-03", True, claims=())
    bad["replaced"] = {"s9.gain": {"gates": []}}
    with pytest.raises(RegistrationError, match="field replaced: 's9.gain' is not a claim"):
        registration(bad)
    with pytest.raises(RegistrationError, match="field gates"):
        registration(change("2026-11-03", True, {"gates": [{"name": "no_such_gate"}]}))
    with pytest.raises(RegistrationError, match="unknown key"):
        registration(change("2026-11-03", True, {"quantity": "q"}))
    with pytest.raises(RegistrationError, match="empty"):
        registration(change("2026-11-03", True, {}))


def test_a_runs_row_is_judged_again_against_the_earlier_region_from_its_own_estimate():
    today = registration().claim("s9.gain")
    estimate = mean_estimate([1.12, 1.14, 1.13, 1.15], "%", log=True).as_gain_pct()  # about +13.5 %
    old = Claim("s9.gain", "gain", "p", Region.by_margin(Margin((18.0, 27.0), "gain", "above"), "%"), "%")
    frame = table([judge(today, estimate), judge(today, None)])
    assert list(frame.outcome) == [NOT_REPRODUCED, NOT_TESTABLE]  # 16.36..29.7 %
    again = rejudged(frame, {"s9.gain": old})
    assert list(again.outcome) == [REPRODUCED, NOT_TESTABLE]  # 8.63..39.7 % admitted it
    assert again.region.iloc[0] == "8.628..39.7%" and again.region.iloc[1] == "8.628..39.7%"
    assert again.ours.iloc[0] == frame.ours.iloc[0] and math.isclose(again.value.iloc[0], frame.value.iloc[0])


# -- the fifth S0 reference pooled today, each claim beside its verdict as registered before ------

S0_FIFTH = "s0/20261129T144606Z-pool-46300f"


@pytest.fixture(scope="module")
def fifth(tmp_path_factory):
    _, out = pooled_as_today(S0_FIFTH, tmp_path_factory.mktemp("fifth"))
    return (out / "report.md").read_text(), pd.read_parquet(out / "claims.parquet").set_index("claim_id")


def test_the_fifth_s0_reference_shows_each_claims_verdict_as_registered_before_outcomes(fifth):
    """The fifth review: 16 of 16 paper verdicts rest on rules changed after outcomes were read. Each
    claim whose region or gates such a change replaced gets, recomputed from the members' data, its
    verdict under the region and gates it had before: the streaming bandwidth claims, not testable
    today for the relays-limit gate added after outcomes (change #16), were not reproduced before it
    (1.05x against <= 0.5x; +2.4 % against the printed-digit 17..28 %)."""
    text, frame = fifth
    before = frame["before outcomes"]
    # today (change #26, the seventh review): the relays' limit decides again, and the reason says
    # what the claim reads under the paper's stated testbed only, each run's and the pool's
    assert frame.loc["s0.bandwidth.stream.proxies_below_half", "outcome"] == NOT_TESTABLE
    reason = frame.loc["s0.bandwidth.stream.proxies_below_half", "reason"]
    assert "at_most failed" in reason and "the relay-limited condition the paper gives as the cause (000:105" in reason
    assert reason.endswith("; pooled, the relay-limited condition the paper gives as the cause (000:105 "
                           "'두 번의 중계를 거치기 때문에') could not be created here, and the paper states nothing "
                           "that limited its relays to create it by: under the paper's stated testbed only it "
                           "reads not reproduced: 1.05x [0.95, 1.17] (n=3) against <= 0.5x")
    assert ("| `s0.bandwidth.stream.proxies_below_half` | not testable here (under the paper's stated testbed "
            "only: not reproduced) | 1.05x [0.95, 1.17] (n=3) |") in text
    assert before["s0.bandwidth.stream.proxies_below_half"] == \
        "not reproduced: 1.05x [0.95, 1.17] (n=3) against <= 0.5x"
    assert before["s0.bandwidth.stream.gain_1k_32k"] == \
        "not reproduced: +2.4% [+1.5, +3.3] (n=3) against 17..28%"
    assert before["s0.latency.far_nat_vs_proxies_x"].startswith(f"{INCONCLUSIVE}: 0.97x")
    assert before["s0.latency.far_nat_vs_proxies_x"].endswith("against 0.95..1.05x")
    # 'halved' as registered before the one-sided change of 13:14Z, two-sided as today: inconclusive
    # (on all switches, voluntary + involuntary, since the change of 19:57Z: 0.45x [0.44, 0.47])
    assert frame.loc["s0.cost.switches_halved", "outcome"] == INCONCLUSIVE
    assert before["s0.cost.switches_halved"].startswith(f"{INCONCLUSIVE}: 0.45x")
    # its region as it stood before #20 recorded (the sixth review: the column kept #20's count
    # unsaid); the count today is the one before #20 again, and what no record restores is named
    assert before["s0.cost.switches_fewer"] == "reproduced: 0.45x [0.44, 0.47] (n=3) against <= 0.9091x"
    how = frame.loc["s0.cost.switches_fewer", "before outcomes: how"]
    assert "#19: the claim itself: registered by this change" in how
    assert "#20: its count: the relays' voluntary context switches only" in how
    latency = frame.loc["s0.latency.proxies_x", "before outcomes: how"]
    assert "#8: the sizes counted: only those this lab's shaper paces" in latency
    assert "#20: validity per point" in latency and "whatever changes" not in latency
    how = frame.loc["s0.bandwidth.stream.gain_1k_32k", "before outcomes: how"]
    assert "before change #11 (2026-11-29T00:36Z) (17..28%)" in how and "before change #15" in how
    assert "**Today's verdict beside the one registered before outcomes were read:**" in text
    assert ("| `s0.bandwidth.stream.gain_1k_32k` | not testable here: +2.4% [+1.5, +3.3] (n=3) against "
            "16.36..29.7% | not reproduced: +2.4% [+1.5, +3.3] (n=3) against 17..28% |") in text
    section = text.split("(`s0.latency.proxies_x`")[1].split("###")[0]
    assert "- **as registered before outcomes were read:** not testable here" in section
    assert "why not testable here:" in section  # a verdict that decides nothing says why


def test_the_fifth_s0_reference_today_misses_the_gains_the_ratio_scale_admitted(fifth):
    """Ping-pong's +13.3 % [+11.2, +15.4] and +4.4 % [+3.8, +4.9] lie below the paper's 18-27 % and
    6-16 %; the ratio scale's regions (8.63..39.7 %, 2.956..27.6 %) held them, today's do not."""
    _, frame = fifth
    assert frame.loc["s0.bandwidth.pingpong.gain_1k_32k", "region"] == "16.36..29.7%"
    assert frame.loc["s0.bandwidth.pingpong.gain_128k_1m", "region"] == "5.455..17.6%"
    for cid in ("s0.bandwidth.pingpong.gain_1k_32k", "s0.bandwidth.pingpong.gain_128k_1m"):
        high = frame.loc[cid, "high"]
        assert high < float(frame.loc[cid, "region"].split("..")[0]), cid


def test_claims_show_prints_what_each_change_replaced(capsys):
    from argparse import Namespace

    from harness.commands.claims import cmd_claims_show

    assert cmd_claims_show(Namespace(study="s0", json=False)) == 0
    out = capsys.readouterr().out
    assert "    replaced of s0.cost.switches_halved: region 0.4545..0.55x; also (not restorable, kept as today): " \
        "its count: the relays' voluntary context switches only" in out  # before 13:14Z
    assert "    replaced of s0.bandwidth.stream.gain_1k_32k: gates none\n" in out  # before 04:54Z
    assert "    replaced of s0.bandwidth.stream.gain_1k_32k: region 8.628..39.7%\n" in out  # before 16:36Z


def test_a_change_naming_a_claim_by_its_former_id_records_what_it_replaced_under_todays_id():
    """S4's change #5 (regions by the margin) names the CPU-limited claims as @cpu0.01, which #6
    renamed to @anchored: the third S4 review found no record of the regions #5 replaced. A record
    keyed by the claim's id of today is taken where the change names it by an earlier id, and the
    claim is rebuilt with the region the change recorded."""
    old = {"low": 17, "high": 28, "rule": "the paper's range to 1 % either way"}
    named_then = change("2026-11-02", True, claims=("s9.first",))
    named_then["replaced"] = {"s9.gain": {"region": old}}
    renames = [{**change("2026-11-03", True, claims=("s9.gain",)), "renamed": {"s9.first": "s9.gain"}}]
    reg = registration(named_then, *renames)
    before = as_before(reg, "s9.gain")
    assert (before.claim.region.low, before.claim.region.high) == (17, 28)
    assert before.region_from is reg.changes[0]
    stray = change("2026-11-02", True, claims=("s9.first",))
    stray["replaced"] = {"s9.other": {"region": old}}
    with pytest.raises(RegistrationError, match="field replaced: 's9.other' is not a claim"):
        registration(stray, *renames)
