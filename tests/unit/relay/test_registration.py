"""The relay's targets as data (harness/relay/registration.toml, issue 33 item 1): the archived
benchmark judges as it did when they were Python, the file is what is judged, the design is
what relay_bench.py runs, and `harness claims show relay` / `claims power` read it."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from harness.errors import SpecError
from harness.relay import targets
from harness.verdicts.registration_file import RegistrationError

ROOT = Path(__file__).resolve().parents[3]

#: data/benchmarks/relay.json (srd 1.3, started 2026-11-29T08:30:39Z; the srd 1.2 benchmark of
#: 01:14:23Z is kept beside it as relay-20261129T011423Z-srd12.json) as its own "targets" rows
#: archived them when it was measured: claim, region, estimate [interval], n, outcome, runs
#: more needed. The file is archived (never replaced
#: without --replace); if it is re-measured, take these from the new file's own "targets".
ARCHIVED_STARTED = "2026-11-29T08:30:39Z"
EXPECTED = [
    ('relay.target.srd_vs_forward', '>= 0.9x', 0.8237133031, 0.8058735839,
     0.8419479423, 5, 'not met', None),
    ('relay.target.srd_retransmits', '<= 0 segments', 5186.0, -895.5994083408,
     11267.5994083408, 5, 'inconclusive', 6),
    ('relay.target.srd_added_half_rtt', '<= 10 us', 7.8262, -3.8060238051,
     19.4584238051, 5, 'inconclusive', 72),
    ('relay.target.srd2_vs_forward', '>= 0.9x', 0.6364100188, 0.5034031978,
     0.8045592754, 5, 'not met', None),
    ('relay.target.srd2_retransmits', '<= 0 segments', 2897.8, 1060.771563619,
     4734.828436381, 5, 'not met', None),
    ('relay.target.srd2_added_half_rtt', '<= 10 us', 13.1414, -0.2063676377,
     26.4891676377, 5, 'inconclusive', 45),
    ('s0.target.srd_vs_fastest_peer_one', '>= 1x', 1.0288201845, 0.8781074787,
     1.2054002475, 5, 'inconclusive', 78),
    ('s0.target.srd_vs_fastest_peer_two', '>= 1x', 0.9956589337, 0.7755266791,
     1.2782754468, 5, 'inconclusive', 8220),
    ('s0.target.srd_cpu_vs_cheapest_peer_one', '<= 1x', 0.8121389523, 0.5987007088,
     1.1016684432, 5, 'inconclusive', 8),
    ('s0.target.srd_cpu_vs_cheapest_peer_two', '<= 1x', 0.8754243909, 0.7881005928,
     0.9724239155, 5, 'met', None),
]
#: the words of a row: each must read as the benchmark's own table read when it was measured
TEXT = ("claim_id", "source", "claim", "paper", "region", "region_why", "ours", "unit", "units",
        "interval", "outcome", "reason", "note", "quantity")


@pytest.fixture()
def archived() -> dict:
    if not targets.ARCHIVED.exists():
        pytest.skip("no archived relay benchmark in this checkout")
    report = targets.load(targets.ARCHIVED)
    assert report["started"] == ARCHIVED_STARTED, (
        "data/benchmarks/relay.json was re-measured: take EXPECTED from its own 'targets' rows")
    return report


def test_the_archived_benchmark_judges_exactly_as_before_the_move(archived):
    frame = targets.targets_table(archived)
    got = [(r.claim_id, r.region, r.value, r.low, r.high, r.n, r.outcome,
            None if r.more_needed is None or r.more_needed != r.more_needed else int(r.more_needed))
           for r in frame.astype(object).where(frame.notna(), None).itertuples()]
    assert [g[0] for g in got] == [e[0] for e in EXPECTED]
    for row, want in zip(got, EXPECTED, strict=True):
        assert row[1] == want[1] and row[5:] == want[5:], row[0]
        assert row[2:5] == pytest.approx(want[2:5], rel=1e-9), row[0]  # archived to 10 digits
    # and every word of every row is the one the benchmark's own table archived
    rows = frame.to_dict("records")
    for mine, theirs in zip(rows, archived["targets"], strict=True):
        assert {k: mine[k] for k in TEXT} == {k: theirs[k] for k in TEXT}


def test_the_targets_registered_are_those_the_archived_benchmark_registered(archived):
    """The move changed no id, text, quantity, bound or rule: the benchmark archives the same
    registration it archived before measuring (its ``targets_registered``)."""
    assert targets.registration() == archived["targets_registered"]


def edited(tmp_path: Path, monkeypatch, old: str, new: str) -> Path:
    path = tmp_path / "registration.toml"
    text = targets.REGISTRATION.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1))
    monkeypatch.setattr(targets, "REGISTRATION", path)
    return path


def test_bounds_and_texts_are_read_from_the_file(archived, tmp_path, monkeypatch):
    """No bound or claim text is left in Python: an edit of the file is what is judged."""
    before = {v.claim.id: v for v in targets.verdicts(archived)}["relay.target.srd_vs_forward"]
    assert before.outcome == "not met"  # 0.82x [0.81, 0.84] (srd 1.3, 08:30Z)
    edited(tmp_path, monkeypatch, 'claim = "one srd: throughput >= 0.9x kernel forwarding"\n'
           'paper = "-"\nunit = "x"\nquantity = "iperf3 throughput srd / forward, paired per '
           'benchmark run (benchmarks/relay_bench.py, unshaped veth line)"\n[claims.region]\n'
           'low = 0.9',
           'claim = "one srd: throughput >= 0.3x kernel forwarding"\npaper = "-"\nunit = "x"\n'
           'quantity = "iperf3 throughput srd / forward"\n[claims.region]\nlow = 0.3')
    after = {v.claim.id: v for v in targets.verdicts(archived)}["relay.target.srd_vs_forward"]
    assert after.claim.text == "one srd: throughput >= 0.3x kernel forwarding"
    assert after.claim.region.text("x") == ">= 0.3x" and after.outcome == "met"
    assert after.estimate.value == pytest.approx(before.estimate.value)  # same runs, same sample
    assert targets.registration()[0]["region"]["low"] == 0.3


@pytest.mark.parametrize("old, new, fragment", [
    ('id = "relay.target.srd2_added_half_rtt"', 'id = "relay.target.srd3_added_half_rtt"',
     "relay.target.srd3_added_half_rtt"),
    ('srd_vs_forward"\nsource = "target"', 'srd_vs_forward"\nsource = "gossip"', "is not a source"),
    ("low = 0.9", "low = 0.9\nhigh = 0.5", "low 0.9 is above high 0.5"),
])
def test_a_file_with_other_targets_or_against_the_schema_is_refused_before_judging(
        tmp_path, monkeypatch, old, new, fragment):
    path = edited(tmp_path, monkeypatch, old, new)
    with pytest.raises(RegistrationError, match=fragment) as err:
        targets.verdicts({"results": []})
    assert str(path) in str(err.value) and err.value.hint


def relay_bench():
    spec = importlib.util.spec_from_file_location("relay_bench", ROOT / "benchmarks" / "relay_bench.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("relay_bench", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_design_is_what_relay_bench_runs_by_default():
    bench = relay_bench()
    design = targets.registered().design
    defaults = bench.arg_parser().parse_args([])
    assert tuple(design["paths"]) == bench.paths_of(bench.KINDS)
    assert set(design["paths"]) == set(bench.PATHS)
    assert design["repetitions"]["default"] == defaults.runs
    assert design["iperf_seconds"] == defaults.duration
    assert design["pingpong_iters"] == defaults.iters
    assert tuple(design["pingpong_sizes"]) == bench.SIZES
    assert [c.date for c in targets.registered().changes][0].startswith("2026-11-29T")


def test_claims_show_relay_prints_the_file_and_an_unknown_name_says_both_kinds(capsys):
    from harness.commands.claims import cmd_claims_history, cmd_claims_show

    assert cmd_claims_show(Namespace(study="relay", json=False)) == 0
    out = capsys.readouterr().out
    assert out.startswith("relay: ") and targets.registered().digest in out
    assert "[target] relay.target.srd_vs_forward: one srd: throughput >= 0.9x kernel forwarding" in out
    assert "region: <= 10 us -- issue 27" in out and "repetitions" in out
    assert "changed 2026-11-29T" in out
    assert cmd_claims_show(Namespace(study="relay", json=True)) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["digest"] == targets.registered().digest
    assert [c["id"] for c in shown["claims"]] == [c["id"] for c in targets.registration()[:6]]
    with pytest.raises(SpecError, match="unknown study 'nosuch'") as err:
        cmd_claims_show(Namespace(study="nosuch", json=False))
    assert "relay" in err.value.hint and "s0" in err.value.hint
    with pytest.raises(SpecError, match="not a study's") as err:
        cmd_claims_history(Namespace(study="relay", verbose=False))
    assert "claims show relay" in err.value.hint


def s0_run_with_benchmark(tmp_path: Path) -> Path:
    """A copy of S0's committed reference: its claims table shows the relay's targets, its
    registration.json holds S0's claims only, raw/ the benchmark it showed."""
    from harness.archive.reference import reference_root

    found = sorted(reference_root().glob("s0/*/raw/" + targets.RUN_FILE))
    if not found:
        pytest.skip("no S0 reference with an archived relay benchmark in this checkout")
    ref = found[0].parents[1]
    run = tmp_path / "s0" / ref.name
    (run / "raw").mkdir(parents=True)
    for name in ("run.json", "claims.csv", "registration.json"):
        shutil.copy(ref / name, run / name)
    shutil.copy(found[0], run / "raw" / targets.RUN_FILE)
    return run


