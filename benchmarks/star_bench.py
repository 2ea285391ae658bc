"""A star of N hosts at 100 Mbit/s: the harness's lab beside Mininet 2.3, side by side.

``lab_bench.py --star N`` calls :func:`bench_stars`. Each repetition runs each side
in a fresh process (``star_bench.py harness N`` here; ``mininet_star.py N`` under
Debian's python3 for Mininet), timed inside that process from the start of the
build to the end of the teardown, imports before it not counted on either side.
The sides alternate which goes first. The figure is build + teardown; the
verification after the build (pings) is timed apart and reported, not counted.

The harness's star is a forwarding namespace ``sw`` with one /30 per host out of
RFC 2544's 198.18.0.0/15 and a route to that prefix on each host (the lab's
switch is a router: the topology has no bridges); Mininet's is a Linux bridge
(``LinuxBridge``, no controller). Both shape both ends of every link with htb at
100 Mbit/s. Before and after each side the bench lists the named namespaces, the
links of this host's root namespace and Mininet's host shells, and reports what
a side left behind (other engineers' labs come and go meanwhile: only names a
side made are counted). The committed result is ``data/benchmarks/lab.json``:

    python benchmarks/lab_bench.py --star 48 --star 200 --runs 3 \
        --out data/benchmarks/lab.json
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MININET_PYTHON = "/usr/bin/python3"  # Debian's: Mininet's module lives in its dist-packages
TARGET_RATIO = 0.25
PREFIX = "198.18.0.0/15"
MAX_HOSTS = 4096  # /30s of PREFIX would allow 32768; Mininet takes ~0.4 s per host here


def star_topology(n: int):
    """N hosts ``h1..hN`` on ``sw`` at 100 Mbit/s, each link a /30 of 198.18.0.0/15."""
    from harness.topology.topology import TopologyBuilder

    builder = TopologyBuilder(f"star{n}").node("sw", forwarding=True)
    nets = itertools.islice(ipaddress.ip_network(PREFIX).subnets(new_prefix=30), n)
    for i, net in enumerate(nets, 1):
        port, host = list(net.hosts())
        builder.node(f"h{i}")
        builder.link((f"h{i}", "eth0", f"{host}/30"), ("sw", f"p{i}", f"{port}/30"),
                     rate_mbit=100)
        builder.route(f"h{i}", PREFIX, via=str(port))
    return builder.build(notes=f"benchmark star of {n} hosts")


def verify_star(lab, n: int) -> dict:
    """Every host pings its switch port, and h1 pings hN across the switch: one script,
    16 pings at a time. Returns the count that answered and the failures."""
    topo = lab.topology
    lines = []
    for i in range(1, n + 1):
        end = topo.interface(f"h{i}", "eth0")
        port = topo.interface("sw", f"p{i}")
        lines.append(f"nsenter --net={lab.node(f'h{i}').netns_path} ping -c 1 -W 2 {port.ip}"
                     f" >/dev/null 2>&1 && echo ok h{i} || echo fail h{i} {end.ip} &")
        if i % 16 == 0:
            lines.append("wait")
    last = topo.interface(f"h{n}", "eth0").ip
    lines.append(f"wait; nsenter --net={lab.node('h1').netns_path} ping -c 1 -W 2 {last} "
                 ">/dev/null 2>&1 && echo ok across || echo fail across")
    out = subprocess.run(["sh", "-c", "\n".join(lines)], capture_output=True, text=True,
                         timeout=60 + n).stdout.split("\n")
    ok = [line for line in out if line.startswith("ok ")]
    return {"pings": n + 1, "answered": len(ok),
            "failed": [line[5:] for line in out if line.startswith("fail ")]}


def harness_once(n: int) -> dict:
    """Build and tear down the star through the harness, in this process; JSON-able."""
    from harness.journal.journal import Journal
    from harness.lab.lab import Lab
    from harness.lab.probe import probe
    from harness.nodes import LocalNode

    topo = star_topology(n)
    caps = probe(LocalNode())  # once per run in a study too; not part of the figure
    with tempfile.TemporaryDirectory(prefix="harness-star-") as tmp:
        started = time.monotonic()
        journal = Journal(Path(tmp) / "journal.jsonl")
        lab = Lab(topo, journal, capabilities=caps)
        lab.build()
        built = time.monotonic()
        try:
            check = verify_star(lab, n)
        finally:
            verified = time.monotonic()
            lab.teardown()
        stopped = time.monotonic()
        left = sorted(p.name for p in Path("/run/netns").glob(f"{lab.prefix}-*"))
        return {"hosts": n, "build_s": built - started, "teardown_s": stopped - verified,
                "total_s": (built - started) + (stopped - verified),
                "verify_s": verified - built, "verify": check,
                "phases_s": lab.timings.phases_s, "requests": lab.timings.requests,
                "journal_records": len(journal.entries()),
                "pending_after": len(journal.pending()), "namespaces_left": left}


def _snapshot() -> dict:
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                           timeout=30).stdout
    names = {line.split(":")[1].strip().split("@")[0] for line in links.splitlines()
             if line.count(":") >= 2}
    netns = set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()
    shells = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True,
                            timeout=30).stdout
    mininet = {line.split()[0] for line in shells.splitlines() if "mininet:" in line}
    return {"links": names, "netns": netns, "mininet_shells": mininet}


def _left(before: dict, after: dict, own) -> dict:
    """What a side made and left: new names that match its own (Mininet: s1*, its shells)."""
    return {"links": sorted(n for n in after["links"] - before["links"] if own(n)),
            "mininet_shells": sorted(after["mininet_shells"] - before["mininet_shells"])}


def _loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def run_side(side: str, n: int) -> dict:
    before, load_before = _snapshot(), _loadavg()
    if side == "harness":
        argv = [sys.executable, str(HERE / "star_bench.py"), "harness", str(n)]
        own = lambda name: False  # noqa: E731 -- the harness makes nothing in the root ns
    else:
        argv = [MININET_PYTHON, str(HERE / "mininet_star.py"), str(n)]
        own = lambda name: name == "s1" or name.startswith("s1-")  # noqa: E731
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if out.returncode != 0:
        raise SystemExit(f"{side} star of {n} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["left"] = _left(before, _snapshot(), own)
    result["load_1min"] = [load_before, _loadavg()]
    if side == "mininet":
        result["stderr_lines"] = len(out.stderr.splitlines())
    return result


def summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "all": values}


def bench_stars(sizes: list[int], runs: int) -> dict:
    if not Path(MININET_PYTHON).exists() or subprocess.run(
            [MININET_PYTHON, "-c", "import mininet.net"], capture_output=True).returncode:
        raise SystemExit("Mininet 2.3 is not installed for Debian's python3: "
                         "apt-get install -y --no-install-recommends mininet bridge-utils")
    out = {"command": "python benchmarks/lab_bench.py " + " ".join(
        f"--star {n}" for n in sizes) + f" --runs {runs}", "date": time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cores": os.cpu_count(),
        "kernel": os.uname().release, "target_ratio": TARGET_RATIO, "stars": {}}
    for n in sizes:
        reps = []
        for r in range(runs):
            order = ("harness", "mininet") if r % 2 == 0 else ("mininet", "harness")
            rep = {side: run_side(side, n) for side in order}
            rep["ratio"] = rep["harness"]["total_s"] / rep["mininet"]["total_s"]
            reps.append(rep)
            print(f"star {n} rep {r + 1}: harness {rep['harness']['total_s']:.2f} s "
                  f"(build {rep['harness']['build_s']:.2f} + teardown "
                  f"{rep['harness']['teardown_s']:.2f}), Mininet "
                  f"{rep['mininet']['total_s']:.2f} s, ratio {rep['ratio']:.3f}, "
                  f"load {rep['harness']['load_1min']} / {rep['mininet']['load_1min']}",
                  flush=True)
        h = [rep["harness"]["total_s"] for rep in reps]
        m = [rep["mininet"]["total_s"] for rep in reps]
        ratios = [rep["ratio"] for rep in reps]
        star = out["stars"][str(n)] = {
            "harness_total_s": summary(h), "mininet_total_s": summary(m),
            "harness_build_s": summary([rep["harness"]["build_s"] for rep in reps]),
            "harness_teardown_s": summary([rep["harness"]["teardown_s"] for rep in reps]),
            "harness_verify_s": summary([rep["harness"]["verify_s"] for rep in reps]),
            "mininet_build_s": summary([rep["mininet"]["build_s"] for rep in reps]),
            "mininet_teardown_s": summary([rep["mininet"]["teardown_s"] for rep in reps]),
            "ratio_of_medians": statistics.median(h) / statistics.median(m),
            "ratio_geomean": statistics.geometric_mean(ratios),
            "ratio_range": [min(ratios), max(ratios)],
            "met": max(ratios) <= TARGET_RATIO,
            "repetitions": reps}
        print(f"star {n}: harness median {star['harness_total_s']['median']:.2f} s "
              f"[{min(h):.2f}, {max(h):.2f}], Mininet {star['mininet_total_s']['median']:.2f} s "
              f"[{min(m):.2f}, {max(m):.2f}]; ratio of medians {star['ratio_of_medians']:.3f}, "
              f"per repetition {min(ratios):.3f}-{max(ratios):.3f} (target <= {TARGET_RATIO}: "
              f"{'MET' if star['met'] else 'NOT MET'}); harness verification "
              f"{star['harness_verify_s']['median']:.2f} s, not counted")
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["harness"]:
        print(json.dumps(harness_once(int(sys.argv[2]))))
    else:
        raise SystemExit("usage: python benchmarks/lab_bench.py --star N [--runs R]")
