"""Boot a VM node, hand it out as an SSH node, and take every trace of it away.

``boot_vm(spec, journal)`` is a context manager. In order, each step recorded
in the journal *before* it is taken:

1. checks that cost nothing to undo: spec, host programs (the error names the
   Debian package), kernel + matching modules, MemAvailable;
2. the accelerator verdict (:func:`harness.vm.accel.probe_accel`, bounded);
3. a per-boot directory (journal kind ``file``) with fresh keys and the guest
   init (guest.py);
4. QEMU, started by the journal (kind ``process``) as one process whose pid
   is QEMU's own, so it is stopped by pid on exit, error or Ctrl-C, and
   ``harness lab clean`` can stop it after a crash of the harness;
5. waiting, bounded by ``spec.boot_timeout_s``, for the guest's sshd banner
   and then a real login with strict host key checking, which must report
   the kernel we booted.

On exit the SSH connection is closed, QEMU is stopped, journal entries of
changes *inside* the VM that are still pending are marked undone (they died
with the guest kernel: its namespaces, qdiscs and tmpfs exist nowhere else),
and the per-boot directory is removed. Nothing else is created: no tap
device, bridge, route or firewall rule, and the only socket is QEMU's
loopback forward, which dies with QEMU.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from ..errors import CapabilityMissing, CommandTimeout, HarnessError, NodeError, WireStalled
from ..journal.journal import Journal, signals_deferred
from ..nodes import LocalNode, described_within
from ..nodes.base import Process
from ..nodes.ssh import SSHNode
from . import guest
from .accel import AccelVerdict, probe_accel
from .kimage import bootable_kernel
from .machine import VM, require_memory, require_programs, resolve_kernel
from .qemu import HOSTFWD_FAILED, QemuLaunch, free_loopback_port, qemu_command
from .wirekind import servers_not_listening

log = logging.getLogger(__name__)

PORT_ATTEMPTS = 3
# A guest that printed nothing at all by its boot timeout never reached its init: the
# emulator hung early (seen once, 2026-11-26: a TCG boot in a fresh clone's suite, 90 s and an
# empty console; the suite boots ~20 VMs). It is stopped and booted once more; the boot
# record says so.
SILENT_BOOTS = 2
_UPTIME_RE = re.compile(re.escape(guest.SSHD_READY_MARK) + r" at uptime ([0-9.]+)s")


@dataclass(frozen=True)
class BootRecord:
    """What a boot used and how long it took (goes into run provenance)."""

    name: str
    accel: str
    accel_reason: str
    boot_s: float  # QEMU start -> first successful SSH command
    prepare_s: float  # boot_vm() call -> QEMU start (checks, accel verdict, keys, initramfs)
    guest_sshd_uptime_s: float | None  # guest uptime when its sshd started
    kernel: str
    kernel_version: str
    boot_image: str  # "pvh": the kernel's ELF booted directly; "bzimage": vmlinuz as is
    cpus: int
    memory_mib: int
    ssh_port: int
    qemu_pid: int
    silent_boots: int = 0  # QEMU processes stopped before this one: their guest printed nothing
    kernel_args: tuple[str, ...] = ()  # what the study appended to the command line
    wire: str = ""  # the kind of its wires (wirekind.py: "dgram", ...); "" without wires

    def to_dict(self) -> dict:
        return asdict(self)


class VMNode(SSHNode):
    """An SSH node that is a VM booted by :func:`boot_vm`; ``boot`` says how."""

    boot: BootRecord
    qmp_socket: str = ""  # QEMU's QMP socket ("" unless the VM has disks or VM.qmp)
    disks: dict[str, str]  # DataDisk name -> QEMU device id, set by boot_vm
    console_log: str = ""  # the guest serial console's file (removed with the VM)
    wire_watch = None  # the lab's txstall.WireWatch, shared by its VMs (set by the lab)

    @property
    def sees_host_root(self) -> bool:
        return True  # QEMU exports the host's / read-only over 9p (harness.vm.guest)

    def __repr__(self) -> str:
        return f"<VMNode {self.name} {self.boot.accel} 127.0.0.1:{self.port}>"

    def _while_waiting(self) -> None:
        """A command waits in vain when a wire of the lab stopped transmitting (QEMU's
        virtio-net TX stall, :mod:`.txstall`): stopped at once with :class:`WireStalled`,
        not after its timeout (19 minutes of an S1 verdict run, 2026-11-29)."""
        found = self.wire_watch.fired() if self.wire_watch is not None else None
        if found is not None:
            raise WireStalled(*found)

    def _execute(self, cmd: str, timeout: float, stdin: bytes | None) -> tuple[int, str, str]:
        try:
            return super()._execute(cmd, timeout, stdin)
        except NodeError as exc:
            # A crashed VM looks like a broken SSH server; say what really happened.
            boot = getattr(self, "boot", None)
            if boot is None or not boot.qemu_pid or _qemu_alive(boot.qemu_pid):
                raise
            raise NodeError(f"VM {self.name} crashed: its QEMU process (pid {boot.qemu_pid}) "
                            f"is gone ({exc.message})",
                            "every change outside the VM is undone and the guest's ended with "
                            "it; run again (was the host short of memory? see dmesg)") from None


class VMBootError(NodeError):
    """The VM did not come up (QEMU exited, or no SSH within the bound)."""


class SilentBootError(VMBootError):
    """No SSH within the bound and not one line on the guest console."""


def _qemu_alive(pid: int) -> bool:
    """Is QEMU (a child of this process) still running? A zombie is not."""
    from ..nodes.procfs import read_stat

    stat = read_stat(pid)
    return stat is not None and not stat.ended


def _tail(text: str, lines: int = 12) -> str:
    kept = [ln for ln in text.replace("\r", "").splitlines() if ln.strip()][-lines:]
    return "\n    ".join(kept) if kept else "(empty)"


def console_summary(text: str, lines: int = 12) -> str:
    """The informative part of a guest console: our init's messages, and the
    lines leading up to a kernel panic rather than its stack dump."""
    text = text.replace("\r", "")
    panic = text.find("Kernel panic")
    if panic >= 0:
        end = text.find("\n", panic)
        text = text[: end if end >= 0 else len(text)]
    kept = [ln for ln in text.splitlines() if ln.strip()]
    ours = [ln for ln in kept[:-lines] if "harness-init:" in ln]
    return _tail("\n".join(ours + kept[-lines:]), lines + len(ours))


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as fh:
            return fh.read()
    except FileNotFoundError:
        return ""


def _ssh_banner(port: int, timeout: float) -> bool:
    """True if an SSH server answers on 127.0.0.1:port right now.

    A plain TCP connect is not enough: slirp accepts connections on the
    forwarded port before anything listens in the guest.
    """
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(8).startswith(b"SSH-")
    except OSError:
        return False


def _port_bound(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


class _PortTaken(Exception):
    pass


def _start_qemu(journal: Journal, launch: QemuLaunch) -> Process:
    """Start QEMU and wait until it owns the forwarded port (or has failed)."""
    proc = journal.start(LocalNode(), qemu_command(launch))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                output = proc.output()
                if HOSTFWD_FAILED in output:
                    raise _PortTaken()
                raise VMBootError(
                    f"QEMU for VM {launch.name} exited at once with status {proc.poll()}:\n    "
                    + _tail(output),
                    "run the command above by hand to see why; `qemu-system-x86_64 --version` "
                    "must work (apt-get install qemu-system-x86)",
                )
            if _port_bound(launch.ssh_port):
                return proc
            time.sleep(0.05)
        raise VMBootError(
            f"QEMU for VM {launch.name} did not open 127.0.0.1:{launch.ssh_port} within 30s",
            "the host may be overloaded; retry",
        )
    except BaseException:  # also Ctrl-C: the caller has no handle on proc yet
        with signals_deferred():
            journal.stop(proc)
        raise


def _start_on_a_free_port(journal: Journal, name: str, launch) -> tuple[Process, int]:
    """QEMU started by ``launch(port)`` on a free loopback port; another port if it was taken."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        port = free_loopback_port()
        try:
            return _start_qemu(journal, launch(port)), port
        except _PortTaken:
            if attempt == PORT_ATTEMPTS:
                raise VMBootError(
                    f"QEMU could not forward a loopback port for VM {name} "
                    f"({PORT_ATTEMPTS} ports tried)",
                    "something is taking free ports quickly; retry",
                ) from None
    raise AssertionError("unreachable")


