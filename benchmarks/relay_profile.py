#!/usr/bin/env python3
"""Where a relay spends its CPU: srd variants beside peer relays, interleaved, per GB moved.

benchmarks/relay_bench.py compares srd (one configuration) with its peers on every measure;
this one compares *candidates* for srd's configuration or code with each other and with a
peer, on the bulk path only, and counts what the relay does per GB (issue 39 item 3): its
system calls (all, and splice/epoll/futex/... each) and context switches (``perf stat``
attached to the relay's processes while iperf3 runs), its own CPU seconds (/proc), the
host's CPU seconds (/proc/stat), the sender's and the middle's retransmits. Same lab as
relay_bench (client -- middle -- server namespaces, unshaped veth); the variants run in an
order shuffled per run from ``--seed``; each variant's ratio to ``--reference`` is paired per
run, with its 95 % interval over the runs (harness.verdicts.intervals.mean_estimate).

A variant is NAME=KIND[:KEY=VALUE...]:
  srd[:lowat=BYTES][:pipe=BYTES][:src=FILE.c]   srd (``src``: another srd.c, compiled here
                                                with srd's flags), --notsent-lowat, --pipe-size
  gosplice | haproxy | socat | nginx            a peer, configured as harness.relay.peers does
``--hops 1,2`` measures each variant with one relay and with two in a row (NAME2).

Usage (root): python benchmarks/relay_profile.py --variant srd=srd --variant srd0=srd:lowat=0
              --variant go=gosplice --runs 3 --duration 3 [--perf] [--out FILE]
Everything it creates is journalled and removed at the end, also on error or Ctrl-C.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location("relay_bench", Path(__file__).with_name("relay_bench.py"))
bench = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("relay_bench", bench)
_SPEC.loader.exec_module(bench)

#: the system calls counted one by one (perf tracepoints syscalls:sys_enter_NAME)
SYSCALLS = ("splice", "epoll_wait", "epoll_pwait", "epoll_ctl", "recvfrom", "sendto", "read",
            "write", "futex", "nanosleep", "sched_yield", "getsockopt")
#: kernel functions whose share of the relay's samples (callees included) --record prints
PROFILED = ("entry_SYSCALL_64", "do_syscall_64", "__x64_sys_splice", "__x64_sys_epoll_wait",
            "__x64_sys_epoll_pwait", "__x64_sys_epoll_ctl", "__x64_sys_futex", "__x64_sys_nanosleep",
            "tcp_sendmsg_locked", "tcp_splice_read", "tcp_write_xmit", "tcp_push", "tcp_rcv_established",
            "tcp_v4_rcv", "__tcp_transmit_skb", "veth_xmit", "handle_softirqs", "net_rx_action",
            "__release_sock", "tcp_ack", "schedule", "asm_sysvec_apic_timer_interrupt",
            "__netif_receive_skb_one_core", "process_backlog")
PEER_KINDS = ("gosplice", "haproxy", "socat", "nginx")
BASE_PORT = 5300


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str
    lowat: int | None = None
    pipe: int | None = None
    src: str | None = None


def parse_variant(text: str) -> Variant:
    """``'srd0=srd:lowat=0'`` -> Variant('srd0', 'srd', lowat=0); SystemExit on a bad one."""
    name, sep, rest = text.partition("=")
    if not sep or not name.isidentifier() or name.endswith("2"):
        raise SystemExit(f"--variant {text!r}: write NAME=KIND[:KEY=VALUE...] with NAME an "
                         "identifier not ending in 2 (NAME2 is its two-relay path)")
    kind, *opts = rest.split(":")
    if kind not in ("srd", *PEER_KINDS):
        raise SystemExit(f"--variant {text!r}: kind {kind!r} is not srd or one of {PEER_KINDS}")
    values: dict = {}
    for opt in opts:
        key, sep, value = opt.partition("=")
        if kind != "srd" or key not in ("lowat", "pipe", "src") or not sep:
            raise SystemExit(f"--variant {text!r}: {opt!r}: srd takes lowat=, pipe=, src=; "
                             "peers take no options")
        if key == "src":
            if not os.path.isfile(value):
                raise SystemExit(f"--variant {text!r}: no file {value}")
            values[key] = os.path.abspath(value)
        elif value.isdigit():
            values[key] = int(value)
        else:
            raise SystemExit(f"--variant {text!r}: {key} must be a number of bytes")
    return Variant(name, kind, **values)


@dataclass
class Test:
    path: str  # variant name, NAME2 for two relays
    run: int
    throughput_gbps: float | None = None
    gbytes: float | None = None
    relay_cpu_s_per_gb: float | None = None
    host_cpu_s_per_gb: float | None = None
    host_busy_cores: float | None = None
    retransmits: int | None = None
    middle_retransmits: int | None = None
    syscalls_per_gb: float | None = None
    context_switches_per_gb: float | None = None
    by_syscall_per_gb: dict = field(default_factory=dict)
    profile: list[str] = field(default_factory=list)  # perf report's top symbols (--record)
    errors: list[str] = field(default_factory=list)


def compile_srd(src: str, folder: str) -> str:
    """``src`` compiled with srd's own flags (harness.relay.build) into ``folder``."""
    from harness.relay.build import PROGRAM

    out = os.path.join(folder, f"srd-{len(os.listdir(folder))}")
    subprocess.run(["gcc", *PROGRAM.cflags, "-o", out, src], check=True, timeout=120)
    return out


