"""`harness compare`: names what differs (a sysctl, a parameter, the commit), puts results side
by side, in the terminal and as a page under data/compare/; nothing archived changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.archive.compare import Comparison
from harness.cli import main
from unit.archived import fingerprint, make_run


def test_compare_names_a_changed_sysctl_and_a_changed_parameter(data_root, capsys):
    a = make_run(data_root, {"count": 5, "rate_mbit": 100.0}, sysctl="1", rtt=0.05)
    b = make_run(data_root, {"count": 9, "rate_mbit": 100.0}, sysctl="0", commit="beef",
                 rtt=0.2, outcome="inconclusive")
    before = fingerprint(data_root / "runs")
    assert main(["compare", a.run_id, str(b.path)]) == 0
    out = capsys.readouterr().out
    assert fingerprint(data_root / "runs") == before  # nothing archived changed
    params = out.split("== parameters")[1].split("==")[0]
    assert "count" in params and "rate_mbit" not in params.split("the same")[1]
    config = out.split("== configuration")[1].split("==")[0]
    assert "a sysctl net.ipv4.ip_forward" in config
    assert "0 -> 1" in config and "0 -> 0" in config
    assert "c0ffee" in out and "beef" in out
    claims = out.split("== claims")[1].split("==")[0]
    assert "reproduced (0.100 ms)" in claims and "inconclusive (0.400 ms)" in claims
    page = data_root / "compare" / f"{a.run_id}__{b.run_id}.html"
    assert f"page {page}" in out
    text = page.read_text()
    assert "net.ipv4.ip_forward" in text and "inconclusive (0.400 ms)" in text
    assert not list((data_root / "runs").rglob("*.html"))  # never inside a run folder


def test_a_change_of_the_studys_code_shows_even_on_one_commit(data_root):
    """An uncommitted study's runs share a commit; their code differs by content all the same."""
    a = make_run(data_root, {"count": 5}, code_digest="sha256:aa")
    b = make_run(data_root, {"count": 5}, code_digest="sha256:bb")
    code = Comparison.of([a, b]).differences["code"]
    assert list(code.index) == ["file tests/studies/ping_study.py"]


def test_the_same_runs_differ_in_nothing_but_results(data_root):
    a = make_run(data_root, {"count": 5})
    b = make_run(data_root, {"count": 5}, rtt=0.07)
    comp = Comparison.of([a, b])
    assert comp.differences["parameters"].empty and comp.same["parameters"] == 1
    assert comp.differences["configuration"].empty
    assert list(comp.differences["link verification"].index) == ["a:eth0--b:eth0 a->b"]
    assert comp.results.loc["rtt_ms"].tolist() == ["0.1", "0.14"]  # the mean of each run


def test_compare_needs_two_runs_and_names_unknown_ones(data_root, capsys):
    a = make_run(data_root, {"count": 5})
    assert main(["compare", a.run_id]) == 2
    assert "two runs" in capsys.readouterr().err
    assert main(["compare", a.run_id, "20990101T000000Z-ffffff"]) == 2
    assert "no run '20990101T000000Z-ffffff'" in capsys.readouterr().err


@pytest.fixture
def sweep_file(tmp_path):
    from unit.archived import NOTEBOOK

    path = tmp_path / "counts.yaml"
    path.write_text(f"notebook: {NOTEBOOK}\nparameters: {{profile: quick}}\n"
                    "sweep:\n  count: [5, 7, 9]\n")
    return path


def test_a_sweep_summary_compares_its_points_across_a_figure(data_root, sweep_file, capsys):
    from harness.studies import study_of_notebook
    from unit.archived import NOTEBOOK

    study = study_of_notebook(NOTEBOOK)
    for count, rtt in ((5, 0.05), (9, 0.3)):  # point count=7 not run yet
        make_run(data_root, study.parameters(profile="quick", count=count).to_dict(), rtt=rtt)
    make_run(data_root, study.parameters(profile="quick", count=5).to_dict(), complete=False)
    assert main(["compare", "--sweep", str(sweep_file)]) == 0
    out = capsys.readouterr().out
    assert "count=5" in out and "count=9" in out and "count=7" not in out
    page = (data_root / "compare" / "sweep-counts.html").read_text()
    assert "2 of 3 points" in page
    assert 'src="data:image/png;base64,' in page  # the claims across the points, inline
    params = json.dumps(page.split("<h2>parameters</h2>")[1].split("<h2>")[0])
    assert "count" in params


def test_the_s4_cpu_limit_sweep_gets_a_table_and_figure_across_its_points(data_root):
    from harness.archive.compare import sweep_summary
    from harness.studies import study_of_notebook

    root = Path(__file__).resolve().parents[2]
    sweep = root / "notebooks" / "sweeps" / "s4_cpu_limit.yaml"
    notebook = root / "notebooks" / "s4_mptcp.ipynb"
    study = study_of_notebook(notebook)
    for cpus, rtt in ((0.0, 0.1), (0.1, 0.2), (0.03, 0.3), (0.015, 0.4), (0.01, 0.5)):
        make_run(data_root, study.parameters(profile="quick", sender_cpus=cpus).to_dict(),
                 rtt=rtt, notebook=notebook, study="s4")
    comparison, page = sweep_summary(sweep)
    assert comparison.labels == ["sender_cpus=0.0", "sender_cpus=0.01", "sender_cpus=0.015",
                                 "sender_cpus=0.03", "sender_cpus=0.1"]
    assert list(comparison.differences["parameters"].index) == ["sender_cpus"]
    assert comparison.claims.loc["ping.veth_rtt"].tolist() == [
        "reproduced (0.200 ms)", "reproduced (1.000 ms)", "reproduced (0.800 ms)",
        "reproduced (0.600 ms)", "reproduced (0.400 ms)"]
    assert page == data_root / "compare" / "sweep-s4_cpu_limit.html"
    text = page.read_text()
    assert "5 of 5 points" in text and 'src="data:image/png;base64,' in text


def test_results_are_summarised_per_group_of_categorical_columns(data_root):
    import pandas as pd

    from harness.archive.archive import Run
    from harness.archive.compare import results_summary

    run = Run.create("s4", {}, data_root)
    run.write_table(pd.DataFrame({"tool": ["iperf3"] * 4, "transport": ["tcp", "mptcp"] * 2,
                                  "goodput_mbit": [450.0, 830.0, 460.0, 840.0],
                                  "repetition": [1, 1, 2, 2]}))
    summary = results_summary([run], ["a"])
    assert summary["a"].to_dict() == {"mptcp goodput_mbit": "835", "tcp goodput_mbit": "455"}
