"""VM nodes for real: boot Debian's stock kernel under QEMU and use it over SSH.

The folder's one VM (the ``guest`` fixture of conftest.py, shared with the fan-in and
file-system tests): TCG is slow and the machine has two shared cores. Its teardown
asserts that the QEMU process, the per-boot directory and every journal entry are gone. Error
paths (boot timeout, Ctrl-C during boot, a hung accelerator probe) run their
own short-lived QEMU processes and check the same.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import paramiko
import pytest
from conftest import assert_a_try_on_target, interruptible

from harness.errors import NodeError
from harness.journal.journal import Journal
from harness.nodes.ssh import SSHNode
from harness.vm import VM, VMBootError, boot_vm, checks
from harness.vm.accel import probe_boot
from harness.vm.kimage import bootable_kernel
from harness.vm.machine import require_programs, resolve_kernel

from .vm_host import alive, assert_nothing_left, qemu_pids, require_vm_host

pytestmark = [pytest.mark.integration, pytest.mark.vm]

RATE_MBIT = 50.0
DELAY_MS = 10.0  # one way, each direction: RTT ~ 20 ms
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def vm_env(guest):
    return guest


@pytest.fixture(scope="module")
def vm(vm_env):
    return vm_env[0]


def test_boot_record_and_command_over_ssh(vm):
    boot = vm.boot
    print(f"\nboot: {json.dumps(boot.to_dict())}")
    assert boot.accel in ("kvm", "tcg") and boot.accel_reason
    assert 0 < boot.boot_s < 150
    assert vm.run("uname -r", timeout=60).stdout.strip() == boot.kernel_version
    assert boot.kernel_version in boot.kernel
    cmdline = vm.read_text("/proc/cmdline", timeout=60)
    assert f"init={os.path.dirname(vm.known_hosts)}/init" in cmdline
    # The project and its venv are visible through the shared root -- unless they
    # sit where the guest mounts a private tmpfs (a CI clone under /tmp, say).
    private = ("/tmp/", "/var/tmp/", "/run/", "/dev/shm/")
    if not any(f"{p}/".startswith(private) for p in (str(REPO), sys.executable)):
        res = vm.run(f"cd {REPO} && {sys.executable} -c 'import harness; print(harness.__file__)'",
                     timeout=120, check=False)
        assert res.stdout.strip() == f"{REPO}/harness/__init__.py", res.stderr


def test_host_key_is_checked_strictly(vm, tmp_path):
    # The known_hosts written at boot holds exactly the key the guest presents.
    lines = Path(vm.known_hosts).read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"[127.0.0.1]:{vm.port} ssh-ed25519 ")
    with paramiko.Transport(("127.0.0.1", vm.port)) as transport:
        transport.start_client(timeout=60)
        offered = transport.get_remote_server_key()
    assert f"{offered.get_name()} {offered.get_base64()}" == lines[0].split(" ", 1)[1]

    # Without that file the same guest is refused, not auto-accepted ...
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    stranger = SSHNode("vm-unknown", "127.0.0.1", port=vm.port, key_filename=vm.key_filename,
                       known_hosts=str(empty), connect_timeout=60)
    with pytest.raises(NodeError, match="not known"):
        stranger.run("true", timeout=60)
    # ... and a different key for the same address is refused as a change.
    other = paramiko.Ed25519Key.from_private_key_file(vm.key_filename)  # not the host key
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"[127.0.0.1]:{vm.port} {other.get_name()} {other.get_base64()}\n")
    impostor = SSHNode("vm-wrong", "127.0.0.1", port=vm.port, key_filename=vm.key_filename,
                       known_hosts=str(wrong), connect_timeout=60)
    with pytest.raises(NodeError, match="CHANGED"):
        impostor.run("true", timeout=60)
    assert empty.read_text() == ""  # nothing was learned


def test_host_root_is_read_only_in_guest(vm):
    probe = f"/usr/lib/harness-vm-write-probe-{os.getpid()}"
    res = vm.run(f"touch {probe}", check=False, timeout=60)
    assert not res.ok and "Read-only file system" in res.stderr
    assert not os.path.exists(probe)
    # ... while the guest has private writable scratch space (its own tmpfs).
    scratch = f"/tmp/harness-vm-scratch-{os.getpid()}"
    assert vm.run(f"echo x > {scratch} && cat {scratch}", timeout=60).stdout == "x\n"
    assert not os.path.exists(scratch)


def test_study_modules_load(vm):
    version = vm.boot.kernel_version
    assert vm.run(["test", "-d", f"/lib/modules/{version}"], check=False, timeout=60).ok
    loaded = checks.load_modules(vm)
    assert loaded == {m: True for m in checks.STUDY_MODULES}


@pytest.fixture(scope="module")
def lab(vm_env):
    from harness.lab.lab import Lab
    from harness.topology.topology import Link, LinkEnd, Topology, TopologyNode

    vm, journal = vm_env
    topo = Topology(
        name="vm-netem",
        nodes=(TopologyNode("a"), TopologyNode("b")),
        links=(Link(LinkEnd("a", "eth1", "198.18.0.1/24"),
                    LinkEnd("b", "eth1", "198.18.0.2/24"),
                    rate_mbit=RATE_MBIT, delay_ms=DELAY_MS),),
    )
    with Lab(topo, journal, host=vm, prefix=f"vt{os.getpid() % 100000}") as built:
        yield built
    listed = vm.run("ip netns list", timeout=60).stdout
    assert built.netns_name("a") not in listed and built.netns_name("b") not in listed


def test_netem_lab_rate_and_rtt(vm_env, lab):
    """htb 50 Mbit/s + netem 10 ms inside the VM: >= 97 % of the rate, RTT 20 ms +- 5 %.

    Measured by the lab's own verification (the one link checker). The lab
    trimmed its delay lines by the guest's own latency when it was built; the
    record says by how much. A TCG guest is starved when other work saturates
    the host cores (with two other TCG VMs on this 2-core machine, load ~5, we
    saw 75-95 %), so the measurement is repeated up to three times and the
    best one must meet both targets. If none does *and* the host is overloaded,
    the targets are reported as not measurable here (skip, with the numbers);
    the shaper's upper bound and a delay line there once (RTT 19-30 ms) are
    asserted on every attempt anyway, so a missing or wrong shaper or delay
    line still fails.
    """
    from harness.lab.verify import verify_lab

    journal = vm_env[1]
    a = lab.node("a")
    qdiscs = a.run("tc qdisc show dev eth1", timeout=60).stdout
    assert "htb" in qdiscs and "netem" in qdiscs and "delay" in qdiscs
    (calibration,) = lab.delay_calibration
    print(f"\ndelay calibration: {json.dumps(calibration)}")
    assert calibration["rtt_before_trim_ms"] >= 2 * DELAY_MS  # netem really delays
    # the trim is the guest's own latency, not a share of the delay: ~0.5 ms per direction
    # under TCG, 1.05 ms seen on a fresh clone's suite (2.1 ms excess per round trip); a
    # quarter of the delay still catches a calibration that eats the delay line
    assert 0 <= calibration["trim_us_per_direction"] < 0.25 * DELAY_MS * 1000
    attempts = []
    for _ in range(3):
        checks_ = verify_lab(journal, lab, seconds=3)
        load = f"{os.getloadavg()[0]:.2f}"
        print(f"link (host load {load}): {json.dumps([c.to_dict() for c in checks_])}")
        attempts.append(checks_)
        for c in checks_:
            # the shaper really limits (unshaped, this VM carries ~400 Mbit/s); the reading
            # itself is +-5 % when the host starves the emulated guest of CPU, and up to 1.113
            # when a late guest timer lets netem's backlog leave together inside a short counted
            # stretch (CI of 2026-11-29, two VM tests at once: 0.53 s over 26 RTTs)
            assert c.rate_ratio <= 1.15, c
            # the delay line is there, once: a late guest timer only adds to it
            assert 0.95 * 2 * DELAY_MS <= c.rtt_ms <= 1.5 * 2 * DELAY_MS, c
        if on_target(checks_):
            break
    assert_a_try_on_target(attempts, on_target,
                           f"best {max(min(c.rate_ratio for c in a) for a in attempts):.1%} "
                           f"of {RATE_MBIT:g} Mbit/s, RTTs "
                           f"{[round(c.rtt_ms, 1) for a in attempts for c in a]} ms")


def on_target(checks_) -> bool:
    """Both directions at >= 97 % of the rate, their RTT 20 ms +- 5 %."""
    return all(c.rate_ratio >= 0.97 and abs(c.rtt_ms - 2 * DELAY_MS) <= 0.05 * 2 * DELAY_MS
               for c in checks_)


def test_tipc_between_namespaces(vm_env, lab):
    journal = vm_env[1]
    result = checks.tipc_exchange(journal, lab.node("a"), lab.node("b"), "eth1", "eth1")
    print(f"\ntipc: {json.dumps(result)}")
    assert result["ok"], result
    assert ": up" in result["links"]


def test_sctp_between_namespaces(vm_env, lab):
    journal = vm_env[1]
    result = checks.sctp_exchange(journal, lab.node("a"), lab.node("b"),
                                  lab.address("b", "eth1"))
    print(f"\nsctp: {json.dumps(result)}")
    assert result["ok"], result


# -- error paths: each boots its own short-lived QEMU --------------------------

def test_unreachable_vm_fails_within_bound_and_leaves_nothing(tmp_path):
    require_vm_host()
    journal = Journal(tmp_path / "journal.jsonl")
    started = time.monotonic()
    with pytest.raises(VMBootError, match="no SSH server within boot_timeout_s=2s") as info:
        with boot_vm(VM(name="late", memory_mib=512, boot_timeout_s=2), journal):
            pytest.fail("a VM cannot be up in 2 s")
    assert time.monotonic() - started < 60
    assert "how to fix" in str(info.value)
    boot_dirs = [e.data["path"] for e in journal.entries() if e.kind == "file"]
    assert_nothing_left(journal, boot_dirs)


_CHILD = textwrap.dedent("""
    import sys, time
    from harness.journal.journal import Journal
    from harness.vm import VM, boot_vm
    with boot_vm(VM(name="sigint", memory_mib=512, boot_timeout_s=300), Journal(sys.argv[1])):
        time.sleep(600)