def _await_wire_servers(spec: VM, poll_s: float = 0.2) -> None:
    """A VM whose ``stream`` wires connect to a peer's QEMU starts once those listen: QEMU
    7.2 connects once, at start, and never again (:mod:`.wirekind`)."""
    deadline = time.monotonic() + spec.boot_timeout_s
    while missing := servers_not_listening(spec.wires):
        if time.monotonic() >= deadline:
            raise VMBootError(f"VM {spec.name}: no QEMU listens on 127.0.0.1:{missing[0]} for "
                              f"its stream wire after {spec.boot_timeout_s:g}s",
                              "the peer VM did not start; see its error")
        time.sleep(poll_s)


def _wait_for_ssh(
    node: VMNode, proc: Process, files: guest.GuestFiles, version: str, deadline: float,
    spec: VM, accel: AccelVerdict,
) -> float | None:
    """Block until a login works and reports ``version``; return the guest's sshd uptime."""

    def failure(what: str, hint: str | None = None, kind: type = VMBootError) -> VMBootError:
        if hint is None and accel.accel == "kvm":
            hint = "KVM was chosen by the probe; set HARNESS_VM_ACCEL=tcg to rule it out"
        elif hint is None:
            hint = f"raise VM.boot_timeout_s (now {spec.boot_timeout_s:g}s) if the host is busy"
        return kind(
            f"VM {spec.name} ({accel.accel}): {what}\n  guest console (last lines):\n    "
            + console_summary(_read(files.console_log))
            + ("\n  qemu: " + _tail(proc.output(), 3) if proc.output().strip() else ""),
            hint,
        )

    kernel_seen = sshd_seen = False
    while True:
        if proc.poll() is not None:
            raise failure(
                f"QEMU exited with status {proc.poll()} before SSH was ready",
                "the guest console above says why; a 'harness-init: FAILED' line names the"
                " step of the guest init (harness/vm/guest.py) that failed",
            )
        console = _read(files.console_log)
        if time.monotonic() >= deadline:
            raise failure(f"no SSH server within boot_timeout_s={spec.boot_timeout_s:g}s",
                          kind=VMBootError if console.strip() else SilentBootError)
        if not kernel_seen and console:
            kernel_seen = True
            log.debug("VM %s: first console output after %.1fs", spec.name, _since(deadline, spec))
        if guest.SSHD_READY_MARK in console:
            if not sshd_seen:
                sshd_seen = True
                log.debug("VM %s: guest sshd starting after %.1fs", spec.name,
                          _since(deadline, spec))
            if _ssh_banner(node.port, timeout=2.0):
                log.debug("VM %s: SSH banner after %.1fs", spec.name, _since(deadline, spec))
                break
        time.sleep(0.2)
    match = _UPTIME_RE.search(console)
    attempts = 0
    while True:
        attempts += 1
        remaining = deadline - time.monotonic()
        try:
            result = node.run("uname -r", timeout=max(remaining, 5.0), check=False)
        except CommandTimeout as exc:
            raise failure(f"the first SSH command did not finish: {exc.message}") from None
        except NodeError as exc:
            # The banner was there, so sshd runs: retry once for a transient
            # reset, but a refused host key or login is a real error.
            if attempts >= 2 or "host key" in str(exc) or time.monotonic() >= deadline:
                raise failure(f"SSH login failed: {exc.message}") from None
            node.close()
            time.sleep(0.5)
            continue
        if result.ok and result.stdout.strip() == version:
            return float(match.group(1)) if match else None
        raise failure(
            f"`uname -r` over SSH said {result.stdout.strip()!r} (status {result.exit_status}),"
            f" expected {version!r}"
        )


