"""A run's report: self-contained HTML that a reader can open offline and trust.

The one place that decides what a report shows (``render_report``):

- **Nothing is fetched.** nbconvert's lab template loads require.js, MathJax and mermaid
  from a public CDN; a report opened offline then has blank parts. Our template leaves them
  out (no study output needs them: figures are matplotlib PNGs, embedded as data URIs, tables
  are HTML; markdown uses no TeX), images linked from markdown are embedded, CSS is inlined
  by the lab template. :func:`external_fetches` lists anything a browser would still fetch,
  and a report that has any is refused, naming it.
- **Code inputs are hidden; outputs, markdown and figures stay.** The code is the notebook's
  plumbing (the run call, loading tables, calling the analysis); it stays in the archived
  ``notebook.ipynb``. Cells tagged ``remove-cell`` (e.g. the output checks nbval reads) and
  the parameters cells (``parameters``, papermill's ``injected-parameters``: the provenance
  section lists every resolved parameter) are left out whole.
- **Figures** get an alternative text: the heading of their section.
- **Progress lines** (how long each phase took) show as a plain log, not as the alarm a
  report makes of standard error; warnings stay on it.
- **Title** = study and run id; a **banner** on top (run, status, the paper's citation), the
  run **beside the study's reference run**, and a **provenance** section from run.json
  (:mod:`harness.archive.report_sections`).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from ..errors import HarnessError
from . import report_sections as sections

REMOVE_CELL_TAGS = frozenset({"remove-cell", "parameters", "injected-parameters"})

# The lab template without the blocks that load scripts from a CDN.
OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<style type="text/css">{{ resources.harness_css }}</style>{%- endblock extra_css -%}
{%- block data_png scoped -%}
{{ super() | replace('<img ', '<img alt="' ~ (output.metadata.get('alt', '') | escape_html) ~ '" ', 1) }}
{%- endblock data_png -%}
{%- block data_jpg scoped -%}
{{ super() | replace('<img ', '<img alt="' ~ (output.metadata.get('alt', '') | escape_html) ~ '" ', 1) }}
{%- endblock data_jpg -%}
{%- block data_svg scoped -%}
{{ super() | replace('<img ', '<img alt="' ~ (output.metadata.get('alt', '') | escape_html) ~ '" ', 1) }}
{%- endblock data_svg -%}
"""
FIGURE_TYPES = frozenset({"image/png", "image/jpeg", "image/svg+xml"})
TEMPLATE_NAME = "harness_report.html.j2"


class ReportError(HarnessError):
    pass


def render_report(notebook: Path, target: Path, meta: dict | None = None, study=None,
                  reference_root: Path | None = None) -> Path:
    """Render an executed notebook of a run as ``target`` (see the module's docstring).

    ``meta`` is the run's run.json as it will be at the end of the run (status, end time);
    by default the run.json beside the notebook. ``study`` gives the title and citation.
    """
    import nbformat

    notebook = Path(notebook)
    if meta is None:
        meta = json.loads((notebook.parent / "run.json").read_text())
    nb = nbformat.read(str(notebook), as_version=4)
    citation = study.citation.text() if study is not None and study.citation else ""
    nb.metadata["title"] = sections.title(meta, getattr(study, "title", ""))
    describe_figures(nb)
    progress_as_log(nb)
    nb.cells.insert(0, _html_cell(sections.banner(meta, citation)))
    nb.cells.append(_html_cell(sections.reference_section(notebook.parent, meta, reference_root)))
    kernel = " ".join(filter(None, (nb.metadata.get("kernelspec", {}).get("display_name"),
                                    nb.metadata.get("language_info", {}).get("version"))))
    nb.cells.append(_html_cell(sections.provenance_section(meta, citation, kernel)))
    body = export_html(nb, notebook.parent)
    fetched = external_fetches(body)
    if fetched:
        raise ReportError(f"the report of {notebook} would fetch {', '.join(sorted(set(fetched))[:5])}",
                          "make the notebook's outputs self-contained (embedded images, no remote scripts)")
    target.write_text(body)
    return target


