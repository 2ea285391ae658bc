"""The relay's targets (harness.relay.targets) judged on relay_bench reports."""

from __future__ import annotations

import json
import math

import pytest

from harness.errors import SpecError
from harness.relay import targets
from harness.verdicts.claims import INCONCLUSIVE, MET, NOT_MET, NOT_TESTABLE, TARGET


def result(run: int, path: str, gbps: float, retr: int, half_us: float) -> dict:
    return {"path": path, "run": run, "throughput_gbps": gbps, "retransmits": retr,
            "pingpong": {"median_us": half_us}}


def report(rows: list[dict]) -> dict:
    return {"benchmark": "relay_bench", "started": "2026-11-27T03:00:00Z", "commit": "abc",
            "machine": {"cpus": 2, "loadavg_at_start": [7.0, 0, 0],
                        "loadavg_at_end": [9.0, 0, 0]},
            "config": {"runs": 3}, "results": rows}


def runs(paths: dict[str, tuple[list[float], list[int], list[float]]]) -> list[dict]:
    rows = []
    for path, (gbps, retr, half) in paths.items():
        for i, (g, r, h) in enumerate(zip(gbps, retr, half, strict=True), start=1):
            rows.append(result(i, path, g, r, h))
    return rows


def outcomes(rep: dict) -> dict[str, tuple[str, float]]:
    return {v.claim.id.split(".")[-1]: (v.outcome, v.estimate.value if v.estimate else math.nan)
            for v in targets.verdicts(rep)}


def test_every_target_is_ours_and_registered_with_its_quantity():
    reg = targets.registration()
    assert {r["source"] for r in reg} == {TARGET}
    assert all(r["quantity"] and r["region"]["rule"] for r in reg)
    assert len({r["id"] for r in reg}) == len(reg) == len(targets.claims()) + len(targets.PEER_TARGETS)


def test_paired_ratios_differences_and_per_relay_latency():
    rep = report(runs({
        "forward": ([10.0, 5.0, 8.0], [5, 9, 2], [5.0, 6.0, 5.5]),
        "srd": ([9.6, 4.8, 7.7], [1, 2, 0], [9.0, 10.0, 9.5]),        # 0.96x, 4 us
        "socat": ([6.0, 3.0, 5.0], [30, 40, 20], [13.0, 14.0, 13.5]),
        "srd2": ([6.0, 3.1, 5.0], [50, 60, 70], [45.0, 46.0, 45.5]),  # 0.62x, 20 us per relay
        "socat2": ([5.0, 2.5, 4.0], [10, 12, 11], [20.0, 21.0, 20.5]),
    }))
    got = outcomes(rep)
    assert got["srd_vs_forward"][0] == MET
    assert got["srd_vs_forward"][1] == pytest.approx((0.96 * 0.96 * 0.9625) ** (1 / 3), rel=1e-6)
    assert got["srd_retransmits"] == (MET, pytest.approx(-29.0))
    assert got["srd_added_half_rtt"] == (MET, pytest.approx(4.0))
    assert got["srd2_vs_forward"][0] == NOT_MET
    assert got["srd2_retransmits"] == (NOT_MET, pytest.approx(49.0))
    assert got["srd2_added_half_rtt"] == (NOT_MET, pytest.approx(20.0))


def test_a_path_the_benchmark_lacks_makes_its_targets_not_testable():
    rep = report(runs({"forward": ([10.0, 9.0], [0, 0], [5.0, 5.0]),
                       "srd": ([9.0, 9.5], [0, 1], [9.0, 8.0])}))
    got = outcomes(rep)
    assert got["srd2_vs_forward"][0] == got["srd_retransmits"][0] == NOT_TESTABLE
    assert got["srd_vs_forward"][0] in (MET, NOT_MET, INCONCLUSIVE)


def test_a_failed_measurement_is_left_out_not_counted_as_zero():
    rows = runs({"forward": ([10.0, 10.0, 10.0], [0, 0, 0], [5.0, 5.0, 5.0]),
                 "srd": ([9.5, 9.6, 9.4], [0, 0, 0], [8.0, 8.0, 8.0])})
    rows[3]["throughput_gbps"] = None  # srd's first run: iperf3 failed
    got = targets.verdicts(report(rows))
    ratio = next(v for v in got if v.claim.id.endswith("srd_vs_forward"))
    assert ratio.estimate.n == 2


def test_the_table_is_the_claims_table_with_the_benchmark_named(tmp_path):
    rep = report(runs({"forward": ([10.0, 9.0], [0, 0], [5.0, 5.0]),
                       "srd": ([9.0, 9.5], [0, 1], [9.0, 8.0])}))
    frame = targets.targets_table(rep)
    assert list(frame.source.unique()) == [TARGET]
    assert frame.note.str.contains("2026-11-27T03:00:00Z").all()
    assert frame.note.str.contains("load 7.0 -> 9.0").all()


def test_a_run_shows_the_benchmark_it_archived_and_none_without(tmp_path):
    class Session:
        def raw(self, name: str, content: str):
            (tmp_path / "raw").mkdir(exist_ok=True)
            (tmp_path / "raw" / name).write_text(content)

    assert targets.table_of_run(tmp_path) is None
    bench = tmp_path / "relay.json"
    assert not targets.archive_into(Session(), bench)  # no benchmark: nothing archived
    bench.write_text(json.dumps(report(runs({"forward": ([10.0], [0], [5.0])}))))
    assert targets.archive_into(Session(), bench)
    frame = targets.table_of_run(tmp_path)
    assert len(frame) == len(targets.claims()) + len(targets.PEER_TARGETS)


