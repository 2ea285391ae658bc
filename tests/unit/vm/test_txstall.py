"""A wire's stalled TX queue read from a VM console (harness.vm.txstall), and the run it ends.

The console excerpts in data/ are the two VMs of S1 verdict run a416eb (2026-11-29), whose
lab VM's wire stopped transmitting at uptime ~1330 s for good (QEMU's virtio-net TX stall)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.archive.archive import INCOMPLETE
from harness.errors import CommandTimeout, HarnessError, WireStalled
from harness.lab.placement import Decision
from harness.lab.probe import Capabilities
from harness.studies.s1 import design as s1
from harness.vm.fleet import wired_consoles
from harness.vm.stall_evidence import stall_evidence
from harness.vm.txstall import (
    WiredConsole,
    WireWatch,
    find_tx_stall,
    find_tx_stalls,
    read_tx_stall,
    stalled_wire,
)

DATA = Path(__file__).parent / "data"
LAB = DATA / "s1-a416eb-lab-console.txt"
B = DATA / "s1-a416eb-b-console.txt"


def test_the_lab_console_of_run_a416eb_shows_when_its_wire_stalled_and_for_how_long():
    stall = read_tx_stall(str(LAB), "wire")
    assert stall is not None
    assert stall.ifname == "wire" and stall.queue == 0
    # first report at 1334.84 s says "timed out 5004 ms": the queue stopped at ~1329.84 s
    assert stall.began_uptime_s == pytest.approx(1329.838, abs=1e-3)
    assert stall.first_report_uptime_s == pytest.approx(1334.841534)
    assert stall.last_report_uptime_s == pytest.approx(2708.909141)
    assert stall.lasted_s == pytest.approx(1379.072)
    assert stall.reports == 10  # five watchdog lines and five TX timeout lines
    assert stall.to_dict()["began_uptime_s"] == stall.began_uptime_s


def test_a_console_without_watchdog_lines_has_no_stall():
    assert read_tx_stall(str(B), "wire") is None
    assert find_tx_stall("", "wire") is None


def test_only_the_named_interface_counts():
    assert find_tx_stall(LAB.read_text(), "eth0") is None
    assert find_tx_stall(LAB.read_text(), "wir") is None


def test_a_console_that_is_gone_has_no_stall(tmp_path):
    assert read_tx_stall(str(tmp_path / "console.log"), "wire") is None


def test_a_queue_that_recovers_and_stalls_again_is_two_stalls():
    lines = LAB.read_text().splitlines()
    watchdog = [ln for ln in lines if "NETDEV WATCHDOG" in ln]
    # the first stall's three reports, then (the count restarted) the last two as a new stall
    text = "\n".join(watchdog[:3] + [ln.replace("[ 27", "[ 37") for ln in watchdog[:2]])
    first, second = find_tx_stalls(text, "wire")
    assert first.reports == 3 and first.lasted_s == pytest.approx(15.104)
    assert second.began_uptime_s == pytest.approx(1334.841534 - 5.004)
    assert find_tx_stall(text, "wire") == second


def test_stalled_wire_names_the_vm_whose_wire_stalled():
    consoles = [WiredConsole("s1-b", str(B), ("wire",)), WiredConsole("s1-lab", str(LAB), ("wire",))]
    vm, stall = stalled_wire(consoles)
    assert vm == "s1-lab" and stall.began_uptime_s == pytest.approx(1329.838, abs=1e-3)
    assert stalled_wire(consoles[:1]) is None


def test_the_lab_reads_each_vm_console_for_the_wires_it_holds():
    topology = s1.topology(s1.Params.resolve(profile="verdict"))
    labels = topology.machines()
    vms = {label: SimpleNamespace(name=f"s1-{label or 'lab'}", console_log=f"/boot/{label}/console.log",
                                  qmp_socket=f"/boot/{label}/qmp.sock")
           for label in labels}
    nics = {(end.node, end.ifname): f"52:54:00:5e:00:0{side}" for link in topology.wires()
            for side, end in enumerate((link.a, link.b), 1)}
    consoles = wired_consoles(topology, vms, nics)
    assert {c.vm for c in consoles} == {vm.name for vm in vms.values()}
    assert all(c.ifnames == (s1.WIRE,) for c in consoles)
    assert {c.console_log for c in consoles} == {vm.console_log for vm in vms.values()}
    # and where to ask QEMU about the stalled NIC: the VM's QMP socket, its wire NICs' MACs
    by_vm = {c.vm: c for c in consoles}
    for label, vm in vms.items():
        (mac,) = by_vm[vm.name].macs
        assert by_vm[vm.name].qmp_socket == vm.qmp_socket
        assert {topology.machine_of(node) for (node, _i), m in nics.items() if m == mac} == {label}


# -- the run it ends ------------------------------------------------------------------


class _Bed:
    def record(self) -> dict:
        return {"kind": "fake VM lab"}


def _run_that_fails(monkeypatch, tmp_path, lab_console: Path, error: BaseException):
    """An S1 session whose VM lab is a fake with ``lab_console``; its point raises ``error``
    (what perftest_sweep.sweep raised after retrying until its deadline)."""
    from harness.run import session as session_module
    from harness.run import testbed_build
    from harness.run.session import open_session

    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))  # not the machine's
    host = Capabilities("local", "6.18", {"netns": True})
    placing = testbed_build.Placing(None, host, set(), set(), "study s1",
                                    Decision("vm", "S1 needs two machines", (), (), 2))
    monkeypatch.setattr(session_module, "place", lambda *args: placing)
    consoles = [WiredConsole("s1-lab", str(lab_console), ("wire",)),
                WiredConsole("s1-b", str(B), ("wire",))]
    monkeypatch.setattr(session_module, "build_lab", lambda *args: testbed_build.BuiltLab(
        bed=_Bed(), wired_consoles=consoles))
    with open_session("s1", {"profile": "verdict"}, root=tmp_path) as session:
        session.testbed(s1.topology(s1.Params.resolve(profile="verdict")))
        raise error


def test_a_failed_point_on_a_stalled_wire_ends_the_run_with_one_error_naming_the_stall(
        monkeypatch, tmp_path):
    failed = HarnessError("ib_send_lat sweep client on b failed (exit 1): Couldn't connect")
    with pytest.raises(WireStalled) as caught:
        _run_that_fails(monkeypatch, tmp_path, LAB, failed)
    message = str(caught.value)
    for words in ("VM s1-lab", "'wire'", "uptime 1330s", "QEMU's virtio-net TX stall",
                  "dgram wire", "not the system under test", "incomplete", "run it again"):
        assert words in message
    assert caught.value.__cause__ is failed
    (run_json,) = tmp_path.rglob("run.json")
    meta = json.loads(run_json.read_text())
    assert meta["status"] == INCOMPLETE
    assert "WireStalled" in meta["measurement_error"]
    stall = meta["wire_stall"]
    assert stall["vm"] == "s1-lab" and stall["ifname"] == "wire"
    assert stall["began_uptime_s"] == pytest.approx(1329.838, abs=1e-3)
    assert stall["lasted_s"] == pytest.approx(1379.072)
    assert "Couldn't connect" in stall["cause"]
    # the stalled VM's console is kept beside run.json (it goes with the VM); the healthy
    # VM's is not, and no QEMU output without a journalled QEMU (a fake lab here)
    raw = {p.name: p for p in run_json.parent.rglob("wire-stall-*")}
    assert set(raw) == {"wire-stall-s1-lab-console.txt"}
    assert "NETDEV WATCHDOG" in raw["wire-stall-s1-lab-console.txt"].read_text()


def test_a_failed_point_on_a_healthy_wire_keeps_its_own_error(monkeypatch, tmp_path):
    failed = HarnessError("ib_send_lat sweep client on b failed (exit 1): Couldn't connect")
    with pytest.raises(HarnessError) as caught:
        _run_that_fails(monkeypatch, tmp_path, B, failed)
    assert caught.value is failed
    (run_json,) = tmp_path.rglob("run.json")
    meta = json.loads(run_json.read_text())
    assert meta["status"] == INCOMPLETE and "wire_stall" not in meta
    # every VM's console is kept: a tool that timed out (qperf's "failed to receive results",
    # S1 run cae49d) may have met a stall shorter than the watchdog reports
    raw = {p.name: p.read_text() for p in run_json.parent.rglob("failed-*")}
    assert set(raw) == {"failed-s1-lab-console.txt", "failed-s1-b-console.txt"}
    assert raw["failed-s1-b-console.txt"] == B.read_text()[-(256 << 10):]
    assert not list(run_json.parent.rglob("wire-stall-*"))


def test_a_run_stopped_by_ctrl_c_keeps_no_consoles(monkeypatch, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _run_that_fails(monkeypatch, tmp_path, B, KeyboardInterrupt())
    (run_json,) = tmp_path.rglob("run.json")
    assert not list(run_json.parent.rglob("failed-*"))


# -- a command waiting on a lost wire -------------------------------------------------


class _Hung:
    """An SSH channel whose command never ends (perftest's client retrying over a dead wire)."""

    def __init__(self):
        self.closed = False
        self.status_event = threading.Event()
        self.exit_status = -1
        self.marker_sent = False

    def exec_command(self, command):
        pass

    def recv(self, _size):
        while not self.closed:
            time.sleep(0.01)
        return b""

    def recv_stderr(self, size):
        if not self.marker_sent:
            self.marker_sent = True
            return b"__harness_pgid__=4242\n"
        return self.recv(size)

    def sendall(self, _data):
        pass

    def shutdown_write(self):
        pass

    def close(self):
        self.closed = True


def _vm_node(monkeypatch, watch: WireWatch | None):
    from harness.nodes import ssh
    from harness.vm.boot import VMNode

    monkeypatch.setattr(ssh, "WATCH_EVERY_S", 0.2)
    node = VMNode("s1-b", "127.0.0.1", port=2222)
    node.wire_watch = watch
    killed: list = []
    monkeypatch.setattr(node, "_open_channel", _Hung)
    monkeypatch.setattr(node, "_kill_remote", lambda chan, err: killed.append(
        ssh.split_marker(b"".join(err))[0]))
    return node, killed


def test_a_command_on_a_vm_stops_at_once_when_a_wire_of_its_lab_stalled(monkeypatch):
    watch = WireWatch((WiredConsole("s1-lab", str(LAB), ("wire",)),))
    node, killed = _vm_node(monkeypatch, watch)
    started = time.monotonic()
    with pytest.raises(WireStalled, match="VM s1-lab: the transmit queue of its wire 'wire' "
                                          "stalled at guest uptime 1330s"):
        node.run("ib_send_lat -s 65536", timeout=20)
    assert time.monotonic() - started < 5 and killed == [4242]
    assert watch.found[0] == "s1-lab"
    # once: the run's teardown commands are not stopped again
    with pytest.raises(CommandTimeout):
        node.run("ip link show", timeout=1)


def test_a_command_on_a_vm_whose_wires_are_sound_runs_to_its_timeout(monkeypatch):
    node, killed = _vm_node(monkeypatch, WireWatch((WiredConsole("s1-b", str(B), ("wire",)),)))
    with pytest.raises(CommandTimeout):
        node.run("ib_send_lat -s 65536", timeout=1)


def test_a_stall_shorter_than_the_fatal_one_lets_a_command_wait(monkeypatch, tmp_path):
    """One watchdog report (stuck 5 s) is not a lost wire while a command waits."""
    console = tmp_path / "console.log"
    lines = LAB.read_text().replace("\r", "").splitlines()
    first = [i for i, line in enumerate(lines) if "TX timeout" in line][0]
    console.write_text("\n".join(lines[:first + 1]) + "\n")  # its first two reports
    watch = WireWatch((WiredConsole("s1-lab", str(console), ("wire",)),))
    assert read_tx_stall(str(console), "wire").lasted_s == pytest.approx(5.008)
    node, _killed = _vm_node(monkeypatch, watch)
    with pytest.raises(CommandTimeout):
        node.run("ib_send_lat -s 65536", timeout=1)
    assert watch.found is None


def test_the_evidence_of_a_stall_is_the_vms_console_and_what_its_qemu_wrote(tmp_path):
    qemu_log = tmp_path / "qemu.log"
    qemu_log.write_text("qemu-system-x86_64: Guest says index 300 is available\n")
    silent_log = tmp_path / "silent.log"
    silent_log.write_text("")
    consoles = [WiredConsole("s1-lab", str(LAB), ("wire",)), WiredConsole("s1-b", str(B), ("wire",))]
    entries = [SimpleNamespace(data={"command": "exec qemu -name harness-s1-lab,process=x",
                                     "log": str(qemu_log)}),
               SimpleNamespace(data={"command": "exec qemu -name harness-s1-b,process=y",
                                     "log": str(silent_log)}),
               SimpleNamespace(data={"command": "python3 pingpong.py"})]
    lab = stall_evidence("s1-lab", consoles, entries)
    assert set(lab) == {"wire-stall-s1-lab-console.txt", "wire-stall-s1-lab-qemu.txt"}
    assert "NETDEV WATCHDOG" in lab["wire-stall-s1-lab-console.txt"]
    assert "Guest says index" in lab["wire-stall-s1-lab-qemu.txt"]
    assert stall_evidence("s1-b", consoles, entries)["wire-stall-s1-b-qemu.txt"] == \
        "(QEMU wrote nothing)\n"
    qemu_log.unlink()  # the VM is gone: nothing to keep, no error
    assert "wire-stall-s1-lab-qemu.txt" not in stall_evidence("s1-lab", consoles, entries)
