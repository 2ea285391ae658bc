"""Measure a VM node end to end: boot, modules, a shaped 2-namespace lab inside it.

    sudo /work/venv/bin/python benchmarks/vm_bench.py [--rate 50] [--delay 10] [--json out.json]

Steps (each timed): boot a VM (accelerator chosen by the bounded probe), SSH
``uname -r``, ``modprobe tipc sctp sch_netem rdma_rxe``, build a lab of two
namespaces joined by a veth shaped with htb ``--rate`` Mbit/s plus netem
``--delay`` ms one way in each direction, ping RTT and iperf3 TCP rate across
it (the lab's own verification, after its delay calibration), a TIPC
message and an SCTP association between the namespaces, lab
teardown, VM shutdown. Then checks that the QEMU process and every per-boot
file are gone. Prints one JSON object.

Targets (issue): VM ready for SSH <= 30 s under TCG; iperf3 >= 97 % of the
shaped rate at the link layer; RTT ~ 2 x delay.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.journal.journal import Journal  # noqa: E402
from harness.lab.lab import Lab  # noqa: E402
from harness.lab.verify import verify_lab  # noqa: E402
from harness.topology.topology import Link, LinkEnd, Topology, TopologyNode  # noqa: E402
from harness.vm import (  # noqa: E402
    VM,
    boot_vm,
    checks,  # noqa: E402
)


def two_node_topology(rate_mbit: float, delay_ms: float) -> Topology:
    return Topology(
        name="vm-bench",
        nodes=(TopologyNode("a"), TopologyNode("b")),
        links=(Link(LinkEnd("a", "eth1", "198.18.0.1/24"), LinkEnd("b", "eth1", "198.18.0.2/24"),
                    rate_mbit=rate_mbit, delay_ms=delay_ms),),
    )


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def benchmark(args: argparse.Namespace) -> dict:
    out: dict = {"args": vars(args), "steps": {}}
    steps = out["steps"]
    workdir = tempfile.mkdtemp(prefix="harness-vm-bench-")
    journal = Journal(os.path.join(workdir, "journal.jsonl"))
    spec = VM(name="bench", cpus=args.cpus, memory_mib=args.memory, boot_timeout_s=args.timeout)
    t0 = time.monotonic()
    boot_dir = None
    try:
        with boot_vm(spec, journal) as vm:
            out["boot"] = vm.boot.to_dict()
            out["ready_from_call_s"] = round(time.monotonic() - t0, 2)
            boot_dir = os.path.dirname(vm.known_hosts)

            t = time.monotonic()
            out["uname"] = vm.run("uname -r", timeout=60).stdout.strip()
            steps["ssh_command_s"] = round(time.monotonic() - t, 2)

            t = time.monotonic()
            out["modules"] = checks.load_modules(vm)
            steps["modprobe_s"] = round(time.monotonic() - t, 2)

            t = time.monotonic()
            lab = Lab(two_node_topology(args.rate, args.delay), journal, host=vm)
            with lab:
                steps["lab_build_s"] = round(time.monotonic() - t, 2)
                a, b = lab.node("a"), lab.node("b")
                out["qdiscs"] = a.run("tc qdisc show dev eth1", timeout=60).stdout.strip()
                t = time.monotonic()
                out["delay_calibration"] = lab.delay_calibration
                out["link"] = [c.to_dict() for c in verify_lab(journal, lab, seconds=args.seconds)]
                steps["measure_s"] = round(time.monotonic() - t, 2)
                out["host_loadavg_1min"] = os.getloadavg()[0]
                t = time.monotonic()
                out["tipc"] = checks.tipc_exchange(journal, a, b, "eth1", "eth1")
                steps["tipc_s"] = round(time.monotonic() - t, 2)
                t = time.monotonic()
                out["sctp"] = checks.sctp_exchange(journal, a, b, lab.address("b", "eth1"))
                steps["sctp_s"] = round(time.monotonic() - t, 2)
                t = time.monotonic()
            steps["lab_teardown_s"] = round(time.monotonic() - t, 2)
            t = time.monotonic()
        steps["vm_shutdown_s"] = round(time.monotonic() - t, 2)
    finally:
        out["total_s"] = round(time.monotonic() - t0, 2)
        qemu_pid = out.get("boot", {}).get("qemu_pid")
        out["leftovers"] = {
            "qemu_alive": bool(qemu_pid and pid_alive(qemu_pid)),
            "boot_dir_exists": bool(boot_dir and os.path.exists(boot_dir)),
            "pending_journal_entries": [
                {"kind": e.kind, "data": e.data} for e in journal.pending()
            ],
        }
        os.unlink(journal.path)
        os.rmdir(workdir)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--memory", type=int, default=2048, help="MiB")
    parser.add_argument("--timeout", type=float, default=120.0, help="boot timeout, s")
    parser.add_argument("--rate", type=float, default=50.0, help="Mbit/s")
    parser.add_argument("--delay", type=float, default=10.0, help="one-way ms")
    parser.add_argument("--seconds", type=int, default=10, help="iperf3 duration")
    parser.add_argument("--json", help="also write the result here")
    args = parser.parse_args()
    result = benchmark(args)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    ok = (not result["leftovers"]["qemu_alive"] and not result["leftovers"]["boot_dir_exists"]
          and not result["leftovers"]["pending_journal_entries"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
