"""A sweep on one allocation's width of nodes, then on two, side by side: what Slurm buys.

    python benchmarks/slurm_bench.py [--points 4] [--repetitions 1] [--count 3] [--out FILE]

Starts a real Slurm on this machine (tests/integration/slurm/cluster.py: munged, slurmctld
and four slurmd, each compute node one of tests/integration/machines.py's machines: a
namespace with its own hostname, /run and sshd) and submits
the same sweep of the ping study (tests/studies/ping_study: two machine roles, so each job
takes two nodes, ``--exclusive``) twice through ``harness batch --slurm ... --wait``:

- *serial*: ``--nodelist=n[1-2]``, so the points' jobs follow one another on one pair;
- *spread*: all four nodes, so two jobs run side by side.

The order of the two alternates per repetition (serial first in even ones), each in a data
folder of its own. From the archive and Slurm, per variant: the wall time (submission to
the last run's end), their ratio, and per job the overhead from submission to the
notebook's first code cell, split into the queue (submission to Slurm's StartTime), the
harness starting in the job (to run.json ``started``) and the kernel starting (to the first
code cell's papermill ``start_time``). Both share this machine's cores: on a 2-core host the
two side-by-side runs contend for CPU, which a real cluster's nodes do not; the report
prints the host load beside the numbers. Run as root; it changes nothing outside what it
creates (the cluster's namespaces, bridge, daemons and temporary folder, all removed).
Slurm's StartTime has whole seconds, so queue and harness start are each +-1 s (a queue of
-0.7 s is a job that started within the second it was submitted).

Measured 2026-11-26 on this 2-core machine, shared with other engineers' runs, 4 points,
count 3: on the machines fixture at host load 2.3-2.9, spread / serial wall time 0.60
(76.6 vs 45.7 s), submission to the first job's first code cell 3.4 s (serial) and 5.8 s
(two jobs starting at once), every job 3.6-5.1 s from Slurm's start to its first code
cell. Earlier, on the cluster's first nodes of its own (a host bridge) at host load
2.9-6.9: 0.71 (86.5 vs 61.1 s), 0.78 (76.4 vs 59.2 s) and 0.74 (111.4 vs 82.3 s); first
code cell 3.8-4.1 s after submission alone, 7.0-13.2 s when two jobs started at once.

Measured again 2026-11-27 (jobs end with a one-line SIGTERM path; the data folder is made
before submitting), 2 repetitions: spread / serial 0.72 (88.3 vs 123.2 s, host load
3.7-5.3) and 0.85 (77.1 vs 90.9 s, load 5.3 falling to 2.0 while serial ran); submission
to the first code cell 4.2 and 6.4 s for a job alone, 7.4-8.2 s for two starting at once;
every job 3.2-10.2 s from Slurm's start to its first code cell. One repetition just
before, at load 14 falling to 6 during the serial variant, gave 0.33 (75.4 vs 227.3 s):
the variants then ran on different machines in effect, so it says nothing of Slurm.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.integration.slurm.cluster import running_cluster, skip_reason  # noqa: E402

PING = ROOT / "tests" / "studies" / "ping_study.ipynb"
VARIANTS = {"serial": "--nodelist=n[1-2]", "spread": ""}


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def write_sweep(path: Path, cluster, points: int, count: int) -> None:
    path.write_text(yaml.safe_dump({
        "notebook": str(PING),
        "parameters": {"count": count, "interval_s": 0.1},
        "sweep": {"rate_mbit": [10 * (i + 1) for i in range(points)]},
        "inventory_template": {
            "ssh": {"user": "root", "key": str(cluster.user_key),
                    "known_hosts": str(cluster.known_hosts)},
            "interfaces": {"eth0": {"device": "mgmt0", "address": "{ip}/24"}}},
    }, sort_keys=False))


def slurm_start(cluster, job: str) -> dict[int, float]:
    """Each array task's StartTime (Slurm gives whole seconds, local time)."""
    out = cluster.command("scontrol", "show", "job", "-o", job).stdout
    starts = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields.get("ArrayTaskId", "").isdigit() and fields.get("StartTime") not in (None,
                                                                                        "Unknown"):
            starts[int(fields["ArrayTaskId"])] = datetime.fromisoformat(
                fields["StartTime"]).timestamp()
    return starts


