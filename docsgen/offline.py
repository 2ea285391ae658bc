"""Check that a built site fetches nothing from outside itself: no script, style sheet, font,
image, frame or media file by an http(s) or protocol-relative (``//host``) address, in any HTML
page (attributes, ``<style>`` and ``style=``) or style sheet (``url()``, ``@import``). Links a
reader may follow (``<a href>``) are not fetched and are allowed.

    python docsgen/offline.py build/site     # exit 1 with one line per outside reference
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

OUTSIDE = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)|@import\s+(['"])(.*?)\3""", re.IGNORECASE)
# attributes whose address the browser fetches on its own
FETCHED = {"src", "srcset", "data", "poster", "background", "xlink:href"}
LINK_FETCHED_RELS = {"stylesheet", "icon", "shortcut", "apple-touch-icon", "preload", "prefetch",
                     "modulepreload", "manifest", "mask-icon", "dns-prefetch", "preconnect"}


def css_outside(css: str) -> list[str]:
    """The outside addresses a style sheet's ``url()`` and ``@import`` fetch."""
    found = []
    for match in CSS_URL.finditer(css):
        address = match[2] if match[2] is not None else match[4]
        if address and OUTSIDE.match(address):
            found.append(address.strip())
    return found


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.outside: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        for name, value in attrs:
            if value is None:
                continue
            if name == "style":
                self.outside += [f"<{tag} style> {u}" for u in css_outside(value)]
            elif name in FETCHED:
                addresses = [part.split()[0] for part in value.split(",") if part.strip()] \
                    if name == "srcset" else [value]
                self.outside += [f"<{tag} {name}> {a}" for a in addresses if OUTSIDE.match(a)]
        if tag == "link" and values.get("href") and OUTSIDE.match(values["href"]):
            rels = set((values.get("rel") or "").lower().split())
            if rels & LINK_FETCHED_RELS or not rels:
                self.outside.append(f"<link rel={values.get('rel')}> {values['href']}")
        if tag == "style":
            self._in_style = True

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False

    def handle_data(self, data):
        if self._in_style:
            self.outside += [f"<style> {u}" for u in css_outside(data)]


def outside_references(site: Path) -> list[str]:
    """``file: what`` for every outside fetch in the site's HTML pages and style sheets."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix == ".html":
            parser = _Page()
            parser.feed(path.read_text(encoding="utf-8", errors="replace"))
            found += [f"{path.relative_to(site)}: {what}" for what in parser.outside]
        elif path.suffix == ".css":
            found += [f"{path.relative_to(site)}: url {u}"
                      for u in css_outside(path.read_text(encoding="utf-8", errors="replace"))]
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python docsgen/offline.py SITE_DIR (a built site, e.g. build/site)", file=sys.stderr)
        return 2
    site = Path(argv[0])
    if not any(site.rglob("*.html")):
        print(f"docsgen: {site} holds no HTML page: build the site first (nox -s docs)", file=sys.stderr)
        return 2
    found = outside_references(site)
    for line in found:
        print(f"docsgen: fetched from outside the site: {line}", file=sys.stderr)
    if found:
        print(f"docsgen: {len(found)} outside reference(s); the site must open offline", file=sys.stderr)
        return 1
    print(f"docsgen: {site} fetches nothing from outside itself")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
