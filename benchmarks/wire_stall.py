"""Push the lab's VM wire until its TX queue stalls, or for --minutes: does a wire kind stall?

    sudo /work/main/.nox/tests/bin/python benchmarks/wire_stall.py --wire dgram --minutes 40 \
        --json /tmp/wire-stall-dgram.json
    (then --wire stream, --wire dgram,event_idx=off: harness/vm/wirekind.py;
     --kernel-arg virtio_net.napi_tx=0: the guest driver's other TX completion path)

S1's two VMs (1 vCPU each, the accelerator the probe picks -- TCG here; 2048 and 768 MiB)
joined by one wire of the kind asked, Soft-RoCE (rdma_rxe) on it in both, then round after
round until --minutes pass: iperf3 TCP with 64 KB writes each way (--tcp-s seconds), and
ib_send_bw of --iters 64 KB messages each way, polling and with events -- S1's heaviest
points. Both consoles are watched (harness.vm.txstall); a command waiting over a wire that
has been stuck --stall-s seconds is stopped. On a stall, before touching anything, it keeps:

* QEMU's view of the stalled NIC (QMP x-query-virtio-status, x-query-virtio-queue-status,
  x-query-virtio-queue-element of its TX queue): a ``broken`` device (virtio_error: the
  reason is on QEMU's stderr, also kept), buffers the guest made available that QEMU never
  took (the device side stopped), or every buffer taken and returned (the guest missed the
  completion). ``reading`` says which; benchmarks/wire_stall.md explains why it matters.
* the guest's counters (ip -s link, ethtool -S, /proc/interrupts, tc -s qdisc).

Then it tries to recover (--recover): ``cont`` (the default) first pauses and resumes the
stalled VM over QMP (``stop``, ``cont``): on resume QEMU reschedules the TX bottom half only
if it believed a flush pending (``tx_waiting``), so a queue that moves again after it had
dropped a kick while waiting for a bottom half that never ran, and one that stays stuck never
got the kick (wire_stall.md section 5); then, if still stuck, the guest's wire down and up
(``link`` alone: only that), the recovery the public reports use (podman-desktop#4713);
``none`` stops at the first stall. A recovered round goes on. Prints one JSON object (also to
--json). Needs root and the machine to itself: it loads both cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.errors import HarnessError, WireStalled  # noqa: E402
from harness.journal.journal import Journal  # noqa: E402
from harness.vm.fleet import boot_together  # noqa: E402
from harness.vm.machine import VM, Wire  # noqa: E402
from harness.vm.qemu import free_loopback_port, free_udp_ports  # noqa: E402
from harness.vm.qmp import qmp_commands  # noqa: E402
from harness.vm.queues import nic_view  # noqa: E402
from harness.vm.txstall import find_tx_stalls  # noqa: E402
from harness.vm.wirekind import WireKind  # noqa: E402

IFNAME = "wire"
SIDES = {"a": ("52:54:00:5e:00:01", "198.18.1.1", 2048), "b": ("52:54:00:5e:00:02", "198.18.1.2", 768)}
SETUP = """set -e
dev=$(for d in /sys/class/net/*; do [ "$(cat $d/address)" = {mac} ] && basename $d; done)
[ -n "$dev" ] || {{ echo "no NIC with MAC {mac}" >&2; exit 1; }}
ip link set dev "$dev" down
[ "$dev" = {ifname} ] || ip link set dev "$dev" name {ifname}
ip link set dev {ifname} mtu 1500 up
ip addr add {ip}/24 dev {ifname}
modprobe rdma_rxe
rdma link add rxe0 type rxe netdev {ifname}
"""
GUEST_FACTS = (f"cat /proc/uptime; ip -s -s link show {IFNAME}; ethtool -S {IFNAME}; "
               f"tc -s qdisc show dev {IFNAME}; grep -i virtio /proc/interrupts")


class StallWatch:
    """:class:`harness.vm.txstall.WireWatch`'s role for a run that goes on after a recovery:
    fires for a stall of ``wire`` that began after the VM's ``since`` uptime."""

    def __init__(self, vms: dict, at_least_s: float):
        self.vms, self.at_least_s = vms, at_least_s
        self.since = {vm.name: 0.0 for vm in vms.values()}
        self.found = None

    def new_stall(self):
        for vm in self.vms.values():
            try:
                text = Path(vm.console_log).read_text(errors="replace")
            except FileNotFoundError:
                continue
            for stall in find_tx_stalls(text, IFNAME):
                if stall.began_uptime_s > self.since[vm.name] and stall.lasted_s >= self.at_least_s:
                    return vm.name, stall
        return None

    def fired(self):  # called by VMNode._while_waiting about once a second
        if self.found is None:
            self.found = self.new_stall()
            return self.found
        return None


def lab_specs(kind: WireKind, cpus: int, kernel_args: tuple[str, ...] = ()) -> dict[str, VM]:
    if kind.backend == "stream":
        port = free_loopback_port()
        ports = {"a": (port, port), "b": (port, port)}
    else:
        pa, pb = free_udp_ports(2)
        ports = {"a": (pa, pb), "b": (pb, pa)}
    return {side: VM(name=f"wirestall-{side}", cpus=cpus, memory_mib=memory, qmp=True,
                     kernel_args=kernel_args,
                     wires=(Wire(mac, *ports[side], kind=kind,
                                 listen=kind.backend == "stream" and side == "a"),))
            for side, (mac, _ip, memory) in SIDES.items()}


def tcp(journal, server, client, server_ip: str, seconds: int) -> dict:
    with journal.process(server, ["sh", "-c", "exec iperf3 -s -1 -p 5201"]):
        time.sleep(1)
        res = client.run(["sh", "-c", f"iperf3 -c {server_ip} -p 5201 -t {seconds} -l 64K -J"],
                         timeout=seconds + 90, check=False)
    try:
        bps = json.loads(res.stdout)["end"]["sum_received"]["bits_per_second"]
        return {"ok": res.ok, "mbit_s": round(bps / 1e6, 1)}
    except (ValueError, KeyError, TypeError):
        return {"ok": False, "out": (res.stdout + res.stderr)[-400:]}


def rdma(journal, server, client, server_ip: str, iters: int, events: bool, attempt_s: int) -> dict:
    test = f"ib_send_bw -d rxe0 -s 65536 -n {iters} -F --report_gbits" + (" -e" if events else "")
    with journal.process(server, ["sh", "-c", f"ulimit -l unlimited; exec timeout {attempt_s} {test}"]):
        res = client.run(["sh", "-c", f"ulimit -l unlimited; d=$(($(date +%s) + 30)); "
                                      f"until timeout {attempt_s} {test} {server_ip}; do "
                                      "[ $(date +%s) -ge $d ] && exit 1; sleep 1; done"],
                         timeout=attempt_s + 90, check=False)
    rows = [line.split() for line in res.stdout.splitlines() if line.strip().startswith("65536")]
    return {"ok": res.ok and bool(rows), "gbit_s": float(rows[-1][3]) if rows else None,
            "out": "" if rows else (res.stdout + res.stderr)[-400:]}


def qemu_view(vm, mac: str) -> dict:
    return nic_view(vm.qmp_socket, mac)


def qemu_stderr(journal_path: str, vm_name: str) -> str:
    for line in Path(journal_path).read_text().splitlines():
        data = json.loads(line).get("data") or {}
        if f"harness-{vm_name}," in str(data.get("command", "")) and data.get("log"):
            try:
                return Path(data["log"]).read_text(errors="replace")[-4000:]
            except FileNotFoundError:
                return ""
    return ""


def on_stall(found, vms, ips, journal_path: str, recover: str, stall_s: float) -> dict:
    name, stall = found
    side = next(s for s, vm in vms.items() if vm.name == name)
    peer = ips["b" if side == "a" else "a"]
    record = {"vm": name, "stall": stall.to_dict(), "qemu": qemu_view(vms[side], SIDES[side][0]),
              "qemu_stderr": qemu_stderr(journal_path, name), "guests": {}}
    for s, vm in vms.items():
        record["guests"][s] = vm.run(["sh", "-c", GUEST_FACTS], timeout=60, check=False).stdout
    vm = vms[side]
    if recover == "cont":
        record["recovery_cont"] = resume(vm, SIDES[side][0], peer)
        if record["recovery_cont"]["recovered"]:
            record["recovery"] = record["recovery_cont"]
            return record
    if recover in ("cont", "link"):
        before = guest_uptime(vm)
        res = vm.run(["sh", "-c", f"ip link set {IFNAME} down; sleep 1; ip link set {IFNAME} up; "
                                  f"sleep 2; ping -c 5 -W 2 -I {IFNAME} {peer}"],
                     timeout=60, check=False)
        time.sleep(stall_s / 2)
        # still stuck: the watchdog kept reporting after the link came back
        text = Path(vm.console_log).read_text(errors="replace")
        still = any(s.last_report_uptime_s > before + 6 for s in find_tx_stalls(text, IFNAME))
        record["recovery"] = {"how": "link down/up", "ping_ok": res.ok, "ping": res.stdout[-300:],
                              "watchdog_after": still, "recovered": res.ok and not still,
                              "uptime_before": before,
                              "qemu_after": qemu_view(vm, SIDES[side][0])}
    return record


def resume(vm, mac: str, peer: str) -> dict:
    """QMP stop + cont of the stalled VM: did QEMU take the guest's waiting buffers then?"""
    taken_before = qemu_view(vm, mac).get("tx", {}).get("last-avail-idx")
    before = guest_uptime(vm)
    qmp_commands(vm.qmp_socket, [("stop", {}), ("cont", {})])
    time.sleep(2)
    after = qemu_view(vm, mac)
    taken_after = after.get("tx", {}).get("last-avail-idx")
    res = vm.run(["sh", "-c", f"ping -c 5 -W 2 -I {IFNAME} {peer}"], timeout=60, check=False)
    moved = None if None in (taken_before, taken_after) else taken_after != taken_before
    return {"how": "QMP stop + cont", "tx_taken_before": taken_before,
            "tx_taken_after": taken_after, "queue_moved": moved, "ping_ok": res.ok,
            "ping": res.stdout[-300:], "recovered": bool(moved) and res.ok,
            "uptime_before": before, "qemu_after": after}


def guest_uptime(vm) -> float:
    return float(vm.run("cat /proc/uptime", timeout=30).stdout.split()[0])


def benchmark(args: argparse.Namespace) -> dict:
    kind = WireKind.parse(args.wire)
    out: dict = {"args": vars(args), "wire": kind.describe(), "workloads": [], "stalls": []}
    workdir = tempfile.mkdtemp(prefix="harness-wire-stall-")
    journal_path = os.path.join(workdir, "journal.jsonl")
    journal = Journal(journal_path)
    ips = {side: ip for side, (_mac, ip, _mem) in SIDES.items()}
    t0 = time.monotonic()
    with ExitStack() as stack:
        vms = boot_together(lab_specs(kind, args.cpus, tuple(args.kernel_arg)), journal, stack)
        out["boots"] = {side: vm.boot.to_dict() for side, vm in vms.items()}
        for side, vm in vms.items():
            mac, ip, _mem = SIDES[side]
            vm.run(["sh", "-c", SETUP.format(mac=mac, ifname=IFNAME, ip=ip)], timeout=120)
        watch = StallWatch(vms, args.stall_s)
        for vm in vms.values():
            vm.wire_watch = watch
        rounds = 0
        while time.monotonic() - t0 < args.minutes * 60:
            rounds += 1
            plan = [("tcp", c, s, None) for c, s in (("a", "b"), ("b", "a"))] + [
                ("rdma", c, s, events) for events in (False, True) for c, s in (("a", "b"), ("b", "a"))]
            for what, c, s, events in plan:
                started = time.monotonic()
                entry = {"round": rounds, "what": what, "from": c, "events": events}
                try:
                    if what == "tcp":
                        entry.update(tcp(journal, vms[s], vms[c], ips[s], args.tcp_s))
                    else:
                        entry.update(rdma(journal, vms[s], vms[c], ips[s], args.iters, events,
                                          args.attempt_s))
                except WireStalled as exc:
                    entry.update(ok=False, stalled=exc.message)
                entry["s"] = round(time.monotonic() - started, 1)
                out["workloads"].append(entry)
                found = watch.found or watch.new_stall()
                if found is not None:
                    watch.found = found  # the diagnostics' own commands must not fire it again
                    record = on_stall(found, vms, ips, journal_path, args.recover, args.stall_s)
                    record["at_s"] = round(time.monotonic() - t0, 1)
                    record["during"] = entry
                    out["stalls"].append(record)
                    recovery = record.get("recovery", {})
                    if not recovery.get("recovered"):
                        break
                    watch.since[found[0]] = recovery["uptime_before"]  # later stalls only
                    watch.found = None
                if time.monotonic() - t0 >= args.minutes * 60:
                    break
            if out["stalls"] and not out["stalls"][-1].get("recovery", {}).get("recovered"):
                break
        out["rounds"] = rounds
    out["elapsed_s"] = round(time.monotonic() - t0, 1)
    out["pending_journal_entries"] = [{"kind": e.kind, "data": e.data} for e in journal.pending()]
    out["journal"] = journal_path  # kept: the QEMU command lines, as a run journals them
    out["stalled"] = len(out["stalls"])
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wire", default="dgram", help="the wire's kind: dgram, stream, "
                   "dgram,event_idx=off, stream,event_idx=off (harness/vm/wirekind.py)")
    p.add_argument("--minutes", type=float, default=40.0, help="stop after this long")
    p.add_argument("--cpus", type=int, default=1, help="vCPUs per VM (S1: 1)")
    p.add_argument("--kernel-arg", action="append", default=[],
                   help="appended to both guests' command line, e.g. virtio_net.napi_tx=0 "
                   "(TX completions reaped in start_xmit, not by TX NAPI: case 3)")
    p.add_argument("--tcp-s", type=int, default=20, help="seconds of each iperf3 run")
    p.add_argument("--iters", type=int, default=10000, help="ib_send_bw messages per run (S1: 1e4)")
    p.add_argument("--attempt-s", type=int, default=300, help="bound on one ib_send_bw run")
    p.add_argument("--stall-s", type=float, default=30.0, help="a TX queue stuck this long is a stall")
    p.add_argument("--recover", choices=("cont", "link", "none"), default="cont",
                   help="at a stall: QMP stop+cont then link down/up (cont), only link "
                        "down/up (link), or stop at the first stall (none)")
    p.add_argument("--json", help="also write the result here")
    args = p.parse_args()
    try:
        out = benchmark(args)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(out, indent=2, default=str)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
