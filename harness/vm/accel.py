"""Choose KVM or TCG for VM nodes with a bounded probe, and remember the verdict.

``/dev/kvm`` existing is not enough: on a PVM host (as on the development
machines of this project) KVM accepts the VM and a stock Debian kernel then
hangs during early boot forever. So the probe *boots the kernel* under KVM
with no root device: a working KVM reaches "VFS: Unable to mount root fs",
panics, and (``panic=-1`` + ``-no-reboot``) QEMU exits within a second or
two. If that does not happen within ``probe_timeout_s`` the QEMU process is
killed and the verdict is TCG, with the reason recorded.

The verdict is cached in ``~/.cache/harness/accel-<host kernel>-<guest
kernel>.json`` (honouring XDG_CACHE_HOME) so the probe runs once per host
kernel / guest kernel pair. ``HARNESS_VM_ACCEL=kvm|tcg`` overrides it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..nodes import LocalNode
from ..ownpath import not_own_reason, own_file
from .qemu import accel_args

PROBE_TIMEOUT_S = 20.0
_PROBE_LOCK = threading.Lock()
PROBE_APPEND = "console=ttyS0 panic=-1 loglevel=4 root=/dev/harness-probe-no-root"
#: Lines a kernel prints once it got far enough to look for its root fs.
_REACHED_ROOT = re.compile(r"VFS: (Unable to mount root|Cannot open root)|Kernel panic")


@dataclass(frozen=True)
class AccelVerdict:
    accel: str  # "kvm" | "tcg"
    reason: str
    probe_s: float | None = None  # how long the KVM probe took (None: not probed)
    cached: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "harness"


def cache_path(kernel_version: str, host_release: str | None = None) -> Path:
    host = host_release or os.uname().release
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"accel-{host}-{kernel_version}")
    return cache_dir() / f"{safe}.json"


def _read_cache(path: Path) -> AccelVerdict | None:
    """The cached verdict, if no other user could have written it (:mod:`harness.ownpath`)."""
    if not_own_reason(path.parent) is not None or not own_file(path):
        return None
    try:
        data = json.loads(path.read_text())
        if data.get("accel") in ("kvm", "tcg"):
            return AccelVerdict(data["accel"], data["reason"], data.get("probe_s"), cached=True)
    except (OSError, ValueError, KeyError):
        pass
    return None


def _write_cache(path: Path, verdict: AccelVerdict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**verdict.to_dict(), "cached": False, "measured_at": time.time()}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".accel-", suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh, indent=1)
    os.replace(tmp, path)


def probe_boot(
    qemu: str, kernel: str, accel: str, timeout_s: float, journal=None
) -> tuple[bool, float, str]:
    """Boot ``kernel`` with no root under ``accel``; return (finished, seconds, console).

    ``finished`` is true when the kernel reached its root-mount panic and QEMU
    exited by itself within ``timeout_s``. The QEMU process is always gone on
    return (killed by its pid on timeout, error or Ctrl-C); with a journal it
    is also recorded, so a crash of the harness leaves a journal entry to undo.
    """
    argv = [
        qemu, "-no-user-config", "-nodefaults", "-no-reboot",
        "-machine", "q35,sata=off,smbus=off,usb=off,vmport=off",
        *accel_args(accel), "-smp", "1", "-m", "256M",
        "-display", "none", "-vga", "none", "-monitor", "none", "-parallel", "none",
        "-serial", "stdio", "-kernel", kernel, "-append", PROBE_APPEND,
    ]
    node = LocalNode()
    cmd = "exec " + shlex.join(argv)
    proc = journal.start(node, cmd) if journal is not None else node.spawn(cmd)
    started = time.monotonic()
    try:
        deadline = started + timeout_s
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        elapsed = time.monotonic() - started
        exited = proc.poll() is not None
        output = proc.output()
    finally:
        if journal is not None:
            journal.stop(proc)
        else:
            proc.stop()
            if proc.info.log:
                try:
                    os.unlink(proc.info.log)
                except FileNotFoundError:
                    pass
    return exited and bool(_REACHED_ROOT.search(output)), elapsed, output


def probe_accel(
    qemu: str,
    kernel: str,
    kernel_version: str,
    *,
    journal=None,
    refresh: bool = False,
    probe_timeout_s: float = PROBE_TIMEOUT_S,
    kvm_device: str = "/dev/kvm",
) -> AccelVerdict:
    """KVM if it demonstrably boots this kernel here, else TCG; never hangs.

    Bounded by ``probe_timeout_s`` (plus a few seconds to kill QEMU), and
    free after the first call thanks to the cache.
    """
    forced = os.environ.get("HARNESS_VM_ACCEL", "").strip().lower()
    if forced in ("kvm", "tcg"):
        return AccelVerdict(forced, "forced by HARNESS_VM_ACCEL")
    if not os.path.exists(kvm_device):
        return AccelVerdict("tcg", f"{kvm_device} does not exist (no KVM on this host)")
    if not os.access(kvm_device, os.R_OK | os.W_OK):
        return AccelVerdict("tcg", f"{kvm_device} is not readable and writable by this user")
    # VMs booted together (one thread each) share one probe: the second finds it cached
    with _PROBE_LOCK:
        path = cache_path(kernel_version)
        if not refresh:
            cached = _read_cache(path)
            if cached is not None:
                return cached
        verdict = _probe_kvm(qemu, kernel, kernel_version, probe_timeout_s, journal)
        _write_cache(path, verdict)
        return verdict


def _probe_kvm(qemu: str, kernel: str, kernel_version: str, probe_timeout_s: float,
               journal) -> AccelVerdict:
    ok, seconds, output = probe_boot(qemu, kernel, "kvm", probe_timeout_s, journal)
    if ok:
        verdict = AccelVerdict(
            "kvm", f"KVM probe boot of {kernel_version} finished in {seconds:.1f}s", seconds
        )
    elif seconds >= probe_timeout_s:
        verdict = AccelVerdict(
            "tcg",
            f"KVM probe boot of {kernel_version} did not finish within {probe_timeout_s:g}s "
            "(the kernel hangs under this host's KVM, e.g. a PVM host); using TCG",
            seconds,
        )
    else:
        tail = " | ".join(output.strip().splitlines()[-2:]) or "no output"
        verdict = AccelVerdict(
            "tcg", f"KVM probe boot of {kernel_version} failed after {seconds:.1f}s: {tail}", seconds
        )
    return verdict
