"""docs/studies/s0.md's side-by-side relay table is the archived benchmark's, not an older run's
(issue 39: it showed the srd 1.2 run after data/benchmarks/relay.json had become srd 1.3's)."""

from __future__ import annotations

import json
from pathlib import Path

from .test_relay_bench import bench

ROOT = Path(__file__).resolve().parents[3]


def table_in(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| relays | relay | Gbit/s"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def test_the_s0_page_shows_the_side_by_side_table_of_data_benchmarks_relay_json():
    summary = json.loads((ROOT / "data" / "benchmarks" / "relay.json").read_text())["summary"]
    page = (ROOT / "docs" / "studies" / "s0.md").read_text()
    assert table_in(page) == bench.side_by_side(summary), (
        "regenerate the table: benchmarks/relay_bench.py's side_by_side on data/benchmarks/relay.json")
