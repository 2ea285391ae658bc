"""Render what the study pages show from the code, before MkDocs builds the site (`nox -s docs`).

A page marks where it wants a study's registered claims or its parameters with
``<!-- harness:claims NAME -->`` or ``<!-- harness:params NAME -->``, every command's help with
``<!-- harness:help all -->``, and the committed verdict references with
``<!-- harness:references all -->``. This script asks the harness's own command line for them
(``harness claims show NAME --json``, ``harness params NAME``, ``harness COMMAND --help``,
``harness claims references --json``) and
writes Markdown to ``OUT/KIND/NAME.md``; ``docsgen/hooks.py`` puts each in place of its marker
while MkDocs builds. It goes through the command line, not the modules that
declare the claims, so a page shows what a run archives as ``registration.json``, wherever and
however the registration is declared.

    python docsgen/generate.py [--docs docs] [--out build/docs-generated]
"""

from __future__ import annotations

import argparse
import contextlib
import html
import io
import json
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the harness of this checkout, installed or not
MARKER = re.compile(r"<!-- harness:(claims|params|help|references) ([A-Za-z0-9_.-]+) -->")
DEFAULT_OUT = Path(os.environ.get("HARNESS_DOCS_GENERATED") or ROOT / "build" / "docs-generated")


class GenerateError(Exception):
    """A page asks for something the harness cannot give (an unknown study, a failing command)."""


def markers(docs: Path) -> list[tuple[Path, str, str]]:
    """Every (page, kind, study) a page under ``docs`` asks for, in page order."""
    found = []
    for page in sorted(docs.rglob("*.md")):
        for match in MARKER.finditer(page.read_text(encoding="utf-8")):
            found.append((page, match[1], match[2]))
    return found


def harness(*args: str) -> str:
    """What ``harness ARGS`` prints, its command line run in this process (one import of the
    harness for every page, not one interpreter per call)."""
    from harness.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's refusals, and its --help (exit 0)
            code = exc.code if isinstance(exc.code, int) else 2
    if code:
        said = " ".join(line.strip() for line in (err.getvalue() or out.getvalue()).splitlines())
        raise GenerateError(f"`harness {' '.join(args)}` failed (exit {code}): {said or 'no message'}")
    return out.getvalue()


def text(value: object) -> str:
    """Plain text set safely in Markdown: HTML characters as entities, Markdown's marks escaped."""
    escaped = html.escape(str(value), quote=False)
    return re.sub(r"([\\`*_\[\]])", r"\\\1", escaped)


def code(value: str) -> str:
    """A code span that holds any backticks in ``value``."""
    fence = "``" if "`" in value else "`"
    return f"{fence} {value} {fence}" if fence == "``" else f"`{value}`"


def render_claims(reg: dict) -> str:
    """A registration (``harness claims show --json``, as archived in registration.json) as Markdown."""
    lines = [f"Registration {code(reg['digest'])}, as `harness claims show {reg['study']}` prints it "
             "(generated from the code when this site was built).", ""]
    for claim in reg["claims"]:
        region = claim.get("region") or {}
        lines += [f"### {text(claim['id'])}", "",
                  f"*{text(claim.get('source', ''))}*: {text(claim.get('claim', ''))}", ""]
        if claim.get("quote"):
            lines += [f"- **the paper** ({text(claim.get('seed_line', ''))}): \u201c{text(claim['quote'])}\u201d"]
        lines += [f"- **the paper's value**: {text(claim.get('paper', ''))}"]
        for label in ("quantity", "regime"):
            if claim.get(label):
                lines += [f"- **{label}**: {text(claim[label])}"]
        lines += [f"- **region**: {text(region.get('text', ''))} -- {text(region.get('rule', ''))}", ""]
    if reg.get("design"):
        lines += ["### Design (fixed before data)", ""]
        lines += [f"- **{text(key)}**: {code(json.dumps(value, ensure_ascii=False))}"
                  for key, value in reg["design"].items()]
        lines += [""]
    if reg.get("changes"):
        lines += ["### Changes after data", ""]
        lines += [f"- **{text(change['date'])}**: {text(change['what'])} -- *why*: {text(change['why'])}"
                  for change in reg["changes"]]
        lines += [""]
    return "\n".join(lines)


