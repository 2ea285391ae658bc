"""What a reader sees, in a real headless Chromium (Debian's, driven by Playwright).

- ``harness site OUT`` opened from a file:// URL and from a plain web server: every link of
  every page resolves inside the folder, no page logs a console error, none requests anything
  outside the folder.
- An S4 report (the committed reference run's notebook, rendered again) draws its Korean
  title with a real font: the platform font Chromium used for its Hangul (DevTools'
  ``CSS.getPlatformFontsForNode``) is the stack's Hangul family, not a fallback.
- ``nox -s lab``'s JupyterLab opens a study notebook with no news prompt and no kernel dialog.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urldefrag, urlparse
from urllib.request import url2pathname

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
playwright = pytest.importorskip("playwright.sync_api", reason="playwright (a test dependency) drives Chromium")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (env/system-packages.txt "
                                                "lists it; `bash env/setup` installs it)"),
]

# one S4 run with its notebook: a single-run reference or a pooled one's member (a pooled
# folder has no notebook of its own)
S4_REFERENCE = sorted((ROOT / "data" / "reference" / "s4").rglob("notebook.ipynb"))[0].parent
KOREAN = "서비스"  # in S4's paper title, in every S4 report's banner and provenance


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


class Visit:
    """One page opened: its console errors, page errors, requests and links (absolute)."""

    def __init__(self, browser, url: str):
        page = browser.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        page.on("request", lambda r: self.requests.append(r.url))
        response = page.goto(url, wait_until="load")
        self.status = response.status if response is not None else None
        page.wait_for_timeout(300)
        self.links = page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
        page.close()


def crawl(browser, start: str, base: str, exists) -> dict[str, Visit]:
    """Every page reachable from ``start`` by links; an assertion names the first link that
    leaves ``base`` or does not resolve, the first console error, the first request outside."""
    seen: dict[str, Visit] = {}
    todo = [start]
    while todo:
        url = todo.pop()
        if url in seen:
            continue
        visit = seen[url] = Visit(browser, url)
        assert visit.errors == [], (url, visit.errors)
        outside = [r for r in visit.requests if not (r.startswith(base) or r.startswith("data:"))]
        assert outside == [], (url, outside)
        for link in visit.links:
            target, _fragment = urldefrag(link)
            assert target.startswith(base), f"{url} links outside the site: {link}"
            assert exists(target), f"{url} links to {link}, which does not resolve"
            if target.endswith(".html") and target not in seen:
                todo.append(target)
    return seen


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A site of an archive: two S4 runs (the reference, copied), a compare page and a sweep
    summary as ``harness compare`` and ``harness batch`` write them."""
    from harness.archive.archive import Run
    from harness.archive.compare import Comparison, claims_figure, compare_page
    from harness.archive.site import write_site

    data = tmp_path_factory.mktemp("data")
    runs = []
    for suffix in ("a", "b"):
        target = data / "runs" / "s4" / f"{S4_REFERENCE.name}{suffix}"
        shutil.copytree(S4_REFERENCE, target)
        runs.append(Run(target))
    comparison = Comparison.of(runs)
    compare_page(comparison, "two-runs", "compare two runs", root=data)
    labelled = Comparison.of(runs, ["streams=1", "streams=4"])
    compare_page(labelled, "sweep-demo", "sweep demo.yaml: 2 of 2 points",
                 claims_figure(labelled, "streams"), root=data)
    out = tmp_path_factory.mktemp("publish") / "site"
    made = write_site(out, data)
    assert made.runs == 2 and made.pages == 3
    return out


def test_the_site_opens_from_file_with_every_link_inside_and_no_error(browser, site):
    base = site.as_uri() + "/"
    pages = crawl(browser, base + "index.html", base,
                  lambda url: Path(url2pathname(urlparse(url).path)).exists())
    names = {Path(urlparse(u).path).relative_to(site).as_posix() for u in pages}
    assert "compare/sweep-demo.html" in names and "compare/study-s4.html" in names
    assert sum(n.endswith("/report.html") for n in names) == 2


def test_the_site_opens_from_a_plain_web_server(browser, site, unused_port=None):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port),
                               "--directory", str(site)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base, timeout=1).close()
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)

        def exists(url: str) -> bool:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    return r.status == 200
            except urllib.error.HTTPError:
                return False

        pages = crawl(browser, base + "index.html", base, exists)
        assert len(pages) == 6  # the index, two reports, three compare pages
        # the control: the check sees a link that does not resolve
        (site.parent / "control").mkdir(exist_ok=True)
        assert not exists(base + "runs/no-such-run/report.html")
    finally:
        server.terminate()
        server.wait(10)