def _since(deadline: float, spec: VM) -> float:
    return time.monotonic() - (deadline - spec.boot_timeout_s)


def forget_guest_changes(journal: Journal, vm_desc: dict) -> int:
    """Mark pending entries made inside the (now stopped) VM as undone.

    Their state lived only in the guest kernel and its tmpfs and ended with
    QEMU; trying to undo them later would only reach a dead port.
    """
    count = 0
    for entry in journal.pending():
        if described_within(entry.node, vm_desc):
            journal.mark_undone(entry, how=f"ended with VM {vm_desc.get('name')}")
            count += 1
    return count


@contextmanager
def boot_vm(spec: VM, journal: Journal, *, refresh_accel: bool = False) -> Iterator[VMNode]:
    """Boot ``spec`` and yield it as a :class:`VMNode`; everything is gone afterwards."""
    called = time.monotonic()
    spec.validate()
    programs = require_programs()
    if not guest.is_static_elf(programs["busybox"]):
        raise CapabilityMissing(
            f"{programs['busybox']} is not statically linked; the VM initramfs needs a static one",
            "apt-get install busybox-static",
        )
    kernel, version = resolve_kernel(spec.kernel)
    require_memory(spec)
    qemu = programs["qemu-system-x86_64"]
    image, image_kind = bootable_kernel(kernel, version)
    accel = probe_accel(qemu, image, version, journal=journal, refresh=refresh_accel)

    local = LocalNode()
    boot_dir = os.path.join(
        tempfile.gettempdir(), f"harness-vm-{spec.name}-{os.getpid()}-{secrets.token_hex(4)}"
    )
    dir_entry = journal.record("file", local, path=boot_dir)
    proc: Process | None = None
    node: VMNode | None = None
    try:
        os.mkdir(boot_dir, 0o700)
        files = guest.prepare(
            boot_dir, spec.name, version, spec.root_cache, programs["busybox"]
        )
        append = " ".join((guest.kernel_append(files), *spec.kernel_args))
        disks = tuple((disk, os.path.join(boot_dir, f"disk-{disk.name}.raw"))
                      for disk in spec.disks)
        for _disk, path in disks:  # sparse: blocks are allocated as the guest writes them
            with open(path, "xb") as backing:
                backing.truncate(_disk.size_mib << 20)
        qmp_socket = os.path.join(boot_dir, "qmp.sock") if disks or spec.qmp else ""
        _await_wire_servers(spec)
        for silent in range(SILENT_BOOTS):
            started = time.monotonic()

            def launch(port: int) -> QemuLaunch:
                files.write_known_hosts(port)
                return QemuLaunch(
                    qemu=qemu, name=spec.name, accel=accel.accel, cpus=spec.cpus,
                    memory_mib=spec.memory_mib, kernel=image, initrd=files.initrd,
                    append=append, boot_dir=boot_dir, console_log=files.console_log,
                    ssh_port=port, wires=spec.wires, disks=disks, qmp_socket=qmp_socket,
                )

            proc, port = _start_on_a_free_port(journal, spec.name, launch)
            node = VMNode(
                spec.name, "127.0.0.1", port=port, user="root", key_filename=files.user_key,
                known_hosts=files.known_hosts, accept_unknown_host=False, connect_timeout=10.0,
            )
            try:
                uptime = _wait_for_ssh(
                    node, proc, files, version, started + spec.boot_timeout_s, spec, accel
                )
                break
            except SilentBootError:
                if silent + 1 == SILENT_BOOTS:
                    raise
                log.warning("VM %s printed nothing in %gs: QEMU (pid %d) stopped, booting "
                            "it once more", spec.name, spec.boot_timeout_s, proc.pid)
                with signals_deferred():
                    node.close()
                    journal.stop(proc)
                    node = proc = None
                if os.path.exists(files.console_log):
                    os.remove(files.console_log)
        node.qmp_socket = qmp_socket
        node.console_log = files.console_log
        node.disks = {disk.name: f"vdisk{i}" for i, (disk, _path) in enumerate(disks)}
        node.boot = BootRecord(
            name=spec.name, accel=accel.accel, accel_reason=accel.reason,
            boot_s=round(time.monotonic() - started, 3), prepare_s=round(started - called, 3),
            guest_sshd_uptime_s=uptime,
            kernel=kernel, kernel_version=version, boot_image=image_kind, cpus=spec.cpus,
            memory_mib=spec.memory_mib, ssh_port=port, qemu_pid=proc.pid,
            silent_boots=silent, kernel_args=tuple(spec.kernel_args),
            wire=spec.wires[0].kind.describe() if spec.wires else "",
        )
        _note_boot(journal, proc, node.boot)
        log.info("VM %s ready for SSH on 127.0.0.1:%d after %.1fs (%s: %s)", spec.name, port,
                 node.boot.boot_s, accel.accel, accel.reason)
        yield node
    finally:
        with signals_deferred():
            failures = []
            if node is not None:
                node.close()
            if proc is not None:
                try:
                    journal.stop(proc)
                except Exception as exc:  # keep going: the directory must still go
                    failures.append(f"stopping QEMU (pid {proc.pid}): {exc}")
                else:
                    if node is not None:
                        forget_guest_changes(journal, node.describe())
            try:
                journal.undo(dir_entry)
            except Exception as exc:
                failures.append(f"removing {boot_dir}: {exc}")
            if failures:
                error = HarnessError(
                    f"VM {spec.name} teardown incomplete: " + "; ".join(failures),
                    f"`harness lab clean` retries from {journal.path}",
                )
                in_flight = sys.exc_info()[1]
                if in_flight is None:
                    raise error
                in_flight.add_note(str(error))  # do not hide why the boot failed


