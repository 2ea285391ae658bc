"""The kinds of a lab's VM wire (harness.vm.wirekind): the QEMU command line each produces,
HARNESS_VM_WIRE, and who waits for whom with a stream wire. Nothing is booted."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from harness.errors import SpecError
from harness.topology.topology import TopologyBuilder
from harness.vm import boot, fleet, qemu
from harness.vm.machine import VM, Wire
from harness.vm.wirekind import WIRE_ENV, WireKind, servers_not_listening, wire_kind_from_env


def _argv(*wires: Wire) -> list[str]:
    launch = qemu.QemuLaunch(qemu="/usr/bin/qemu-system-x86_64", name="n1", accel="tcg", cpus=1,
                             memory_mib=1024, kernel="/k", initrd="/i", append="console=ttyS0",
                             boot_dir="/tmp/bd", console_log="/tmp/bd/console.log",
                             ssh_port=40022, wires=wires)
    return qemu.qemu_argv(launch)


def _wire_args(argv: list[str]) -> list[tuple[str, str]]:
    return [(a, argv[i + 1]) for i, a in enumerate(argv)
            if a in ("-netdev", "-device") and "wire" in argv[i + 1]]


def test_the_default_wire_is_the_dgram_wire_every_run_so_far_had():
    assert _wire_args(_argv(Wire("52:54:00:5e:00:01", 41000, 41001))) == [
        ("-netdev", "dgram,id=wire0,local.type=inet,local.host=127.0.0.1,local.port=41000,"
                    "remote.type=inet,remote.host=127.0.0.1,remote.port=41001"),
        ("-device", "virtio-net-pci,netdev=wire0,mac=52:54:00:5e:00:01,romfile=")]


def test_a_stream_wire_listens_on_one_side_and_connects_on_the_other():
    stream = WireKind("stream")
    server = _wire_args(_argv(Wire("52:54:00:5e:00:01", 41000, 41000, stream, listen=True)))
    client = _wire_args(_argv(Wire("52:54:00:5e:00:02", 41000, 41000, stream)))
    assert server[0] == ("-netdev", "stream,id=wire0,server=on,addr.type=inet,"
                                    "addr.host=127.0.0.1,addr.port=41000")
    assert client[0] == ("-netdev", "stream,id=wire0,server=off,addr.type=inet,"
                                    "addr.host=127.0.0.1,addr.port=41000")
    assert server[1] == ("-device", "virtio-net-pci,netdev=wire0,mac=52:54:00:5e:00:01,romfile=")


def test_event_idx_off_goes_to_the_wire_nic_only():
    argv = _argv(Wire("52:54:00:5e:00:01", 41000, 41001, WireKind(event_idx=False)),
                 Wire("52:54:00:5e:00:03", 41002, 41003, WireKind("stream", event_idx=False)))
    devices = [arg for flag, arg in _wire_args(argv) if flag == "-device"]
    assert devices == ["virtio-net-pci,netdev=wire0,mac=52:54:00:5e:00:01,romfile=,event_idx=off",
                       "virtio-net-pci,netdev=wire1,mac=52:54:00:5e:00:03,romfile=,event_idx=off"]
    management = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"
                  and "netdev=net0" in argv[i + 1]]
    assert management == [f"virtio-net-pci,netdev=net0,mac={qemu.MANAGEMENT_MAC},romfile="]


@pytest.mark.parametrize("text, kind", [
    ("", WireKind()), ("dgram", WireKind()), ("stream", WireKind("stream")),
    ("dgram,event_idx=off", WireKind(event_idx=False)),
    (" Stream , event_idx=off ", WireKind("stream", False)),
    ("stream,event_idx=on", WireKind("stream")),
])
def test_the_kind_is_read_from_its_text_and_written_back(text, kind):
    assert WireKind.parse(text) == kind
    assert WireKind.parse(kind.describe()) == kind
    assert wire_kind_from_env({WIRE_ENV: text}) == kind
    assert wire_kind_from_env({}) == WireKind()


@pytest.mark.parametrize("text, match", [
    ("tap", "not one of"), ("socket", "not one of"), ("dgram,tx=bh", "not understood"),
    ("dgram,event_idx=maybe", "not understood"),
])
def test_a_kind_the_harness_cannot_build_is_refused(text, match):
    with pytest.raises(SpecError, match=match):
        WireKind.parse(text)
    with pytest.raises(SpecError, match="not one of"):
        VM(name="w", wires=(Wire("52:54:00:5e:00:01", 41000, 41001, WireKind("tap")),)).validate()


def test_a_stream_client_waits_for_its_server_to_listen(tmp_path):
    tcp = tmp_path / "tcp"
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt\n"
    tcp.write_text(header
                   + "   0: 0100007F:A028 00000000:0000 0A 00000000:00000000 00:00000000 0\n"
                   + "   1: 0100007F:A029 0100007F:A028 01 00000000:00000000 00:00000000 0\n")
    stream = WireKind("stream")
    listening, connected_only = 0xA028, 0xA029
    assert servers_not_listening([Wire("52:54:00:5e:00:02", listening, listening, stream)],
                                 str(tcp)) == []
    assert servers_not_listening([Wire("52:54:00:5e:00:02", connected_only, connected_only,
                                       stream)], str(tcp)) == [connected_only]
    # the server itself, and a dgram wire, wait for nobody
    assert servers_not_listening([Wire("52:54:00:5e:00:01", 1234, 1234, stream, listen=True),
                                  Wire("52:54:00:5e:00:03", 1235, 1236)], str(tcp)) == []


def test_a_client_whose_server_never_listens_fails_its_boot(monkeypatch):
    monkeypatch.setattr(boot, "servers_not_listening", lambda wires: [41000])
    spec = VM(name="b", boot_timeout_s=0.05,
              wires=(Wire("52:54:00:5e:00:02", 41000, 41000, WireKind("stream")),))
    with pytest.raises(boot.VMBootError, match="no QEMU listens on 127.0.0.1:41000"):
        boot._await_wire_servers(spec, poll_s=0.01)


@pytest.mark.parametrize("env, backend, listens", [
    ("", "dgram", {"": False, "b": False}),
    ("stream", "stream", {"": True, "b": False}),
])
def test_the_lab_builds_its_wires_of_the_kind_asked(monkeypatch, env, backend, listens):
    booted = {}
    monkeypatch.setenv(WIRE_ENV, env)
    monkeypatch.setattr(fleet, "boot_together", lambda specs, journal, stack: booted.update(
        specs) or {})
    monkeypatch.setattr(fleet, "free_udp_ports", lambda n: (40000, 40001))
    monkeypatch.setattr(fleet, "free_loopback_port", lambda: 40002)
    monkeypatch.setattr(fleet, "vm_memory_mib", lambda extra_vms=0: 1024)
    # link.a on the extra VM: the main VM ("") still listens, whichever end it is
    topo = (TopologyBuilder("pair").node("a", machine="b", whole_machine=True)
            .node("m", whole_machine=True)
            .link(("a", "w", "10.0.0.1/24"), ("m", "w", "10.0.0.2/24")).build())
    with ExitStack() as stack:
        fleet.boot_lab_vms(topo, "s1", journal=None, stack=stack)
    for label, spec in booted.items():
        (wire,) = spec.wires
        assert wire.kind.backend == backend and wire.listen == listens[label]
        assert spec.qmp  # a wired VM answers QMP: QEMU's view of a stalled queue
    if backend == "dgram":
        assert {(w.local_port, w.remote_port) for s in booted.values() for w in s.wires} == {
            (40000, 40001), (40001, 40000)}
    else:
        assert {(w.local_port, w.remote_port) for s in booted.values() for w in s.wires} == {
            (40002, 40002)}
