"""VM nodes without booting anything: specs, host checks, the QEMU command line,
kernel image handling, the accelerator probe (with stand-in QEMU programs),
the guest files and the teardown bookkeeping. No root needed."""

from __future__ import annotations

import json
import lzma
import os
import shutil
import socket
import stat
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness.errors import CapabilityMissing, SpecError
from harness.journal.journal import Journal
from harness.nodes import LocalNode, NamespaceNode
from harness.nodes.ssh import SSHNode
from harness.vm import VM, accel, boot_vm, guest, kimage, machine, qemu
from harness.vm.boot import _ssh_banner, console_summary, forget_guest_changes

# -- machine: the VM spec and host checks -------------------------------------------


@pytest.mark.parametrize("bad, match", [
    (dict(name="bad name"), "host name"),
    (dict(cpus=0), "cpus=0"),
    (dict(memory_mib=64), "memory_mib=64"),
    (dict(boot_timeout_s=0), "boot_timeout_s=0"),
    (dict(root_cache="fast"), "root_cache"),
])
def test_spec_rejects_bad_values(bad, match):
    with pytest.raises(SpecError, match=match):
        VM(**bad).validate()


def test_spec_defaults_are_valid():
    VM().validate()


def test_kernel_version_from_debian_name():
    assert machine.kernel_version("/boot/vmlinuz-6.1.0-56-amd64") == "6.1.0-56-amd64"
    with pytest.raises(SpecError, match="vmlinuz-<version>"):
        machine.kernel_version("/boot/bzImage")


def test_missing_kernel_names_the_debian_package(tmp_path):
    with pytest.raises(CapabilityMissing, match="does not exist") as info:
        machine.resolve_kernel(str(tmp_path / "vmlinuz-9.9.9-none"))
    assert "linux-image-amd64" in info.value.hint


def test_kernel_without_matching_modules_is_refused(tmp_path):
    image = tmp_path / "vmlinuz-9.9.9-harness-test"
    image.write_bytes(b"not a kernel")
    with pytest.raises(CapabilityMissing, match="/lib/modules/9.9.9-harness-test") as info:
        machine.resolve_kernel(str(image))
    assert "linux-image-amd64" in info.value.hint