def forget_changes_in_vms(journal: Journal) -> int:
    """For a journal another process left behind (``harness lab clean``): drop every
    pending change made inside one of its VMs. Their QEMU is stopped by the same
    clean (or is dead already), and the guest's state ends with it.
    """
    # read back from a file: a port is an int, anything else names no VM (and is no reason
    # to leave the run's other changes undone)
    found = [e.data["vm"].get("ssh_port") for e in journal.pending()
             if e.kind == "process" and isinstance(e.data.get("vm"), dict)]
    ports = {p for p in found if isinstance(p, int) and not isinstance(p, bool)}
    count = 0
    for entry in journal.pending():
        desc = entry.node
        while isinstance(desc, dict):
            if desc.get("type") == "ssh" and desc.get("host") == "127.0.0.1" \
                    and desc.get("port") in ports:
                journal.mark_undone(entry, how=f"ended with the VM on port {desc['port']}")
                count += 1
                break
            desc = desc.get("parent")
    return count


def _note_boot(journal: Journal, proc: Process, record: BootRecord) -> None:
    """Add the boot facts to QEMU's journal entry (provenance of the run)."""
    seq = proc.info.extra.get("journal_seq")
    for entry in journal.entries():
        if entry.seq == seq:
            journal.update(entry, vm=record.to_dict())
            return