def perf_counts(text: str) -> dict[str, float]:
    """perf stat -x, output -> {event: count} (events perf could not count are left out)."""
    out = {}
    for line in text.splitlines():
        cols = line.split(",")
        if len(cols) > 2 and cols[0].replace(".", "").isdigit():
            out[cols[2]] = float(cols[0])
    return out


def group_pids(groups: list[int]) -> list[int]:
    """Every process in the process groups ``groups`` (a relay, the shell that started it)."""
    from harness.nodes.procfs import read_stat

    stats = (read_stat(int(e)) for e in filter(str.isdigit, os.listdir("/proc")))
    return [s.pid for s in stats if s is not None and s.pgid in groups]


class Profile:
    def __init__(self, journal, line, args, tmp, binaries: dict[str, str], go_binary):
        self.journal, self.line, self.args, self.tmp = journal, line, args, tmp
        self.binaries, self.go_binary = binaries, go_binary
        self.pids: list[int] = []

    def command(self, v: Variant, listen: str, target: str) -> str:
        from harness.relay import peers
        from harness.relay.spec import NOTSENT_LOWAT

        if v.kind != "srd":
            return peers.command(v.kind, listen, target, self.tmp, binary=self.go_binary)
        argv = [self.binaries[v.name], "--listen", listen, "--target", target,
                "--notsent-lowat", str(NOTSENT_LOWAT if v.lowat is None else v.lowat)]
        if v.pipe is not None:
            argv += ["--pipe-size", str(v.pipe)]
        return "exec " + shlex.join(argv)

    @contextmanager
    def path(self, v: Variant, hops: int, port: int):
        middle = self.line.node("middle")
        self.pids = []
        with ExitStack() as stack:
            target = f"{bench.SERVER_IP}:{bench.IPERF_PORT}"
            if hops == 2:
                second = f"{bench.MIDDLE_RIGHT_IP}:{port + 1}"
                proc = stack.enter_context(self.journal.process(middle, self.command(v, second, target)))
                self.pids.append(proc.pid)
                bench.wait_listening(middle, port + 1)
                target = second
            proc = stack.enter_context(self.journal.process(
                middle, self.command(v, f"{bench.MIDDLE_LEFT_IP}:{port}", target)))
            self.pids.append(proc.pid)
            bench.wait_listening(middle, port)
            yield bench.MIDDLE_LEFT_IP, port

    def measure(self, v: Variant, hops: int, run: int, port: int) -> Test:
        test = Test(v.name + ("2" if hops == 2 else ""), run)
        with self.path(v, hops, port) as (host, port):
            perf = None
            if self.args.perf:
                events = ["raw_syscalls:sys_enter", "context-switches",
                          *(f"syscalls:sys_enter_{s}" for s in SYSCALLS)]
                perf = subprocess.Popen(
                    ["perf", "stat", "-x", ",", "-p", ",".join(map(str, group_pids(self.pids))),
                     *(a for e in events for a in ("-e", e)),
                     # splices that moved nothing (EAGAIN): the last event, so its line is last
                     "-e", "syscalls:sys_exit_splice", "--filter", "ret == -11"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                time.sleep(0.3)  # perf attaches
            record = None
            if self.args.record:
                data = os.path.join(self.tmp, f"perf-{test.path}-{run}.data")
                record = subprocess.Popen(
                    ["perf", "record", "-q", "-g", "-o", data, "-p", ",".join(map(str, group_pids(self.pids)))],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.3)
            cpu0 = sum(map(bench.group_cpu_seconds, self.pids))
            retr0 = self.middle_retransmits()
            host0 = bench.host_cpu_times()
            t0 = time.monotonic()
            out = self.line.node("client").run(
                ["iperf3", "-c", host, "-p", str(port), "-t", str(self.args.duration), "-O", "1",
                 "-J"], timeout=self.args.duration + 60, check=False)
            host1 = bench.host_cpu_times()
            cpu = sum(map(bench.group_cpu_seconds, self.pids)) - cpu0
            elapsed = time.monotonic() - t0
            test.middle_retransmits = self.middle_retransmits() - retr0
            if record is not None:
                record.send_signal(2)
                record.wait(timeout=60)
                rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--children",
                                      "--sort", "sym", "-g", "none", "--percent-limit", "0.5"],
                                     capture_output=True, text=True)
                test.profile = [ln for ln in rep.stdout.splitlines()
                                if any(f"] {sym}" in ln for sym in PROFILED)]
                if not test.profile:
                    test.errors.append(f"perf report: {rep.stderr.strip()[-300:]}")
            counts = {}
            if perf is not None:
                perf.send_signal(2)
                _, err = perf.communicate(timeout=30)
                counts = perf_counts(err)
                if not counts:
                    test.errors.append(f"perf: {err.strip()[-300:]}")
        data = json.loads(out.stdout or "{}")
        if "error" in data or not out.ok:
            test.errors.append(f"iperf3: {data.get('error') or out.stderr.strip()}")
            return test
        test.throughput_gbps = data["end"]["sum_received"]["bits_per_second"] / 1e9
        gb = sum(iv["sum"]["bytes"] for iv in data.get("intervals", [])) / 1e9
        test.gbytes = round(gb, 3)
        test.retransmits = data["end"]["sum_sent"].get("retransmits")
        test.relay_cpu_s_per_gb = round(cpu / gb, 4)
        test.host_cpu_s_per_gb = round((host1[0] - host0[0]) / gb, 4)
        test.host_busy_cores = round((host1[0] - host0[0]) / elapsed, 3)
        if counts:
            # perf counted from its attach (0.3 s before iperf3) to after it: per GB of the test
            test.syscalls_per_gb = round(counts.get("raw_syscalls:sys_enter", 0) / gb)
            test.context_switches_per_gb = round(counts.get("context-switches", 0) / gb)
            test.by_syscall_per_gb = {s: round(counts[f"syscalls:sys_enter_{s}"] / gb)
                                      for s in SYSCALLS if counts.get(f"syscalls:sys_enter_{s}")}
            if counts.get("syscalls:sys_exit_splice"):
                test.by_syscall_per_gb["splice_eagain"] = round(counts["syscalls:sys_exit_splice"] / gb)
        return test

    def middle_retransmits(self) -> int:
        lines = self.line.node("middle").run(["cat", "/proc/net/snmp"], timeout=30).stdout
        tcp = [line.split() for line in lines.splitlines() if line.startswith("Tcp:")]
        return int(tcp[1][tcp[0].index("RetransSegs")])