def test_missing_qemu_names_the_debian_package(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: nothing is found
    with pytest.raises(CapabilityMissing, match="qemu-system-x86_64") as info:
        machine.require_programs()
    assert info.value.hint == "apt-get install qemu-system-x86"


def _meminfo(tmp_path, available_kib: int) -> str:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal:       24684096 kB\nMemAvailable:   {available_kib} kB\n")
    return str(path)


def test_memory_check_uses_memavailable(tmp_path):
    vm = VM(memory_mib=2048)
    with pytest.raises(CapabilityMissing, match="only 1000 MiB are available") as info:
        machine.require_memory(vm, _meminfo(tmp_path, 1000 * 1024))
    assert "memory_mib" in info.value.hint
    need = 2048 + machine.QEMU_OVERHEAD_MIB
    assert machine.require_memory(vm, _meminfo(tmp_path, need * 1024)) == need


def test_boot_refuses_too_much_memory_before_changing_anything(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    with pytest.raises(CapabilityMissing):
        with boot_vm(VM(memory_mib=1 << 20), journal):  # 1 TiB
            pytest.fail("must not boot")
    assert journal.entries() == []


# -- QEMU command line -------------------------------------------------------------------


def _launch(**kw) -> qemu.QemuLaunch:
    base = dict(qemu="/usr/bin/qemu-system-x86_64", name="n1", accel="tcg", cpus=2,
                memory_mib=1024, kernel="/k", initrd="/i", append="console=ttyS0",
                boot_dir="/tmp/bd", console_log="/tmp/bd/console.log", ssh_port=40022)
    base.update(kw)
    return qemu.QemuLaunch(**base)


def test_network_is_user_mode_loopback_only():
    argv = qemu.qemu_argv(_launch())
    netdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-netdev"]
    assert netdevs == [
        "user,id=net0,restrict=on,ipv6=off,hostfwd=tcp:127.0.0.1:40022-10.0.2.15:22"
    ]
    assert not any("tap" in a or "bridge" in a for a in argv)


def test_wires_are_loopback_datagram_sockets_with_their_own_mac():
    from harness.vm.machine import VM, Wire

    wire = Wire("52:54:00:5e:00:01", 41000, 41001)
    argv = qemu.qemu_argv(_launch(wires=(wire,)))
    netdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-netdev"]
    assert netdevs[1] == ("dgram,id=wire0,local.type=inet,local.host=127.0.0.1,local.port=41000,"
                          "remote.type=inet,remote.host=127.0.0.1,remote.port=41001")
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device" and "virtio-net" in argv[i + 1]]
    assert devices[0].endswith(f"mac={qemu.MANAGEMENT_MAC},romfile=")  # the guest init's NIC
    assert "netdev=wire0,mac=52:54:00:5e:00:01" in devices[1]
    assert not any("tap" in a or "bridge" in a for a in argv)
    for bad, match in [(Wire("53:54:00:5e:00:01", 41000, 41001), "unicast"),
                       (Wire("52:54:00:5e:00:01", 80, 41001), "out of range")]:
        with pytest.raises(SpecError, match=match):
            VM(name="w", wires=(bad,)).validate()
    with pytest.raises(SpecError, match="share a MAC"):
        VM(name="w", wires=(wire, Wire(wire.mac, 41002, 41003))).validate()
    a, b = qemu.free_udp_ports(2)
    assert a != b


def test_every_host_export_is_read_only():
    argv = qemu.qemu_argv(_launch())
    fsdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-fsdev"]
    assert len(fsdevs) == 3
    assert all("readonly=on" in f for f in fsdevs)
    assert any("path=/tmp/bd," in f for f in fsdevs)


def test_accelerator_arguments():
    assert qemu.accel_args("kvm") == ["-accel", "kvm", "-cpu", "host"]
    assert qemu.accel_args("tcg")[1].startswith("tcg,tb-size=")
    with pytest.raises(ValueError):
        qemu.accel_args("hvf")


def test_command_execs_qemu_so_the_pid_is_qemus():
    assert qemu.qemu_command(_launch()).startswith("exec /usr/bin/qemu-system-x86_64 ")


def test_free_loopback_port_is_bindable():
    port = qemu.free_loopback_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


# -- kernel image --------------------------------------------------------------------------


def _elf_with_note(name: bytes, ntype: int) -> bytes:
    """A minimal 64-bit ELF with one PT_NOTE segment holding one note."""
    desc = b"\0" * 4
    note = struct.pack("<III", len(name) + 1, len(desc), ntype) + name + b"\0"
    note += b"\0" * (-len(note) % 4) + desc
    phoff, phentsize = 64, 56
    note_off = phoff + phentsize
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 32, phoff)
    struct.pack_into("<HH", header, 54, phentsize, 1)
    ph = bytearray(phentsize)
    struct.pack_into("<I", ph, 0, 4)  # PT_NOTE
    struct.pack_into("<Q", ph, 8, note_off)
    struct.pack_into("<Q", ph, 32, len(note))
    return bytes(header) + bytes(ph) + note


def test_pvh_note_detection():
    assert kimage.has_pvh_note(_elf_with_note(b"Xen", kimage.XEN_ELFNOTE_PHYS32_ENTRY))
    assert not kimage.has_pvh_note(_elf_with_note(b"Xen", 6))
    assert not kimage.has_pvh_note(_elf_with_note(b"GNU", kimage.XEN_ELFNOTE_PHYS32_ENTRY))
    assert not kimage.has_pvh_note(b"MZ" + b"\0" * 100)


def _bzimage(payload: bytes) -> bytes:
    return b"\x00setup code " * 50 + lzma.compress(payload, format=lzma.FORMAT_XZ) + b"tail"


def test_extract_vmlinux_only_for_pvh_elf():
    elf = _elf_with_note(b"Xen", kimage.XEN_ELFNOTE_PHYS32_ENTRY)
    assert kimage.extract_vmlinux(_bzimage(elf)) == elf
    assert kimage.extract_vmlinux(_bzimage(_elf_with_note(b"Xen", 6))) is None
    assert kimage.extract_vmlinux(b"no compressed payload") is None


def test_bootable_kernel_caches_the_extracted_elf(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    elf = _elf_with_note(b"Xen", kimage.XEN_ELFNOTE_PHYS32_ENTRY)
    vmlinuz = tmp_path / "vmlinuz-1.2.3-test"
    vmlinuz.write_bytes(_bzimage(elf))
    path, kind = kimage.bootable_kernel(str(vmlinuz), "1.2.3-test")
    assert kind == "pvh" and Path(path).read_bytes() == elf
    assert Path(path).parent == tmp_path / "cache" / "harness"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    mtime = os.stat(path).st_mtime_ns
    assert kimage.bootable_kernel(str(vmlinuz), "1.2.3-test") == (path, "pvh")
    assert os.stat(path).st_mtime_ns == mtime  # served from the cache
    other = tmp_path / "vmlinuz-1.2.4-test"
    other.write_bytes(b"plain bzImage without xz")
    assert kimage.bootable_kernel(str(other), "1.2.4-test") == (str(other), "bzimage")


# -- accelerator probe ----------------------------------------------------------------------


def _fake_qemu(tmp_path: Path, body: str) -> str:
    """A stand-in for qemu-system-x86_64 that logs each call, then runs ``body``."""
    path = tmp_path / "fake-qemu"
    path.write_text(f"#!/bin/sh\necho $$ >> {tmp_path}/calls\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def kvm_dev(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("HARNESS_VM_ACCEL", raising=False)
    dev = tmp_path / "kvm"
    dev.write_text("")
    return str(dev)


def _calls(tmp_path: Path) -> list[int]:
    path = tmp_path / "calls"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_no_kvm_device_means_tcg_without_probing(tmp_path, kvm_dev):
    fake = _fake_qemu(tmp_path, "exit 0")
    verdict = accel.probe_accel(fake, "/k", "1.0", kvm_device=str(tmp_path / "absent"))
    assert verdict.accel == "tcg" and "does not exist" in verdict.reason
    assert _calls(tmp_path) == []


def test_environment_forces_the_accelerator(tmp_path, kvm_dev, monkeypatch):
    monkeypatch.setenv("HARNESS_VM_ACCEL", "tcg")
    fake = _fake_qemu(tmp_path, "exit 0")
    verdict = accel.probe_accel(fake, "/k", "1.0", kvm_device=kvm_dev)
    assert verdict.accel == "tcg" and "HARNESS_VM_ACCEL" in verdict.reason
    assert _calls(tmp_path) == []


def test_hanging_kvm_boot_falls_back_to_tcg_within_bound(tmp_path, kvm_dev):
    fake = _fake_qemu(tmp_path, "exec sleep 600")  # like a stock kernel on a PVM host
    journal = Journal(tmp_path / "journal.jsonl")
    started = time.monotonic()
    verdict = accel.probe_accel(fake, "/k", "1.0", kvm_device=kvm_dev, journal=journal,
                                probe_timeout_s=1.0)
    assert time.monotonic() - started < 10
    assert verdict.accel == "tcg" and "did not finish within 1s" in verdict.reason
    (pid,) = _calls(tmp_path)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the hung "QEMU" was killed
    assert journal.pending() == []
    # The verdict is cached: the next call does not probe again.
    again = accel.probe_accel(fake, "/k", "1.0", kvm_device=kvm_dev, probe_timeout_s=1.0)
    assert again.accel == "tcg" and again.cached and _calls(tmp_path) == [pid]
    assert accel.cache_path("1.0").exists()
    fresh = accel.probe_accel(fake, "/k", "1.0", kvm_device=kvm_dev, probe_timeout_s=0.5,
                              refresh=True)
    assert not fresh.cached and len(_calls(tmp_path)) == 2


def test_kvm_boot_that_reaches_root_mount_means_kvm(tmp_path, kvm_dev):
    fake = _fake_qemu(tmp_path, "echo 'Kernel panic - not syncing: VFS: Unable to mount root fs"
                                " on unknown-block(0,0)'; exit 0")
    verdict = accel.probe_accel(fake, "/k", "2.0", kvm_device=kvm_dev)
    assert verdict.accel == "kvm" and "finished" in verdict.reason


def test_vms_booting_together_share_one_probe(tmp_path, kvm_dev):
    fake = _fake_qemu(tmp_path, "sleep 0.5; echo 'Kernel panic - not syncing: VFS: Unable to "
                                "mount root fs on unknown-block(0,0)'; exit 0")
    verdicts = []
    threads = [threading.Thread(target=lambda: verdicts.append(
        accel.probe_accel(fake, "/k", "4.0", kvm_device=kvm_dev))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(_calls(tmp_path)) == 1  # one QEMU probe boot, not one per VM
    assert sorted(v.cached for v in verdicts) == [False, True]
    assert {v.accel for v in verdicts} == {"kvm"}


def test_kvm_that_fails_at_once_means_tcg_with_its_message(tmp_path, kvm_dev):
    fake = _fake_qemu(tmp_path, "echo 'Could not access KVM kernel module: Permission denied'"
                                " >&2; exit 1")
    verdict = accel.probe_accel(fake, "/k", "3.0", kvm_device=kvm_dev)
    assert verdict.accel == "tcg" and "Could not access KVM kernel module" in verdict.reason


def test_probe_without_journal_also_kills_and_cleans(tmp_path):
    fake = _fake_qemu(tmp_path, "exec sleep 600")
    finished, seconds, _ = accel.probe_boot(fake, "/k", "kvm", 0.5)
    assert not finished and seconds < 5
    (pid,) = _calls(tmp_path)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# -- guest files ---------------------------------------------------------------------------


def test_static_elf_detection():
    sh = os.path.realpath("/bin/sh")
    assert not guest.is_static_elf(sh)
    busybox = shutil.which("busybox")
    if busybox and subprocess.run(["file", busybox], capture_output=True,
                                  text=True).stdout.count("statically linked"):
        assert guest.is_static_elf(busybox)


def _render_init(cache="loose") -> str:
    return guest.INIT_TEMPLATE.format(name="vm1", mount=guest.GUEST_MOUNT, addr="10.0.2.15",
                                      prefix=24, mac="52:54:00:12:34:56", cache=cache, init="/tmp/bd/init",
                                      bb="/bin/busybox")


@pytest.mark.parametrize("cache", ["loose", "none"])
def test_init_script_is_valid_shell(tmp_path, cache):
    script = tmp_path / "init"
    script.write_text(_render_init(cache))
    assert subprocess.run(["sh", "-n", str(script)], capture_output=True).returncode == 0
    text = script.read_text()
    assert text.startswith("#!/bin/busybox sh\n")
    assert "exec /usr/sbin/sshd -D -e -f /run/harness/sshd_config" in text
    # The boot waits for this mark on the console: `say` prefixes "harness-init: ".
    assert guest.SSHD_READY_MARK == "harness-init: sshd starting"
    assert 'echo "harness-init: $* at uptime' in text and 'say "sshd starting"' in text


def test_sshd_config_allows_only_the_generated_key():
    conf = dict(line.split(None, 1) for line in guest.SSHD_CONFIG.splitlines()
                if line and not line.startswith("#"))
    assert conf["PasswordAuthentication"] == "no"
    assert conf["KbdInteractiveAuthentication"] == "no"
    assert conf["PermitRootLogin"] == "prohibit-password"
    assert conf["AuthorizedKeysFile"] == f"{guest.GUEST_MOUNT}/authorized_keys"
    assert conf["HostKey"] == f"{guest.GUEST_MOUNT}/host_key"


@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="needs ssh-keygen (openssh-client)")
def test_prepare_writes_fresh_keys_and_known_hosts(tmp_path, monkeypatch):
    monkeypatch.setattr(guest, "build_initramfs", lambda version, out: Path(out).write_bytes(b"x"))
    one = tmp_path / "one"
    two = tmp_path / "two"
    for d in (one, two):
        d.mkdir(mode=0o700)
    f1 = guest.prepare(str(one), "vm1", "1.0")
    f2 = guest.prepare(str(two), "vm1", "1.0")
    assert f1.host_public_key() != f2.host_public_key()  # fresh per boot
    assert stat.S_IMODE(os.stat(f1.host_key).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(f1.user_key).st_mode) == 0o600
    assert os.access(f1.init, os.X_OK)
    assert (one / "authorized_keys").read_text() == Path(f1.user_key + ".pub").read_text()
    f1.write_known_hosts(40022)
    assert Path(f1.known_hosts).read_text() == f"[127.0.0.1]:40022 {f1.host_public_key()}\n"
    assert f"init={f1.init}" in guest.kernel_append(f1)


# -- boot bookkeeping ------------------------------------------------------------------------


def test_console_summary_prefers_init_messages_and_panic_reason():
    text = "\n".join(
        [f"[0.1] boot line {i}" for i in range(40)]
        + ["harness-init: FAILED: mount the harness share at uptime 3.1s",
           "[3.2] Kernel panic - not syncing: Attempted to kill init!"]
        + [f"[3.2] stack frame {i}" for i in range(30)]
    )
    summary = console_summary(text, lines=5)
    assert "FAILED: mount the harness share" in summary
    assert "Kernel panic" in summary
    assert "stack frame" not in summary


def test_forget_guest_changes_marks_only_entries_inside_that_vm(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    vm = SSHNode("vm", "127.0.0.1", port=40022, known_hosts=str(tmp_path / "kh"))
    other_vm = SSHNode("vm2", "127.0.0.1", port=40023, known_hosts=str(tmp_path / "kh2"))
    inside = journal.record("file", NamespaceNode("lab-a", vm), path="/tmp/x")
    on_vm = journal.record("file", vm, path="/tmp/y")
    elsewhere = journal.record("file", NamespaceNode("lab-a", other_vm), path="/tmp/z")
    local = journal.record("file", LocalNode(), path=str(tmp_path / "keep"))
    assert forget_guest_changes(journal, vm.describe()) == 2
    assert {e.seq for e in journal.pending()} == {elsewhere.seq, local.seq}
    assert inside.undone and on_vm.undone
    lines = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert {line.get("how") for line in lines if line["op"] == "undone"} == {"ended with VM vm"}


def _serve_once(reply: bytes) -> tuple[int, threading.Thread]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def run():
        conn, _ = srv.accept()
        if reply:
            conn.sendall(reply)
        conn.close()
        srv.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return srv.getsockname()[1], thread


@pytest.mark.parametrize("reply, expected", [(b"SSH-2.0-OpenSSH_9.2\r\n", True), (b"", False),
                                             (b"HTTP/1.1 400\r\n", False)])
def test_ssh_banner_check_needs_a_real_banner(reply, expected):
    port, thread = _serve_once(reply)
    assert _ssh_banner(port, timeout=5) is expected
    thread.join(5)


def _fake_boot(monkeypatch, tmp_path, waits):
    """boot_vm with everything but its own bookkeeping stood in: QEMU is `sleep` (a real,
    journalled process), and ``waits`` says what each wait for SSH does in turn."""
    from harness.vm import boot

    class Files:
        def __init__(self, boot_dir):
            self.console_log = os.path.join(boot_dir, "console.log")
            self.initrd = self.user_key = self.known_hosts = os.path.join(boot_dir, "x")

        def write_known_hosts(self, port):
            pass

    started = []

    def start_qemu(journal, launch):
        Path(launch.console_log).write_text("")  # QEMU's chardev creates it
        proc = journal.start(LocalNode(), ["sleep", "60"])
        started.append(proc)
        return proc

    def wait(node, proc, files, version, deadline, spec, accel_verdict):
        step = waits.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    monkeypatch.setattr(boot, "require_programs", lambda: {"busybox": "/bin/busybox",
                                                           "qemu-system-x86_64": "/q"})
    monkeypatch.setattr(boot.guest, "is_static_elf", lambda path: True)
    monkeypatch.setattr(boot, "resolve_kernel", lambda kernel: ("/boot/vmlinuz-6.1", "6.1"))
    monkeypatch.setattr(boot, "require_memory", lambda spec: None)
    monkeypatch.setattr(boot, "bootable_kernel", lambda kernel, version: ("/k", "pvh"))
    monkeypatch.setattr(boot, "probe_accel", lambda *a, **k: accel.AccelVerdict("tcg", "test"))
    monkeypatch.setattr(boot.guest, "prepare", lambda boot_dir, *a: Files(boot_dir))
    monkeypatch.setattr(boot.guest, "kernel_append", lambda files: "quiet")
    monkeypatch.setattr(boot, "_start_qemu", start_qemu)
    monkeypatch.setattr(boot, "_wait_for_ssh", wait)
    return started


def test_a_guest_silent_until_its_timeout_is_booted_once_more_and_recorded(tmp_path, monkeypatch):
    from harness.vm.boot import SilentBootError

    journal = Journal(tmp_path / "journal.jsonl")
    started = _fake_boot(monkeypatch, tmp_path, [SilentBootError("printed nothing"), 1.5])
    with boot_vm(VM(name="s1"), journal) as vm:
        assert vm.boot.silent_boots == 1 and vm.boot.guest_sshd_uptime_s == 1.5
        first, second = started
        assert first.poll() is not None and second.poll() is None  # the silent one stopped
        assert vm.boot.qemu_pid == second.pid
    assert second.poll() is not None and journal.pending() == []


def test_a_guest_silent_twice_fails_the_boot_and_leaves_nothing(tmp_path, monkeypatch):
    from harness.vm.boot import SilentBootError, VMBootError

    journal = Journal(tmp_path / "journal.jsonl")
    started = _fake_boot(monkeypatch, tmp_path,
                         [SilentBootError("printed nothing"), SilentBootError("again")])
    with pytest.raises(VMBootError, match="again"):
        with boot_vm(VM(name="s2"), journal):
            pytest.fail("must not boot")
    assert len(started) == 2 and all(p.poll() is not None for p in started)
    assert journal.pending() == []


def test_a_guest_that_printed_something_is_not_booted_again(tmp_path, monkeypatch):
    from harness.vm.boot import VMBootError

    journal = Journal(tmp_path / "journal.jsonl")
    started = _fake_boot(monkeypatch, tmp_path, [VMBootError("no SSH; console: panic")])
    with pytest.raises(VMBootError, match="panic"):
        with boot_vm(VM(name="s3"), journal):
            pytest.fail("must not boot")
    assert len(started) == 1 and journal.pending() == []
