"""MkDocs hook: each ``<!-- harness:claims NAME -->``, ``<!-- harness:params NAME -->``,
``<!-- harness:help all -->`` or ``<!-- harness:references all -->`` marker of a page is replaced
by what ``docsgen/generate.py`` rendered from the harness for it. A marker with nothing rendered
stops the build, naming the page and the command that renders it."""

from __future__ import annotations

import os
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

MARKER = re.compile(r"<!-- harness:(claims|params|help|references) ([A-Za-z0-9_.-]+) -->")


def generated_dir(config) -> Path:
    where = os.environ.get("HARNESS_DOCS_GENERATED")
    if where:
        return Path(where)
    return Path(config["config_file_path"]).resolve().parent / "build" / "docs-generated"


def on_page_markdown(markdown: str, page, config, files) -> str:
    out = generated_dir(config)

    def rendered(match: re.Match) -> str:
        part = out / match[1] / f"{match[2]}.md"
        if not part.is_file():
            raise PluginError(f"{page.file.src_uri} shows the {match[1]} of {match[2]}, but {part} "
                              "was not rendered: run `python docsgen/generate.py` first "
                              "(`nox -s docs` does)")
        return part.read_text(encoding="utf-8")

    return MARKER.sub(rendered, markdown)
