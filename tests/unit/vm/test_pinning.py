"""A lab's VMs as its topology asks (harness.topology.VMShape: vCPUs, kernel arguments), each
vCPU thread pinned to a host core of its own where the cores suffice (harness.vm.pinning)."""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from harness.topology.topology import TopologyBuilder, VMShape
from harness.vm import fleet, pinning, qemu


def fake_proc(tmp_path, pid: int, threads: dict[int, str]):
    for tid, name in threads.items():
        task = tmp_path / str(pid) / "task" / str(tid)
        task.mkdir(parents=True)
        (task / "comm").write_text(name + "\n")
    return str(tmp_path)


def test_vcpu_threads_are_found_by_the_names_qemu_gives_them(tmp_path):
    proc = fake_proc(tmp_path, 100, {100: "qemu-system-x86", 101: "CPU 1/TCG", 102: "CPU 0/TCG",
                                     103: "worker", 104: "IO mon_iothread"})
    threads = pinning.vcpu_threads("vm", 100, proc)
    assert [(t.vcpu, t.tid) for t in threads] == [(0, 102), (1, 101)]
    assert pinning.vcpu_threads("vm", 999, proc) == []  # gone: none


def test_each_thread_gets_a_core_of_its_own_or_none_is_pinned():
    threads = [pinning.VcpuThread("a", 0, 11), pinning.VcpuThread("b", 0, 21)]
    assert pinning.plan(threads, [1, 0]) == {11: 0, 21: 1}
    assert pinning.plan(threads + [pinning.VcpuThread("b", 1, 22)], [0, 1]) is None
    assert pinning.plan([], [0, 1]) is None


def test_pin_vcpus_pins_two_one_vcpu_vms_on_two_cores(monkeypatch):
    pinned = {}
    monkeypatch.setattr(pinning.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(pinning.os, "sched_setaffinity", lambda tid, cores: pinned.update(
        {tid: cores}))
    monkeypatch.setattr(pinning, "vcpu_threads", lambda vm, pid: [
        pinning.VcpuThread(vm, 0, pid + 1)])
    record = pinning.pin_vcpus({"s1-lab": 100, "s1-b": 200}, {"s1-lab": 1, "s1-b": 1})
    assert record == {"pinned": True, "host_cores": [0, 1],
                      "vcpus": {"s1-lab": {"0": 0}, "s1-b": {"0": 1}}}
    assert pinned == {101: {0}, 201: {1}}
    # two VMs of 2 vCPUs on 2 cores: nothing pinned, and why
    monkeypatch.setattr(pinning, "vcpu_threads", lambda vm, pid: [
        pinning.VcpuThread(vm, i, pid + i) for i in range(2)])
    pinned.clear()
    record = pinning.pin_vcpus({"s1-lab": 100, "s1-b": 200}, {"s1-lab": 2, "s1-b": 2})
    assert not record["pinned"] and record["why"] == "4 vCPUs on 2 host cores: not one core each"
    assert pinned == {}


def test_threads_not_found_by_name_are_said_not_guessed(monkeypatch):
    monkeypatch.setattr(pinning.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(pinning, "vcpu_threads", lambda vm, pid: [])
    record = pinning.pin_vcpus({"vm": 100}, {"vm": 2})
    assert not record["pinned"] and "not all found by name" in record["why"]


def test_qemu_names_its_vcpu_threads():
    launch = qemu.QemuLaunch(qemu="/usr/bin/qemu-system-x86_64", name="n1", accel="tcg", cpus=2,
                             memory_mib=1024, kernel="/k", initrd="/i", append="console=ttyS0",
                             boot_dir="/tmp/bd", console_log="/tmp/bd/console.log", ssh_port=40022)
    argv = qemu.qemu_argv(launch)
    assert "debug-threads=on" in argv[argv.index("-name") + 1]


@pytest.mark.parametrize("shape, cpus, args", [
    (VMShape(), None, ()),  # the harness's default vCPUs
    (VMShape(cpus=1), 1, ()),
    (VMShape(cpus=2, kernel_args=("maxcpus=1",)), 2, ("maxcpus=1",)),
])
def test_the_lab_boots_the_vms_its_topology_asks_for(monkeypatch, shape, cpus, args):
    booted = {}
    monkeypatch.setattr(fleet, "boot_together", lambda specs, journal, stack: booted.update(
        specs) or {})
    monkeypatch.setattr(fleet, "free_udp_ports", lambda n: (40000, 40001))
    monkeypatch.setattr(fleet, "vm_memory_mib", lambda extra_vms=0: 1024)
    topo = (TopologyBuilder("pair").node("a", whole_machine=True)
            .node("b", machine="b", whole_machine=True)
            .link(("a", "w", "10.0.0.1/24"), ("b", "w", "10.0.0.2/24")).build(vms=shape))
    with ExitStack() as stack:
        fleet.boot_lab_vms(topo, "s1", journal=None, stack=stack)
    assert set(booted) == {"", "b"}
    for spec in booted.values():
        assert spec.cpus == (cpus or fleet.vm_cpus()) and spec.kernel_args == args