def render_params(printed: str, study: str) -> str:
    """``harness params STUDY`` as it prints, in a code block."""
    fence = "~~~~" if "```" in printed else "```"
    return "\n".join([f"As `harness params {study}` prints them (generated when this site was built):",
                      "", f"{fence}text", printed.rstrip("\n"), fence, ""])


def commands(parser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the harness's argument parser (``()``, ``("run",)``, ``("lab", "show")``, ...)."""
    found = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += commands(sub, (*path, name))
    return found


def render_help() -> str:
    """``harness [COMMAND...] --help`` for every command, as the command line prints it."""
    from harness.cli import parser

    lines = ["Every command's `--help`, as the command line prints it (generated when this site was built).", ""]
    for path in commands(parser()):
        printed = harness(*path, "--help")
        lines += [f"### {' '.join(('harness', *path))}", "", "```text", printed.rstrip("\n"), "```", ""]
    return "\n".join(lines)


def reviews_naming(docs: Path, run_id: str, members: list[str] = ()) -> list[Path]:
    """The referee reviews (``docs/reviews/*.md``) whose text names the reference ``run_id``, or
    each of its ``members`` by its short id (S3's first review read a pool of the same three runs
    that was pooled again under another id before it was committed)."""
    short = [m.rsplit("-", 1)[-1] for m in members if m]
    found = []
    for page in sorted((docs / "reviews").glob("*.md")):
        said = page.read_text(encoding="utf-8")
        if run_id in said or (len(short) > 1 and all(s in said for s in short)):
            found.append(page)
    return found


def render_references(listed: dict, docs: Path) -> str:
    """``harness claims references --json`` as one table a study, each reference with the
    reviews that name it (linked from a page in ``docs/reviews/``)."""
    lines = ["Every committed verdict reference, as `harness claims references` lists it (generated "
             "from `data/reference/` when this site was built). A reference *stands* while its "
             "registration is the study's registration of today; a change recorded since supersedes "
             "it, and it stays in the repository as what was measured and judged then.", ""]
    for study, refs in listed.items():
        lines += [f"### {text(study)}", ""]
        if not refs:
            lines += ["No committed reference.", ""]
            continue
        lines += ["| reference | runs (minutes each) | registration | verdicts | status | reviews |",
                  "|---|---|---|---|---|---|"]
        for ref in refs:
            took = ", ".join("-" if r["minutes"] is None else f"{r['minutes']:.0f}" for r in ref["runs"])
            reviews = ", ".join(f"[{page.stem}]({page.name})" for page in reviews_naming(
                docs, ref["reference"], [r["run_id"] for r in ref["runs"]] if ref["pooled"] else []))
            status = f"**{text(ref['status'])}**" if ref["stands"] else text(ref["status"])
            lines.append(f"| {code(ref['reference'])} | {len(ref['runs'])} ({took}) | "
                         f"{code(ref['registration'][7:19] or '-')} | {text(ref['verdicts'])} | {status} | "
                         f"{reviews or '-'} |")
        lines.append("")
    return "\n".join(lines)


def generate(docs: Path, out: Path) -> list[Path]:
    """Write every page's claims and parameters under ``out`` (made afresh); the files written."""
    if not docs.is_dir():
        raise GenerateError(f"no pages: {docs} is not a folder (give the pages' folder with --docs)")
    wanted = markers(docs)
    if out.exists():
        shutil.rmtree(out)
    written = []
    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal: the same on every machine
    for page, kind, study in wanted:
        target = out / kind / f"{study}.md"
        if target.exists():
            continue
        try:
            if kind == "claims":
                body = render_claims(json.loads(harness("claims", "show", study, "--json")))
            elif kind == "help":
                if study != "all":
                    raise GenerateError(f"`<!-- harness:help {study} -->`: the help marker takes `all`")
                body = render_help()
            elif kind == "references":
                if study != "all":
                    raise GenerateError(f"`<!-- harness:references {study} -->`: the references "
                                        "marker takes `all`")
                body = render_references(json.loads(harness("claims", "references", "--json")), docs)
            else:
                body = render_params(harness("params", study), study)
        except GenerateError as err:
            raise GenerateError(f"{page}: {err}") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="the pages (default: docs/)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="where the rendered parts go (default: build/docs-generated/)")
    args = parser.parse_args(argv)
    try:
        written = generate(args.docs, args.out)
    except GenerateError as err:
        print(f"docsgen: {err}", file=sys.stderr)
        return 1
    print(f"docsgen: {len(written)} part(s) rendered from the harness into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