MEASURES = ("throughput_gbps", "relay_cpu_s_per_gb", "host_cpu_s_per_gb", "syscalls_per_gb",
            "context_switches_per_gb", "retransmits", "middle_retransmits")


def summarize(tests: list[Test], reference: str) -> dict:
    """Per path: median, min, max of each measure; per path against the reference with as
    many relays: the geometric mean of the per-run ratios with its 95 % interval."""
    import statistics

    from harness.verdicts.intervals import mean_estimate

    paths = sorted({t.path for t in tests}, key=lambda p: [t.path for t in tests].index(p))
    out: dict = {}
    for p in paths:
        rows = [t for t in tests if t.path == p]
        out[p] = {}
        for m in MEASURES:
            vals = [getattr(t, m) for t in rows if getattr(t, m) is not None]
            if vals:
                out[p][m] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals),
                             "n": len(vals)}
        ref = reference + ("2" if p.endswith("2") else "")
        if p == ref or ref not in paths:
            continue
        out[p]["x_" + ref] = {}
        for m in MEASURES[:5]:
            by_run = {}
            for t in tests:
                if t.path in (p, ref) and getattr(t, m):
                    by_run.setdefault(t.run, {})[t.path] = getattr(t, m)
            ratios = [row[p] / row[ref] for row in by_run.values() if p in row and ref in row]
            est = mean_estimate(ratios, "x", "runs", log=True)
            if est is not None:
                out[p]["x_" + ref][m] = {"value": est.value, "low": est.low, "high": est.high,
                                         "n": est.n, "per_run": [round(r, 3) for r in ratios]}
    return out