def progress_as_log(nb) -> None:
    """Progress lines (:data:`harness.progress.LINE`) move from standard error to a standard
    output stream just before it: a report shows stderr as an alarm, and how long each phase
    took is a record, not one. Anything else on stderr (a warning) stays there."""
    import nbformat

    from ..progress import LINE

    for cell in nb.cells:
        outputs = []
        for output in cell.get("outputs", []):
            if output.get("output_type") != "stream" or output.get("name") != "stderr":
                outputs.append(output)
                continue
            # a line rewritten in place (\r) is what its last rewrite says
            lines = [([part for part in line.split("\r") if part] or [""])[-1]
                     for line in output.text.split("\n")]
            log = [line for line in lines if LINE.match(line)]
            rest = [line for line in lines if line.strip() and not LINE.match(line)]
            if log:
                outputs.append(nbformat.v4.new_output("stream", name="stdout",
                                                      text="\n".join(log) + "\n"))
            if rest:
                outputs.append(nbformat.v4.new_output("stream", name="stderr",
                                                      text="\n".join(rest) + "\n"))
        if "outputs" in cell:
            cell.outputs = outputs


def describe_figures(nb) -> None:
    """Give every figure an alternative text: the heading of the section it stands in."""
    heading = "the notebook"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = re.findall(r"^#+\s+(.+?)\s*$", cell.source, re.MULTILINE)
            heading = found[-1] if found else heading
        for output in cell.get("outputs", []):
            if FIGURE_TYPES & set(output.get("data", {})):
                output.setdefault("metadata", {})["alt"] = f"Figure: {heading}"


def _html_cell(html: str):
    import nbformat

    cell = nbformat.v4.new_code_cell(source="")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": html})]
    return cell


def export_html(nb, folder: Path) -> str:
    """The notebook as offline HTML: the policy of the module's docstring, applied by nbconvert."""
    import jinja2
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    config = Config({"TagRemovePreprocessor": {"enabled": True,
                                               "remove_cell_tags": set(REMOVE_CELL_TAGS)}})
    exporter = HTMLExporter(config=config, template_name="lab", template_file=TEMPLATE_NAME,
                            extra_loaders=[jinja2.DictLoader({TEMPLATE_NAME: OFFLINE_TEMPLATE})],
                            exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True, embed_images=True)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"path": str(folder)},
                                                         "harness_css": sections.STYLE})
    return body


# -- what a browser would fetch ------------------------------------------------------------
_FETCHING_ATTRS = {
    "script": ("src",), "img": ("src", "srcset"), "iframe": ("src",), "frame": ("src",),
    "embed": ("src",), "object": ("data",), "source": ("src", "srcset"), "track": ("src",),
    "video": ("src", "poster"), "audio": ("src",), "input": ("src",), "image": ("href", "xlink:href"),
    "use": ("href", "xlink:href"), "link": ("href",),
}
_REMOTE = re.compile(r"""^\s*(?:https?:)?//""", re.IGNORECASE)
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""", re.IGNORECASE)
_JS_IMPORT = re.compile(r"""\bimport\s*(?:\(\s*|[^'"()]*?\bfrom\s*)['"]((?:https?:)?//[^'"]+)""")


class _Fetches(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        for name in _FETCHING_ATTRS.get(tag, ()):
            for url in _urls(values.get(name) or "", srcset=name == "srcset"):
                self.urls.append(url)
        self._css(values.get("style") or "")
        self._in = tag if tag in ("style", "script") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "style":
            self._css(data)
        elif self._in == "script":
            self.urls += _JS_IMPORT.findall(data)

    def _css(self, text: str) -> None:
        for url, imported in _CSS_URL.findall(text):
            self.urls += [u for u in (url, imported) if u and _REMOTE.match(u)]


def _urls(value: str, srcset: bool) -> list[str]:
    candidates = [part.strip().split()[0] for part in value.split(",") if part.strip()] if srcset else [value]
    return [url for url in candidates if _REMOTE.match(url)]


def external_fetches(html: str) -> list[str]:
    """Every URL outside the page that a browser opening this HTML would request: script, image,
    frame, stylesheet and icon sources, CSS ``url()``/``@import`` and JavaScript module imports.
    Links a reader may click (``<a href>``) are not fetched and not listed."""
    parser = _Fetches()
    parser.feed(html)
    return parser.urls
