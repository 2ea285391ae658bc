"""The README of one screen, the documentation beside it (docs/, mkdocs.yml) and its tools
(docsgen/): the README's two commands verbatim and CI's call of the test command, every page in
the nav and every relative link resolved, the study pages' claims rendered from the harness's CLI,
and a built site that fetches nothing from outside itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TEST_COMMAND = "bash env/setup && .venv-nox/bin/nox -s tests"
MAIN_COMMAND = "bash env/setup && .venv-nox/bin/nox -s reproduce"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tool(name: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "docsgen" / name), *args], cwd=ROOT,
                          capture_output=True, text=True, env=env)


def nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_readme_is_one_screen_with_the_two_commands_verbatim():
    readme = (ROOT / "README.md").read_text().splitlines()
    assert len(readme) <= 150, f"README.md has {len(readme)} lines; the rest belongs in docs/"
    commands = [line.strip() for line in readme if line.startswith("    bash env/setup")]
    assert commands == [MAIN_COMMAND, TEST_COMMAND]


def test_ci_runs_the_readme_test_command_verbatim_then_the_docs():
    lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert TEST_COMMAND in lines
    assert lines.index(".venv-nox/bin/nox -s docs") > lines.index(TEST_COMMAND)


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["strict"] is True and config["theme"]["highlightjs"] is False
    in_nav = nav_pages(config["nav"])
    on_disk = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(in_nav) == on_disk


@pytest.mark.parametrize("page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md"))])
def test_relative_links_resolve(page):
    path = ROOT / page
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0]
        if not (path.parent / file).exists():
            broken.append(target)
    assert not broken, f"{page}: links to nothing: {broken}"


def test_offline_check_names_every_outside_fetch(tmp_path):
    (tmp_path / "css").mkdir()
    (tmp_path / "index.html").write_text(
        '<html><head><link rel="stylesheet" href="https://cdn.example/x.css">'
        '<script src="//cdn.example/hl.js"></script><style>@import "http://fonts.example/f.css";</style>'
        '</head><body><img srcset="a.png 1x, https://img.example/b.png 2x" style="background: url(http://x.example/bg.png)">'
        '<a href="https://www.mkdocs.org/">built with MkDocs</a></body></html>')
    (tmp_path / "css" / "site.css").write_text(
        "@font-face{src:url('https://fonts.example/a.woff2')} .i{background:url(\"data:image/svg+xml,"
        "%3csvg xmlns='http://www.w3.org/2000/svg'/%3e\")}")
    proc = tool("offline.py", str(tmp_path))
    assert proc.returncode == 1
    for address in ("https://cdn.example/x.css", "//cdn.example/hl.js", "http://fonts.example/f.css",
                    "https://img.example/b.png", "http://x.example/bg.png", "https://fonts.example/a.woff2"):
        assert address in proc.stderr
    assert "mkdocs.org" not in proc.stderr and "w3.org" not in proc.stderr  # a link, a data: URL
    assert "6 outside reference(s)" in proc.stderr


def test_offline_check_passes_a_site_of_its_own_files(tmp_path):
    (tmp_path / "index.html").write_text('<link rel="stylesheet" href="css/a.css"><script src="js/a.js">'
                                         '</script><a href="https://example.org/paper">the paper</a>')
    assert tool("offline.py", str(tmp_path)).returncode == 0
    assert tool("offline.py", str(tmp_path / "missing")).returncode == 2


def test_an_unknown_study_stops_the_generator_naming_page_and_command(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "s9.md").write_text("# S9\n\n<!-- harness:claims nosuchstudy -->\n")
    proc = tool("generate.py", "--docs", str(tmp_path / "docs"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 1
    assert "s9.md" in proc.stderr and "harness claims show nosuchstudy --json" in proc.stderr


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """Every study page's parts, rendered by docsgen/generate.py from the harness's CLI."""
    out = tmp_path_factory.mktemp("docs-generated")
    proc = tool("generate.py", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_each_study_page_shows_its_registration_as_the_cli_prints_it(rendered, capsys):
    for page in sorted((DOCS / "studies").glob("s[0-9].md")):
        study = page.stem
        assert f"<!-- harness:claims {study} -->" in page.read_text()
        assert cli_main(["claims", "show", study, "--json"]) == 0
        reg = json.loads(capsys.readouterr().out)
        shown = (rendered / "claims" / f"{study}.md").read_text()
        assert reg["digest"] in shown
        for claim in reg["claims"]:
            assert f"### {claim['id'].replace('_', chr(92) + '_')}\n" in shown
        assert len(re.findall(r"^### ", shown, re.M)) == len(reg["claims"]) + bool(reg["design"]) + bool(reg["changes"])
        assert "repetitions" in (rendered / "params" / f"{study}.md").read_text()


def test_the_cli_reference_shows_every_commands_help(rendered):
    from harness.cli import parser

    assert "<!-- harness:help all -->" in (DOCS / "reference" / "cli.md").read_text()
    shown = (rendered / "help" / "all.md").read_text()
    top = parser()._subparsers._group_actions[0].choices
    for name, sub in top.items():
        assert f"### harness {name}\n" in shown
        for option in sub._option_string_actions:
            assert option in shown
    assert "### harness lab clean\n" in shown and "### harness claims history\n" in shown


def test_the_references_page_lists_every_committed_reference_with_its_status_and_reviews(rendered):
    assert "<!-- harness:references all -->" in (DOCS / "reviews" / "index.md").read_text()
    shown = (rendered / "references" / "all.md").read_text()
    for folder in sorted((ROOT / "data" / "reference").glob("*/*/run.json")):
        assert f"`{folder.parent.name}`" in shown
    # the eighth S0 review names its reference, and the page links it there
    assert "[s0-2026-11-30-eighth](s0-2026-11-30-eighth.md)" in shown
    # S3's first review names the pool it read (76ba08) and its three runs, pooled again as 8951d5
    first = next(line for line in shown.splitlines() if "20261129T111447Z-pool-8951d5" in line)
    assert first.endswith("| [s3-2026-11-29](s3-2026-11-29.md) |")
    assert "superseded" in shown and "**stands: judged under today's registration**" in shown


def build(config: Path, site: Path, rendered: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(config),
                           "-d", str(site)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "HARNESS_DOCS_GENERATED": str(rendered)})


def test_the_site_builds_strict_and_offline_and_the_default_theme_would_not(rendered, tmp_path):
    proc = build(ROOT / "mkdocs.yml", tmp_path / "site", rendered)
    assert proc.returncode == 0, proc.stderr
    s4 = (tmp_path / "site" / "studies" / "s4.html").read_text()
    assert "s4.tcp_peak@nolimit" in s4 and "harness:claims" not in s4
    assert tool("offline.py", str(tmp_path / "site")).returncode == 0
    # the theme's default (highlight.js from a CDN) is what the check is for
    cdn = ROOT / f"mkdocs-test-{os.getpid()}.yml"  # beside mkdocs.yml: its paths are relative to it
    cdn.write_text((ROOT / "mkdocs.yml").read_text().replace("highlightjs: false", "highlightjs: true"))
    try:
        assert build(cdn, tmp_path / "cdn", rendered).returncode == 0
    finally:
        cdn.unlink()
    proc = tool("offline.py", str(tmp_path / "cdn"))
    assert proc.returncode == 1 and "cdnjs" in proc.stderr


def test_a_marker_with_nothing_rendered_stops_the_build(tmp_path):
    proc = build(ROOT / "mkdocs.yml", tmp_path / "site", tmp_path / "nothing")
    assert proc.returncode != 0
    assert "was not rendered: run `python docsgen/generate.py` first" in proc.stderr
