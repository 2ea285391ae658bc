"""``harness site OUT``: the archive's pages in one new folder, linked relatively, nothing
archived changed, never written over, no page that would fetch from elsewhere."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import urldefrag

import pytest

from harness.archive.site import write_site
from harness.cli import main
from harness.errors import SpecError

from .test_crate import REFERENCES, tree_digest

S4 = next(p for p in REFERENCES if p.parent.name == "s4")


@pytest.fixture
def data(tmp_path, monkeypatch):
    data = tmp_path / "data"
    for suffix in ("a", "b"):
        shutil.copytree(S4, data / "runs" / "s4" / (S4.name + suffix))
    (data / "compare").mkdir()
    (data / "compare" / "sweep-demo.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>sweep</title></head>'
        '<body><h1>sweep demo.yaml</h1></body></html>')
    monkeypatch.setenv("HARNESS_DATA", str(data))
    return data


def hrefs(page: Path) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', page.read_text())


def test_the_site_holds_every_run_and_page_linked_relatively(data, tmp_path, capsys):
    before = tree_digest(data)
    out = tmp_path / "site"
    assert main(["site", str(out)]) == 0
    assert "2 run(s), 2 compare page(s)" in capsys.readouterr().out
    assert tree_digest(data) == before  # nothing archived changed
    index = out / "index.html"
    links = hrefs(index)
    assert "compare/sweep-demo.html" in links and "compare/study-s4.html" in links
    assert f"runs/s4/{S4.name}a/report.html" in links
    for page in [index, *out.rglob("*.html")]:
        for link in hrefs(page):
            target, _ = urldefrag(link)
            if not target:
                continue  # an anchor in the page itself
            assert "://" not in link and not link.startswith("/"), (page, link)
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(out.resolve()) and resolved.exists(), (page, link)
        assert '<link rel="icon" href="data:,">' in page.read_text()
    assert (out / "runs" / "s4" / f"{S4.name}b" / "report.html").read_text().count("MPTCP") > 10


def test_an_existing_folder_is_never_written_over(data, tmp_path, capsys):
    out = tmp_path / "site"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["site", str(out)]) == 2
    assert "exists already" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_a_page_that_would_fetch_from_elsewhere_is_not_published(data, tmp_path):
    (data / "compare" / "remote.html").write_text(
        '<html><head></head><body><img alt="x" src="https://cdn.example.org/x.png"></body></html>')
    with pytest.raises(SpecError, match="would fetch https://cdn.example.org/x.png"):
        write_site(tmp_path / "site", data)
    assert not (tmp_path / "site").exists()  # the half-written folder is gone