""")


def test_sigint_during_boot_stops_qemu_and_cleans_up(tmp_path):
    require_vm_host()
    path = tmp_path / "journal.jsonl"
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             preexec_fn=interruptible)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait until QEMU is running
            if path.exists() and qemu_pids(Journal(path)):
                break
            assert child.poll() is None, child.stdout.read().decode()
            time.sleep(0.2)
        time.sleep(1.0)
        pids = qemu_pids(Journal(path))
        assert pids and alive(pids[0])
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0 and b"KeyboardInterrupt" in out, out.decode()[-2000:]
    journal = Journal(path)
    boot_dirs = [e.data["path"] for e in journal.entries() if e.kind == "file"]
    assert_nothing_left(journal, boot_dirs)


def test_probe_boot_tells_finished_from_hung(tmp_path):
    """The accelerator probe's two outcomes, for real, under TCG."""
    require_vm_host()
    qemu = require_programs()["qemu-system-x86_64"]
    kernel, version = resolve_kernel()
    image, _ = bootable_kernel(kernel, version)
    journal = Journal(tmp_path / "journal.jsonl")
    finished, seconds, console = probe_boot(qemu, image, "tcg", 120, journal)
    assert finished, console[-2000:]
    assert "Unable to mount root fs" in console and f"{version} #" in console
    # The same boot cut off after 0.5 s counts as hung, and QEMU is killed.
    finished, seconds, console = probe_boot(qemu, image, "tcg", 0.5, journal)
    assert not finished and seconds < 5
    pids = qemu_pids(journal)
    assert len(pids) == 2 and not [p for p in pids if alive(p)]
    assert journal.pending() == []
