"""Benchmarks behind the spine's targets (run as root; prints a table, writes JSON).

    python benchmarks/lab_bench.py [--builds 5] [--s4] [--s4-paper] [--out FILE]
    python benchmarks/lab_bench.py --star 48 --star 200 [--runs 3] [--out FILE]

* 3-node lab (S4's topology) built in <= 2 s, excluding verification traffic,
  and torn down in <= 1 s: median and worst of --builds repetitions.
* shaped links reach >= 97 % of their configured rate in verification.
* --s4: the S4 quick profile end to end through `harness run` (target <= 3 min);
  --s4-paper: the paper-scale profile (target <= 15 min).
* harness overhead per measurement point (<= 5 %), from the S4 run's table.
* --star N: a star of N hosts at 100 Mbit/s built and torn down through the harness
  (topology + Lab) beside Mininet 2.3 (``benchmarks/mininet_star.py``, Debian's
  ``mininet`` package: ``apt-get install -y --no-install-recommends mininet
  bridge-utils``), each side in a fresh process per repetition, the sides
  alternating which goes first. Target: build + teardown <= 0.25x Mininet's
  (issue 27). Verification after the build (pings) is timed apart and reported.
  What each side leaves behind is checked (namespaces, links, Mininet's shells).
  See ``star_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from harness.journal.journal import Journal
from harness.lab.lab import Lab
from harness.lab.probe import probe
from harness.lab.verify import verify_lab
from harness.nodes import LocalNode
from harness.studies.s4 import study as s4

ROOT = Path(__file__).resolve().parents[1]


def bench_lab(builds: int) -> dict:
    topo = s4.topology(s4.Params.resolve())
    caps = probe(LocalNode())
    build, teardown = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(builds):
            journal = Journal(Path(tmp) / f"j{i}.jsonl")
            lab = Lab(topo, journal, capabilities=caps)
            with lab:
                pass
            build.append(lab.timings.build_s)
            teardown.append(lab.timings.teardown_s)
        journal = Journal(Path(tmp) / "verify.jsonl")
        with Lab(topo, journal, capabilities=caps) as lab:
            checks = verify_lab(journal, lab, seconds=2)
    return {
        "build_s": {"median": statistics.median(build), "max": max(build), "all": build},
        "teardown_s": {"median": statistics.median(teardown), "max": max(teardown),
                       "all": teardown},
        "verification": [c.to_dict() for c in checks],
        "min_rate_ratio": min(c.rate_ratio for c in checks if c.rate_ratio is not None),
    }


def bench_s4(profile: str) -> dict:
    with tempfile.TemporaryDirectory() as data:
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "harness", "run", "-q",
                              str(ROOT / "notebooks" / "s4_mptcp.ipynb"), "-p", "profile", profile],
                             capture_output=True, text=True, env={**__import__("os").environ,
                                                                  "HARNESS_DATA": data})
        seconds = time.monotonic() - started
        if out.returncode != 0:
            raise SystemExit(f"S4 {profile} failed:\n{out.stderr[-3000:]}")
        (run,) = (Path(data) / "runs" / "s4").iterdir()
        frame = pd.read_parquet(run / "results.parquet")
        meta = json.loads((run / "run.json").read_text())
    share = (frame.wall_s - frame.tool_s) / frame.wall_s
    best = frame[frame.tool == "iperf3"].groupby("transport").goodput_mbit.max()
    return {
        "profile": profile, "seconds": seconds, "points": len(frame),
        "harness_overhead_share": {"median": float(share.median()), "max": float(share.max())},
        "tcp_peak_mbit": float(best.get("tcp", float("nan"))),
        "mptcp_peak_mbit": float(best.get("mptcp", float("nan"))),
        "lab_build_s": meta["testbed"]["build_s"], "lab_teardown_s": meta["testbed"]["teardown_s"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builds", type=int, default=5)
    ap.add_argument("--s4", action="store_true")
    ap.add_argument("--s4-paper", action="store_true")
    ap.add_argument("--star", type=int, action="append", metavar="N",
                    help="a star of N hosts beside Mininet (repeatable: --star 48 --star 200)")
    ap.add_argument("--runs", type=int, default=3, help="repetitions per side (--star)")
    ap.add_argument("--out", help="JSON output file (the repository keeps data/benchmarks/lab.json)")
    ap.add_argument("--replace", action="store_true",
                    help="replace --out if it exists (else refused before measuring)")
    args = ap.parse_args()
    if args.out and Path(args.out).exists() and not args.replace:
        ap.error(f"{args.out} exists: a benchmark result is never overwritten silently; "
                 "pass --replace to replace it, or another --out")
    if args.star:
        from star_bench import MAX_HOSTS, bench_stars

        bad = [n for n in args.star if not 1 <= n <= MAX_HOSTS]
        if bad or args.runs < 1:
            ap.error(f"--star takes 1..{MAX_HOSTS} hosts (got {bad}) and --runs at least 1 "
                     f"(got {args.runs}): a /30 each out of 198.18.0.0/15")
        if os.geteuid() != 0:
            ap.error("--star builds namespaces and Mininet's network: run it as root")

        result = bench_stars(args.star, args.runs)
        if args.out:
            _write(args.out, result)
        return
    result = {"lab": bench_lab(args.builds)}
    lab = result["lab"]
    print(f"lab build     median {lab['build_s']['median']:.3f} s  max {lab['build_s']['max']:.3f} s"
          f"  (target <= 2 s)")
    print(f"lab teardown  median {lab['teardown_s']['median']:.3f} s  "
          f"max {lab['teardown_s']['max']:.3f} s  (target <= 1 s)")
    for c in lab["verification"]:
        print(f"  {c['direction']:16s} {c['link_layer_mbit']:8.1f} / {c['configured_mbit']:g} Mbit/s"
              f"  {c['rate_ratio']:.1%}")
    print(f"min shaped-link ratio {lab['min_rate_ratio']:.1%} (target >= 97%)")
    for flag, profile in ((args.s4, "quick"), (args.s4_paper, "paper")):
        if flag:
            r = result[f"s4_{profile}"] = bench_s4(profile)
            print(f"S4 {profile}: {r['seconds']:.0f} s for {r['points']} points; TCP peak "
                  f"{r['tcp_peak_mbit']:.0f}, MPTCP peak {r['mptcp_peak_mbit']:.0f} Mbit/s; "
                  f"harness overhead median {r['harness_overhead_share']['median']:.1%}, "
                  f"max {r['harness_overhead_share']['max']:.1%}")
    if args.out:
        _write(args.out, result)


def _write(out: str, result: dict) -> None:
    """Whole or nothing: a temporary file beside ``out``, renamed over it."""
    tmp = Path(out).with_name(f".{Path(out).name}.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    main()
