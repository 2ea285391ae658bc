"""A report opened in headless Chromium with no network at all: nothing requested, every figure drawn.

Chromium runs in a network namespace of its own (``unshare -n``: not even loopback is up),
with every host name mapped to "not found" as a second wall, and logs every request it
makes (``--log-net-log``). A copy of the report carries one inline script that, once the
page has loaded, counts the images that decoded and the SVG figures that have a size, and
writes the counts into the DOM that ``--dump-dom`` prints.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import nbformat
import pytest
from report_run import FakeStudy, executed_notebook, run_meta, write_run

from harness.archive.report import render_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (env/system-packages.txt "
                                                "lists it; `bash env/setup` installs it)"),
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                       reason="needs root and unshare to take Chromium's network away"),
]

PROBE = """<script>
window.addEventListener("load", () => {
  const images = [...document.images];
  const broken = images.filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => i.alt);
  const svgs = [...document.querySelectorAll(".jp-OutputArea-output svg")];
  const flat = svgs.filter((s) => { const b = s.getBoundingClientRect(); return !(b.width > 0 && b.height > 0); });
  document.body.setAttribute("data-probe", JSON.stringify(
    {images: images.length, broken: broken, svgs: svgs.length, flat: flat.length}));
});
</script>"""


def matplotlib_figures() -> list:
    """A PNG and an SVG figure as a notebook's outputs, drawn by matplotlib like the studies'."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([1, 2, 4, 8], [460, 470, 478, 480], marker="o")
    ax.set_xlabel("streams")
    ax.set_ylabel("Mbit/s")
    png, svg = io.BytesIO(), io.StringIO()
    fig.savefig(png, format="png")
    fig.savefig(svg, format="svg")
    plt.close(fig)
    return [nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(png.getvalue()).decode()}),
            nbformat.v4.new_output("display_data", data={"image/svg+xml": svg.getvalue()})]


def open_offline(page: Path, work: Path) -> tuple[dict, list[str]]:
    """The probe's counts and every URL the page requested, opened with no network.

    The NetLog also holds the browser's own background requests (component updates, time
    queries); they have no web origin as initiator ("not an origin"), the page's do (a
    file:// page's origin is "null").
    """
    netlog = work / f"{page.stem}.netlog.json"
    out = subprocess.run(
        ["unshare", "-n", "--", CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         f"--user-data-dir={work / 'profile'}", '--host-resolver-rules=MAP * ~NOTFOUND',
         f"--log-net-log={netlog}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    (probe,) = re.findall(r'data-probe="([^"]*)"', out.stdout)
    log = json.loads(netlog.read_text())
    urls = sorted({str(params["url"]) for event in log["events"]
                   if "url" in (params := event.get("params") or {})
                   and params.get("initiator") not in (None, "not an origin")})
    return json.loads(unescape(probe)), urls


def with_probe(html: str, page: Path) -> Path:
    page.write_text(html.replace("</body>", PROBE + "</body>"))
    return page


def test_a_report_opened_offline_requests_nothing_and_draws_every_figure(tmp_path, caplog):
    run = write_run(tmp_path / "runs" / "demo" / "20261125T010203Z-abcdef", run_meta(),
                    {"demo.a": ("2.0x", "reproduced")})
    notebook = executed_notebook(run, matplotlib_figures())
    report = render_report(notebook, run / "report.html", study=FakeStudy(), reference_root=tmp_path)
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []  # e.g. alt text
    # the control: the same check sees a page's request for a remote figure, and its failure
    control, control_urls = open_offline(with_probe(
        '<html><body><img alt="remote" src="https://figures.example.org/f.png"></body></html>',
        tmp_path / "control.html"), tmp_path)
    assert control_urls == ["https://figures.example.org/f.png"]
    assert control == {"images": 1, "broken": ["remote"], "svgs": 0, "flat": 0}

    probe, urls = open_offline(with_probe(report.read_text(), tmp_path / "report.html"), tmp_path)

    assert urls == []
    # the figure cell's 1x1 PNG, the markdown image, matplotlib's PNG and its SVG (as an image)
    assert probe == {"images": 4, "broken": [], "svgs": 0, "flat": 0}
