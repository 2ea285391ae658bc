"""harness.archive.report: a run's report opens offline, shows outputs not plumbing, and says where it came from."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from report_run import FakeStudy, executed_notebook, run_meta, write_run

from harness.archive.report import ReportError, external_fetches, render_report
from harness.studies import discover, get_study

ROOT = Path(__file__).resolve().parents[2]

@pytest.fixture
def report(tmp_path):
    run = write_run(tmp_path / "runs" / "demo" / "20261125T010203Z-abcdef", run_meta(),
                    {"demo.a": ("2.0x", "reproduced"), "demo.b": ("9x", "not reproduced")})
    notebook = executed_notebook(run)
    reference = tmp_path / "reference"
    write_run(reference / "demo" / "20261101T000000Z-111111", run_meta("20261101T000000Z-111111"),
              {"demo.a": ("2.1x", "reproduced"), "demo.b": ("2.2x", "inconclusive")})
    path = render_report(notebook, run / "report.html", study=FakeStudy(), reference_root=reference)
    return path.read_text(), notebook


def test_report_fetches_nothing_and_embeds_every_figure(report):
    html, _ = report
    assert external_fetches(html) == []
    assert "require.min.js" not in html and "mathjax" not in html.lower() and "mermaid.esm" not in html
    images = re.findall(r'<img[^>]*src="([^"]+)"', html)
    assert len(images) == 2 and all(src.startswith("data:image/png;base64,") for src in images)


def test_figures_are_described_and_nbconvert_has_nothing_to_warn_about(report, caplog):
    html, _ = report
    assert 'alt="Figure: Demo"' in html and 'alt="a figure"' in html
    warnings = [r.getMessage() for r in caplog.get_records("setup") if r.levelname == "WARNING"]
    assert warnings == []  # nbconvert warns of every figure without one


def test_title_is_study_and_run_id(report):
    html, _ = report
    (title,) = re.findall(r"<title>(.*?)</title>", html)
    assert title.startswith("demo run 20261125T010203Z-abcdef") and "A study of nothing" in title


def test_code_is_hidden_outputs_stay_and_the_archived_notebook_keeps_its_code(report):
    html, notebook = report
    for code in ("PLUMBING-CODE", "analysis.figure", "PARAMETERS-CELL", "INJECTED-CELL", "NBVAL_CHECK_OUTPUT"):
        assert code not in html
    assert "placement: vm - TCG" in html  # a plumbing cell's output is the reader's
    assert "CHECKED-COLUMNS" not in html  # a remove-cell cell goes whole
    assert "The paper's numbers beside ours." in html
    sources = "".join(c.source for c in nbformat.read(str(notebook), as_version=4).cells)
    assert "PLUMBING-CODE" in sources and "NBVAL_CHECK_OUTPUT" in sources


def test_banner_and_provenance_come_from_run_json(report):
    html, _ = report
    text = re.sub(r"<[^>]+>", " ", html)
    assert 'id="provenance"' in html
    provenance = text[text.index("Provenance"):]
    for fact in ("0123abcd" * 5, "dirty (uncommitted changes)", "6.1.0-host #1 SMP", "6.1.0-28-amd64",
                 "the host kernel lacks tipc", "iperf 3.12", "iperf 3.16", "papermill", "2.7.0",
                 "rate_mbit", "100.0", "2026-11-25T01:02:03+00:00", "2026-11-25T01:04:05+00:00",
                 "complete", "A. Author, B. Author. “A Paper.” Journal of Tests 1(2), 1999.",
                 "Python 3 3.11.7"):
        assert fact in provenance, fact
    assert text.index("A. Author, B. Author") < text.index("The paper's numbers beside ours.")  # banner


def test_the_run_is_shown_beside_the_reference_run(report):
    html, _ = report
    section = html[html.index('id="reference-run"'):html.index('id="provenance"')]
    assert "20261101T000000Z-111111" in section
    assert "Same outcome for 1 of 2 claims" in section
    for cell in ("2.0x [1, 3] (n=2)", "2.1x [1, 3] (n=2)", "not reproduced", "inconclusive"):
        assert cell in section


def test_a_reference_run_without_claims_is_named_as_such(tmp_path):
    run = write_run(tmp_path / "runs" / "demo" / "20261125T010203Z-abcdef", run_meta(),
                    {"demo.a": ("2.0x", "reproduced")})
    reference = write_run(tmp_path / "reference" / "demo" / "20261101T000000Z-111111",
                          run_meta("20261101T000000Z-111111"), {})
    (reference / "claims.csv").unlink()
    html = render_report(executed_notebook(run), run / "report.html",
                         reference_root=tmp_path / "reference").read_text()
    assert "The reference run has no claims table" in html and "2.0x [1, 3] (n=2)" in html


def test_without_a_reference_run_the_report_says_so(tmp_path):
    run = write_run(tmp_path / "run", run_meta(), {"demo.a": ("2.0x", "reproduced")})
    html = render_report(executed_notebook(run), run / "report.html",
                         reference_root=tmp_path / "none").read_text()
    assert "No reference run of study demo is committed" in html
    assert "<title>demo run 20261125T010203Z-abcdef</title>" in html


def test_the_status_given_is_the_one_shown(tmp_path):
    run = write_run(tmp_path / "run", run_meta(status="incomplete"), {})
    final = run_meta(status="incomplete", error="KeyboardInterrupt: interrupted")
    html = render_report(executed_notebook(run), run / "report.html", final,
                         reference_root=tmp_path).read_text()
    assert "KeyboardInterrupt: interrupted" in html


def test_a_report_that_would_fetch_something_is_refused(tmp_path):
    run = write_run(tmp_path / "run", run_meta(), {})
    notebook = executed_notebook(run)
    nb = nbformat.read(str(notebook), as_version=4)
    nb.cells[4].outputs = [nbformat.v4.new_output(
        "display_data", data={"text/html": '<script src="https://cdn.example.org/plot.js"></script>'})]
    nbformat.write(nb, str(notebook))
    with pytest.raises(ReportError, match="would fetch https://cdn.example.org/plot.js"):
        render_report(notebook, run / "report.html", reference_root=tmp_path)
    assert not (run / "report.html").exists()


@pytest.mark.parametrize("html, fetched", [
    ('<script src="https://cdn.x/require.js"></script>', ["https://cdn.x/require.js"]),
    ('<link rel="stylesheet" href="//fonts.x/css">', ["//fonts.x/css"]),
    ('<img src="http://x/a.png"><img srcset="a.png 1x, https://x/b.png 2x">', ["http://x/a.png", "https://x/b.png"]),
    ("<style>@import 'https://x/a.css'; .a { background: url(https://x/b.png) }</style>",
     ["https://x/b.png", "https://x/a.css"]),
    ('<div style="background-image: url(\'http://x/c.png\')"></div>', ["http://x/c.png"]),
    ('<script type="module">const m = (await import("https://cdn.x/mermaid.mjs")).default;</script>',
     ["https://cdn.x/mermaid.mjs"]),
    ('<a href="https://doi.org/10.1/x">paper</a><img src="data:image/png;base64,AAAA">'
     '<img src="figure.png"><style>/* https://github.com/x */</style>', []),
])
def test_external_fetches_lists_what_a_browser_would_request(html, fetched):
    assert sorted(external_fetches(html)) == sorted(fetched)


def test_a_real_study_notebook_renders_without_its_code(tmp_path):
    """S0's notebook as it is (not executed): markdown stays, code and the nbval check go."""
    notebook = tmp_path / "notebook.ipynb"
    shutil.copy(ROOT / "notebooks" / "s0_relay.ipynb", notebook)
    discover()
    study = get_study("s0")
    html = render_report(notebook, tmp_path / "report.html", run_meta(study="s0"), study,
                         reference_root=tmp_path).read_text()
    assert external_fetches(html) == []
    assert "run_study(study, params" not in html and "NBVAL_CHECK_OUTPUT" not in html
    assert "Did the NAT path really translate?" in html
    assert "<title>s0 run 20261125T010203Z-abcdef — " in html