def first_code_cell(run: Path) -> float:
    nb = json.loads((run / "notebook.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    return ts(cell["metadata"]["papermill"]["start_time"])


def one_variant(cluster, name: str, workdir: Path, points: int, count: int) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    data = workdir / f"data-{name}"
    data.mkdir()  # the shared data folder exists before a submission (harness refuses else)
    sweep = workdir / f"sweep-{name}.yaml"
    write_sweep(sweep, cluster, points, count)
    load = os.getloadavg()[0]
    out = cluster.harness("batch", str(sweep), "--slurm", f"--time=20 {VARIANTS[name]}".strip(),
                          "--wait", "--share-machine", timeout=3600,
                          env={"HARNESS_DATA": str(data)})
    if out.returncode != 0:
        raise SystemExit(f"{name}: harness batch failed:\n{out.stdout}\n{out.stderr}")
    [record] = (data / "slurm" / "submissions").glob("*.json")
    sub = json.loads(record.read_text())
    submitted = ts(sub["submitted"])
    starts = slurm_start(cluster, sub["job_id"])
    jobs = []
    for run in sorted((data / "runs" / "ping-demo").iterdir()):
        meta = json.loads((run / "run.json").read_text())
        task = meta["slurm"]["array_task_id"]
        first = first_code_cell(run)
        jobs.append({"task": task, "status": meta["status"], "nodes": meta["slurm"]["node_list"],
                     "queue_s": starts[task] - submitted,
                     "harness_start_s": ts(meta["started"]) - starts[task],
                     "kernel_start_s": first - ts(meta["started"]),
                     "submit_to_first_cell_s": first - submitted,
                     "ended": ts(meta["ended"])})
    wall = max(j["ended"] for j in jobs) - submitted
    cluster.wait_idle()
    return {"variant": name, "wall_s": wall, "jobs": sorted(jobs, key=lambda j: j["task"]),
            "load_before": load, "load_after": os.getloadavg()[0],
            "nodes_used": sorted({j["nodes"] for j in jobs})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=4)
    ap.add_argument("--repetitions", type=int, default=1)
    ap.add_argument("--count", type=int, default=3, help="echo requests per point")
    ap.add_argument("--out", help="append the results as JSON lines here")
    args = ap.parse_args()
    reason = skip_reason()
    if reason:
        raise SystemExit(f"cannot start a Slurm here: {reason}")
    results = []
    with tempfile.TemporaryDirectory(prefix="harness-slurm-bench-") as tmp, \
            running_cluster(4) as cluster:
        for rep in range(args.repetitions):
            order = ["serial", "spread"] if rep % 2 == 0 else ["spread", "serial"]
            for name in order:
                result = one_variant(cluster, name, Path(tmp) / f"rep{rep}", args.points,
                                     args.count)
                result["repetition"] = rep
                results.append(result)
                print(f"rep {rep} {name}: wall {result['wall_s']:.1f} s, nodes "
                      f"{result['nodes_used']}, load {result['load_before']:.2f} -> "
                      f"{result['load_after']:.2f}", flush=True)
    if args.out:
        with open(args.out, "a") as fh:
            for r in results:
                fh.write(json.dumps({**r, "time": time.time()}) + "\n")
    print(f"\n{args.points} points of the ping study (count {args.count}), 2 nodes per job, "
          f"{args.repetitions} repetition(s)")
    print(f"{'variant':8s} {'wall s':>8s}  per job (s): {'queue':>6s} {'harness':>8s} "
          f"{'kernel':>7s} {'submit->1st cell':>17s}   (queue, harness: +-1 s)")
    for r in results:
        for j in r["jobs"]:
            print(f"{r['variant']:8s} {r['wall_s']:8.1f}  task {j['task']} {j['nodes']:8s}"
                  f" {j['queue_s']:6.1f} {j['harness_start_s']:8.1f} {j['kernel_start_s']:7.1f}"
                  f" {j['submit_to_first_cell_s']:17.1f}")
    for rep in range(args.repetitions):
        walls = {r["variant"]: r["wall_s"] for r in results if r["repetition"] == rep}
        print(f"rep {rep}: spread / serial wall time = {walls['spread'] / walls['serial']:.2f}")
    firsts = [r["jobs"][0] for r in results]
    print("first task of each submission, submission -> first code cell: "
          + ", ".join(f"{j['submit_to_first_cell_s']:.1f}" for j in firsts) + " s")
    starts = [j["harness_start_s"] + j["kernel_start_s"] for r in results for j in r["jobs"]]
    print(f"every job, Slurm start -> first code cell: {min(starts):.1f} .. {max(starts):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