def show(summary: dict) -> None:
    for p, s in summary.items():
        cells = []
        for m in MEASURES:
            if m in s:
                cells.append(f"{m} {s[m]['median']:.4g} [{s[m]['min']:.4g}..{s[m]['max']:.4g}]")
        print(f"{p}: " + "; ".join(cells))
        for key, row in s.items():
            if key.startswith("x_"):
                print("   " + "; ".join(
                    f"{m} {key} {e['value']:.2f}"
                    + (f" [{e['low']:.2f}, {e['high']:.2f}]" if e["low"] is not None else "")
                    for m, e in row.items()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", required=True, type=parse_variant,
                        help="NAME=KIND[:KEY=VALUE...] (see the module's help); repeat it")
    parser.add_argument("--reference", help="the variant the others are divided by (the first)")
    parser.add_argument("--hops", default="1", help="relays in a row to measure: 1, 2 or 1,2")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=3, help="iperf3 seconds per test (3)")
    parser.add_argument("--perf", action="store_true",
                        help="count system calls and context switches with perf stat")
    parser.add_argument("--record", action="store_true",
                        help="perf record the relay during each test; print its top symbols")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the tests and the summary as JSON (never replaced)")
    args = parser.parse_args(argv)
    names = [v.name for v in args.variant]
    if len(set(names)) != len(names):
        parser.error("--variant: the names must differ")
    reference = args.reference or names[0]
    if reference not in names:
        parser.error(f"--reference {reference!r} is none of the variants {names}")
    hops = [int(h) for h in args.hops.split(",") if h in ("1", "2")]
    if not hops or len(hops) != len(args.hops.split(",")):
        parser.error("--hops: 1, 2 or 1,2")
    if args.out and os.path.exists(args.out):
        parser.error(f"--out {args.out} exists; choose another file")
    if os.geteuid() != 0:
        sys.exit("relay_profile: needs root (it creates network namespaces)")
    if args.perf and not shutil.which("perf"):
        sys.exit("relay_profile: --perf needs perf (apt-get install linux-perf)")

    from harness.journal.journal import Journal
    from harness.lab.lab import Lab
    from harness.relay import build_local, peers
    from harness.relay.line import line_topology

    seed = args.seed or random.SystemRandom().randrange(1, 2**31)
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="relay-profile-")
    journal = Journal(os.path.join(tmp, "journal.jsonl"))
    tests: list[Test] = []
    try:
        binaries = {v.name: compile_srd(v.src, tmp) if v.src else str(build_local())
                    for v in args.variant if v.kind == "srd"}
        go = peers.build_go_relay(tmp) if any(v.kind == "gosplice" for v in args.variant) else None
        cases = [(v, h, BASE_PORT + 10 * i + 3 * (h - 1)) for i, v in enumerate(args.variant)
                 for h in hops]
        with Lab(line_topology(forwarding=True, name="relay-profile"), journal) as line:
            server = line.node("server")
            with journal.process(server, f"exec iperf3 -s -p {bench.IPERF_PORT}"):
                bench.wait_listening(server, bench.IPERF_PORT)
                prof = Profile(journal, line, args, tmp, binaries, go)
                for run in range(1, args.runs + 1):
                    print(f"run {run} (load {os.getloadavg()[0]:.2f})", flush=True)
                    for v, h, port in rng.sample(cases, len(cases)):
                        t = prof.measure(v, h, run, port)
                        tests.append(t)
                        print(f"  {t.path:<10} {t.throughput_gbps or 0:6.2f} Gbit/s  relay "
                              f"{t.relay_cpu_s_per_gb or 0:.3f} host {t.host_cpu_s_per_gb or 0:.2f}"
                              f" core-s/GB  syscalls/GB {t.syscalls_per_gb}  cs/GB "
                              f"{t.context_switches_per_gb}  retr {t.retransmits}/"
                              f"{t.middle_retransmits} {t.by_syscall_per_gb or ''} {t.errors or ''}",
                              flush=True)
                        if t.profile:
                            print("\n".join("      " + ln for ln in t.profile), flush=True)
        if journal.pending():
            journal.undo_all()
    except BaseException:
        journal.undo_all()
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = summarize(tests, reference)
    show(summary)
    if args.out:
        with open(args.out, "x") as fh:
            json.dump({"command": "benchmarks/relay_profile.py " + " ".join(sys.argv[1:]),
                       "seed": seed, "load_end": os.getloadavg(),
                       "variants": [asdict(v) for v in args.variant],
                       "tests": [asdict(t) for t in tests], "summary": summary}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