def test_power_plans_the_relay_rows_under_the_registration_their_benchmark_archived(tmp_path):
    from harness.verdicts.power import run_power

    run = s0_run_with_benchmark(tmp_path)
    beside = targets.registered_in_run(run)
    assert set(beside) >= {c.id for c in targets.registered().claims}
    plans = {p.claim_id: p for p in run_power(run, beside=beside)}
    relay = [p for cid, p in plans.items() if cid.startswith("relay.target.")]
    assert len(relay) == 6
    for plan in relay:
        assert "not in the run's registration" not in plan.why, plan.claim_id
        assert plan.spread is not None and math.isfinite(plan.spread)
    # the study's own registration still decides its own rows
    own = {p.claim_id: p for p in run_power(run)}
    assert all(own[cid] == plans[cid] for cid in own if not cid.startswith("relay."))
    assert targets.registered_in_run(tmp_path / "elsewhere") == {}


def test_claims_power_shows_the_relay_rows_of_a_run_planned(tmp_path, capsys):
    from harness.commands.claims import cmd_claims_power

    run = s0_run_with_benchmark(tmp_path)
    for today in (False, True):
        assert cmd_claims_power(Namespace(run=str(run), study=[], today=today)) == 0
        lines = [line for line in capsys.readouterr().out.splitlines() if "relay.target." in line]
        assert len(lines) == 6
        assert not any("not in the run's registration" in line for line in lines)