def hangul_fonts(browser, page_path: Path) -> list[tuple[str, set[str]]]:
    """Each element whose own text holds Hangul: its text and the platform fonts Chromium drew
    that text with (DevTools' CSS.getPlatformFontsForNode)."""
    page = browser.new_page()
    page.goto(page_path.as_uri(), wait_until="load")
    count = page.evaluate("""() => {
        const hangul = /[\\uac00-\\ud7a3]/;
        const all = [...document.querySelectorAll('body *')].filter(
            (el) => [...el.childNodes].some((n) => n.nodeType === 3 && hangul.test(n.textContent)));
        all.forEach((el, k) => el.setAttribute('data-hangul', String(k)));
        return all.length;
    }""")
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    found = []
    for k in range(count):
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": f'[data-hangul="{k}"]'})["nodeId"]
        text = page.inner_text(f'[data-hangul="{k}"]')
        fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        found.append((text, {f["familyName"] for f in fonts if f["glyphCount"]}))
    page.close()
    return found


KOREAN_FONTS = {"Noto Sans CJK KR", "Noto Sans Mono CJK KR"}


def test_an_s4_report_draws_its_korean_text_with_the_stacks_hangul_fonts(browser, tmp_path):
    from harness.archive.report import render_report
    from harness.archive.report_sections import CODE_FONT_STACK, FONT_STACK
    from harness.studies import study_for

    study = study_for("s4")
    assert KOREAN in study.citation.title
    report = render_report(S4_REFERENCE / "notebook.ipynb", tmp_path / "report.html", study=study,
                           reference_root=tmp_path)
    found = hangul_fonts(browser, report)
    assert len(found) >= 2 and any(KOREAN in text for text, _ in found)  # banner and provenance
    # every Hangul is drawn with a Korean family the stacks name (fonts-noto-cjk), not with a
    # font fontconfig happened to fall back on, nor as missing-glyph boxes
    assert "Noto Sans CJK KR" in FONT_STACK and "Noto Sans Mono CJK KR" in CODE_FONT_STACK
    for text, families in found:
        assert families & KOREAN_FONTS, (text, families)
    # the control: a page naming no such font draws its Hangul with another family
    plain = tmp_path / "plain.html"
    plain.write_text(f'<html lang="en"><body style="font-family: serif"><p>{KOREAN}</p></body></html>')
    ((_, families),) = hangul_fonts(browser, plain)
    assert families and not families & KOREAN_FONTS, families


def test_jupyterlab_opens_a_study_notebook_without_news_prompt_or_kernel_dialog(browser, tmp_path):
    from harness.run import jupyterlab

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    shutil.copy(ROOT / "notebooks" / "s4_mptcp.ipynb", notebooks)
    lab = jupyterlab.server(jupyterlab.free_port(18988), notebooks)
    env = lab.env()
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp_path / "user-settings")  # no one's own settings
    # the kernels' Unix sockets live there: a short path (a socket's path has at most 107 bytes;
    # pytest's tmp_path made "File name too long" and an "Error Starting Kernel" dialog)
    runtime = tempfile.mkdtemp(prefix="hl-")
    env["JUPYTER_RUNTIME_DIR"] = runtime
    proc = subprocess.Popen(lab.argv(), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        jupyterlab.await_own_listener(proc, lab.port)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"http://127.0.0.1:{lab.port}/lab/tree/s4_mptcp.ipynb?token={lab.token}")
        page.wait_for_selector(".jp-Notebook", timeout=120_000)
        # the kernel starts by itself (the notebook names python3, which exists)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
        page.wait_for_timeout(5000)  # the news prompt shows a few seconds after the start
        text = page.inner_text("body")
        said = [d.inner_text() for d in page.query_selector_all(".jp-Dialog")]
        page.screenshot(path=str(tmp_path / "lab.png"))
        toasts = [t.inner_text() for t in page.query_selector_all(".Toastify__toast")]
        page.close()
        assert said == [], f"a dialog asked something: {said}"
        assert not [t for t in toasts if "news" in t.lower()], toasts
        assert "official Jupyter news" not in text
        assert errors == []
    finally:
        jupyterlab._stop(proc)
        shutil.rmtree(runtime, ignore_errors=True)  # the folder this test made
