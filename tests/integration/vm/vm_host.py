"""What the VM tests check of this host: that it can boot a VM, and that a VM left nothing."""

from __future__ import annotations

import os

import pytest

from harness.errors import CapabilityMissing
from harness.journal.journal import Journal
from harness.vm.machine import require_programs, resolve_kernel


def require_vm_host() -> None:
    if os.geteuid() != 0:
        pytest.skip("VM tests need root (kernel image is 0600, guest labs need namespaces)")
    try:
        require_programs()
        resolve_kernel()
    except CapabilityMissing as exc:
        pytest.skip(f"cannot boot VM nodes here: {exc}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def qemu_pids(journal: Journal) -> list[int]:
    return [e.data["pid"] for e in journal.entries()
            if e.kind == "process" and "qemu-system" in e.data.get("command", "")]


def assert_nothing_left(journal: Journal, boot_dirs: list[str]) -> None:
    pids = qemu_pids(journal)
    assert pids, "the journal must have recorded the QEMU process"
    assert not [p for p in pids if alive(p)], "a QEMU process survived"
    assert not [d for d in boot_dirs if os.path.exists(d)], "a per-boot directory survived"
    logs = [e.data.get("log") for e in journal.entries() if e.kind == "process"]
    assert not [p for p in logs if p and os.path.exists(p)], "a process log survived"
    assert journal.pending() == [], [(e.kind, e.data) for e in journal.pending()]