def test_every_study_notebook_carries_its_papers_full_citation():
    discover()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        study = get_study(nb["metadata"]["harness"]["study"])
        first = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
        citation = study.citation
        assert citation.authors and citation.title and citation.venue and citation.year > 1990
        assert citation.text() in "".join(first["source"]), path.name


def test_the_banner_says_which_lab_link_failed_its_verification():
    from harness.archive.report_sections import banner, provenance_section

    wan = {"link": "client:wan--server:wan", "configured_mbit": 33.78, "expected_rtt_ms": 142.1,
           "rtt_ms": 143.0}
    records = [
        {"link": "client:lan--server:lan", "direction": "client->server", "ok": True,
         "rtt_ms": 2.02},
        {**wan, "direction": "client->server", "ok": True, "link_layer_mbit": 33.37,
         "rate_ratio": 0.988},
        # seen in an S2 quick run: the WAN's reverse direction short of its rate, twice
        {**wan, "direction": "server->client", "ok": False, "link_layer_mbit": 28.92,
         "rate_ratio": 0.856, "attempts": [0.856, 0.289]},
    ]
    text = re.sub(r"<[^>]+>", " ", banner({"study": "s2", "link_verification": records}, ""))
    assert "2 of 3 link directions passed" in text
    assert ("FAILED: client:wan--server:wan server-&gt;client, 28.9 of 33.8 Mbit/s (0.86 of "
            "the rate; attempts 0.86, 0.29), RTT 143 ms (expected 142)") in text
    assert text.count("FAILED:") == 1
    ok = re.sub(r"<[^>]+>", " ", banner({"link_verification": records[:2]}, ""))
    assert "2 of 2 link directions passed" in ok and "FAILED" not in ok
    assert "lab links verified" not in banner({"study": "s0"}, "")
    provenance = re.sub(r"<[^>]+>", " ", provenance_section(
        {"link_verification": records}, ""))
    assert "client:lan--server:lan client-&gt;server" in provenance
    assert "ok, unshaped, RTT 2.02 ms" in provenance


def test_progress_lines_show_as_a_log_and_warnings_stay_on_stderr(tmp_path):
    run = write_run(tmp_path / "run", run_meta(), {})
    notebook = executed_notebook(run)
    nb = nbformat.read(str(notebook), as_version=4)
    nb.cells[4].outputs = [nbformat.v4.new_output("stream", name="stderr", text=(
        "\rs1 methods: 0/10 points [00:00 elapsed, ~? left]"
        "\rs1 methods: 10/10 points [01:56 elapsed, ~00:00 left], tcp-nodelay, repetition 2\n"
        "UserWarning: the ceiling was not measured\n"))]
    nbformat.write(nb, str(notebook))
    html = render_report(notebook, run / "report.html", reference_root=tmp_path).read_text()
    stderr = re.findall(r'data-mime-type="application/vnd.jupyter.stderr"[^>]*>(.*?)</div>', html, re.S)
    stdout = re.findall(r'data-mime-type="text/plain"[^>]*>(.*?)</div>', html, re.S)
    assert len(stderr) == 1 and "UserWarning" in stderr[0] and "points" not in stderr[0]
    (log,) = [text for text in stdout if "s1 methods" in text]
    assert "10/10 points [01:56 elapsed, ~00:00 left], tcp-nodelay, repetition 2" in log
    assert " 0/10 " not in log  # rewritten in place: its last state only
