"""Long-run soak: does the harness itself stay flat over hours of measurement?

    python benchmarks/soak.py [--interval 60] [--out FILE] [--s3-only | --s4-only]
                              [--s3-mappers 48] [--s3-sizes 1,4,8] [--limit-minutes N]

Runs, back to back through ``harness run`` (as ``nox -s reproduce`` would), a
paper-scale slice of S3 (``profile=paper`` at one fan-in and a few sizes, all
three protocols, 1000 rounds per point: 885 s measured here for 1:48 at 1, 4
and 8 KB) and the S4 paper profile, and every ``--interval`` seconds records,
for the harness's processes -- the ``harness run`` command and the notebook
kernel that measures (its child) -- resident memory (now and peak, VmHWM),
open file descriptors and threads, from /proc. Each sample is printed and
appended as one JSON line to ``--out``; at the end a table gives, per process
and study, the first, last and largest values. Flat means: the last value is
close to the first after the lab is up, not growing with the number of points.

``--limit-minutes`` stops each run after that long (SIGTERM, so it ends
``incomplete`` and undoes its changes; SIGINT would be ignored by a run the
soak started from a background job) -- for a short check of the benchmark
itself. Run as root on an otherwise idle machine: the soak takes the machine
lock like any run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def proc_status(pid: int) -> dict | None:
    """RSS and peak RSS (kB), threads and open fds of ``pid``; None once it is gone."""
    try:
        fields = dict(line.split(":", 1) for line in
                      Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError):
        return None

    def kb(name: str) -> int:
        return int(fields.get(name, "0 kB").split()[0])

    return {"rss_kb": kb("VmRSS"), "peak_rss_kb": kb("VmHWM"),
            "threads": int(fields.get("Threads", "0")), "fds": fds}


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(p) for p in text.split()]


def harness_processes(cli_pid: int) -> dict[str, int]:
    """The ``harness run`` process and its notebook kernel (the Python child that measures)."""
    found = {"cli": cli_pid}
    for child in children(cli_pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        if any(b"ipykernel" in part or b"harness.run.kernels" in part for part in cmdline) or \
                (cmdline and b"python" in cmdline[0]):
            found["kernel"] = child
    return found


def soak_one(label: str, argv: list[str], interval: float, out, deadline: float | None) -> list:
    samples = []
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT)
    try:
        while proc.poll() is None:
            for role, pid in harness_processes(proc.pid).items():
                status = proc_status(pid)
                if status is None or status["rss_kb"] == 0:  # gone, or not yet Python
                    continue
                sample = {"study": label, "process": role, "pid": pid,
                          "minute": round((time.monotonic() - started) / 60, 2), **status}
                samples.append(sample)
                out.write(json.dumps(sample) + "\n")
                out.flush()
                print(f"{label:3s} {role:6s} t={sample['minute']:7.2f} min "
                      f"rss={status['rss_kb'] / 1024:7.1f} MiB peak={status['peak_rss_kb'] / 1024:7.1f}"
                      f" MiB fds={status['fds']:4d} threads={status['threads']:3d}", flush=True)
            if deadline is not None and time.monotonic() > deadline:
                proc.send_signal(signal.SIGTERM)
                deadline = None
            waited = 0.0
            while waited < interval and proc.poll() is None:
                time.sleep(1.0)
                waited += 1.0
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
    print(f"{label}: harness run exited {proc.returncode} after "
          f"{(time.monotonic() - started) / 60:.1f} min")
    return samples


def summary(samples: list[dict]) -> str:
    lines = [f"{'study':5s} {'process':7s} {'n':>4s} {'peak RSS MiB first/last/max':>28s} "
             f"{'fds first/last/max':>19s} {'threads first/last/max':>23s}"]
    keys = sorted({(s["study"], s["process"]) for s in samples})
    for study, role in keys:
        rows = [s for s in samples if (s["study"], s["process"]) == (study, role)]

        lines.append(f"{study:5s} {role:7s} {len(rows):4d} {_flm(rows, 'peak_rss_kb', 1024):>28s} "
                     f"{_flm(rows, 'fds'):>19s} {_flm(rows, 'threads'):>23s}")
    return "\n".join(lines)


def _flm(rows: list[dict], name: str, scale: float = 1.0) -> str:
    """first/last/max of one field."""
    values = [r[name] / scale for r in rows]
    return f"{values[0]:.0f}/{values[-1]:.0f}/{max(values):.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--out", default="soak.jsonl", help="JSON lines, one per sample")
    ap.add_argument("--s3-mappers", default="48", help="the S3 slice's fan-in(s), e.g. 48")
    ap.add_argument("--s3-sizes", default="1,4,8", help="the S3 slice's sizes in KB")
    ap.add_argument("--s3-only", action="store_true")
    ap.add_argument("--s4-only", action="store_true")
    ap.add_argument("--limit-minutes", type=float, default=None,
                    help="interrupt each run after this long (a short check of the soak)")
    args = ap.parse_args()
    harness = [sys.executable, "-m", "harness", "run", "-q"]
    plan = []
    if not args.s4_only:
        plan.append(("s3", [*harness, "notebooks/s3_tipc.ipynb", "-p", "profile", "paper",
                            "-p", "mappers", f"[{args.s3_mappers}]",
                            "-p", "sizes_kb", f"[{args.s3_sizes}]", "-p", "cpu_rounds", "0"]))
    if not args.s3_only:
        plan.append(("s4", [*harness, "notebooks/s4_mptcp.ipynb", "-p", "profile", "paper"]))
    samples = []
    with open(args.out, "a") as out:
        for label, argv in plan:
            deadline = (time.monotonic() + args.limit_minutes * 60
                        if args.limit_minutes is not None else None)
            samples += soak_one(label, argv, args.interval, out, deadline)
    print(summary(samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