@pytest.mark.parametrize("content, fragment", [
    (None, "no relay benchmark"),
    ("{not json", "not a readable relay benchmark"),
    (json.dumps({"benchmark": "lab_bench", "results": []}), "not a relay_bench report"),
])
def test_a_file_that_is_no_relay_benchmark_is_refused_with_the_command(tmp_path, content,
                                                                        fragment):
    path = tmp_path / "relay.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SpecError, match=fragment) as err:
        targets.load(path)
    assert "relay_bench.py" in err.value.hint


def test_s0_shows_the_benchmark_its_run_archived_as_target_rows_apart(tmp_path):
    """S0's claims table: a run folder without the copy gives what it archived but the
    relay's target rows (the reference archived its copy: its table has them); with the
    copy, the relay's targets follow as TARGET rows, after the paper's claims and S0's own."""
    import shutil

    import pandas as pd

    from harness.archive.reference import reference_root
    from harness.relay.targets import ARCHIVED
    from harness.studies.s0.study import S0

    if not ARCHIVED.exists():
        pytest.skip("no archived relay benchmark in this checkout")
    run = next(iter(sorted(reference_root().glob("s0/*/run.json")))).parent
    keep = ("run.json", "results.parquet", "bench.parquet", "far.parquet", "claims.parquet")
    for name in keep:
        shutil.copy(run / name, tmp_path / name)
    study = S0()
    before = study.claims(study.load(tmp_path))
    archived = pd.read_parquet(run / "claims.parquet")
    relay_ids = {c.id for c in targets.claims().values()}
    # claims registered after the reference was made are judged too (not testable on its data)
    since = set(before.claim_id) - set(archived.claim_id)
    assert since <= {c.id for c in study.registration().claims}
    assert [c for c in before.claim_id if c not in since] == [c for c in archived.claim_id
                                                              if c not in relay_ids]
    (tmp_path / "raw").mkdir()
    shutil.copy(ARCHIVED, tmp_path / "raw" / targets.RUN_FILE)
    after = study.claims(study.load(tmp_path))
    added = after.iloc[len(before):]
    assert sorted(added.claim_id) == sorted([c.id for c in targets.claims().values()]
                                            + list(targets.PEER_TARGETS.values()))
    assert set(added.source) == {TARGET}
    assert after.iloc[:len(before)].claim_id.tolist() == before.claim_id.tolist()


def test_the_benchmark_refuses_to_replace_its_output_before_measuring(tmp_path):
    """An archived benchmark is never overwritten by accident: one error, nothing measured."""
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[3] / "benchmarks" / "relay_bench.py"
    out = tmp_path / "relay.json"
    out.write_text("archived")
    done = subprocess.run([sys.executable, str(bench), "--out", str(out)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "--replace" in done.stderr and "exists" in done.stderr
    assert out.read_text() == "archived"


def peer_rows(paths: dict[str, list[tuple[float, float]]]) -> list[dict]:
    """path -> [(Gbit/s, relay CPU-s per GB) per run]."""
    return [{"path": path, "run": run, "throughput_gbps": g, "relay_cpu_s_per_gb": c}
            for path, values in paths.items() for run, (g, c) in enumerate(values, start=1)]


def test_the_fastest_peer_is_the_best_on_average_not_in_one_run():
    """nginx has the single best run, haproxy the higher geometric mean: haproxy is the yardstick."""
    frame = targets.per_run(report(peer_rows({
        "haproxy": [(3.0, 0.4), (3.0, 0.4), (3.0, 0.4)],
        "nginx": [(6.0, 0.2), (1.0, 0.9), (1.0, 0.9)],
        "srd": [(3.0, 0.3)] * 3})), "throughput_gbps")
    assert targets.best_peer(frame, 1) == "haproxy"
    assert targets.best_peer(frame, 1, min) == "nginx"
    assert targets.best_peer(frame, 2) is None  # no two-relay peer measured


def test_srd_is_judged_against_the_fastest_and_the_cheapest_peer_paired_per_run():
    rep = report(peer_rows({
        "haproxy": [(3.0, 0.40), (2.0, 0.40), (4.0, 0.40)],
        "gosplice": [(2.0, 0.20), (1.5, 0.22), (2.5, 0.18)],
        "srd": [(3.3, 0.30), (2.2, 0.30), (4.4, 0.30)],     # 1.1x haproxy every run
        "haproxy2": [(2.0, 0.8)] * 3,
        "srd2": [(1.0, 0.5)] * 3}))                        # 0.5x haproxy2 every run
    got = {v.claim.id: v for v in targets.peer_verdicts(rep)}
    one = got["s0.target.srd_vs_fastest_peer_one"]
    assert one.outcome == MET and one.estimate.value == pytest.approx(1.1)
    assert "against haproxy;" in one.note
    two = got["s0.target.srd_vs_fastest_peer_two"]
    assert two.outcome == NOT_MET and two.estimate.value == pytest.approx(0.5)
    cpu = got["s0.target.srd_cpu_vs_cheapest_peer_one"]
    assert "against gosplice;" in cpu.note  # the cheapest, not the fastest
    assert cpu.estimate.value == pytest.approx((1.5 * 0.3 / 0.22 * 0.3 / 0.18) ** (1 / 3))
    assert cpu.outcome == NOT_MET  # srd costs more than Go's relay in every run
    assert got["s0.target.srd_cpu_vs_cheapest_peer_two"].outcome == MET  # 0.5 / 0.8
    assert {v.claim.source for v in got.values()} == {TARGET}


def test_a_benchmark_without_peers_leaves_the_peer_targets_not_testable():
    got = targets.peer_verdicts(report(peer_rows({"srd": [(3.0, 0.3)] * 3})))
    assert [v.outcome for v in got] == [NOT_TESTABLE] * 4
    assert "no peer" in got[0].reason
