"""A VM that crashes mid-run: QEMU killed by its recorded pid while the run holds changes.

The run has a change on this host and one inside the VM; QEMU then dies
(SIGKILL, as a crash or the OOM killer would). The run must stop with one
error naming the VM, undo the host's change, and leave no QEMU process, no
per-boot directory and no pending journal entry (the guest's changes ended
with its kernel).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from harness.archive.archive import INCOMPLETE, Run
from harness.errors import HarnessError
from harness.journal.journal import Journal
from harness.nodes import LocalNode
from harness.nodes.procfs import process_start_ticks
from harness.run.session import open_session
from harness.vm import VM, boot_vm

from .vm_host import require_vm_host

pytestmark = [pytest.mark.integration, pytest.mark.vm]


def test_a_crashed_vm_stops_the_run_naming_it_and_leaves_nothing(tmp_path, monkeypatch):
    require_vm_host()
    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))
    host_change = tmp_path / "harness-host-change"  # undo removes only harness-* folders
    spec = VM(name=f"crash{os.getpid()}", cpus=1, memory_mib=1024, boot_timeout_s=150)
    with pytest.raises(HarnessError) as crashed:
        with open_session("tcrash", {}, root=tmp_path / "data") as session:
            local = LocalNode()
            session.journal.record("file", local, path=str(host_change))
            host_change.mkdir()
            vm = session.stack.enter_context(boot_vm(spec, session.journal))
            boot_dir = os.path.dirname(vm.known_hosts)
            qemu = (vm.boot.qemu_pid, process_start_ticks(vm.boot.qemu_pid))
            session.journal.record("file", vm, path="/tmp/harness-crash-test")
            vm.run(["mkdir", "/tmp/harness-crash-test"])
            os.kill(vm.boot.qemu_pid, signal.SIGKILL)  # the VM crashes
            vm.run(["true"], timeout=30)
    assert f"VM {spec.name} crashed" in crashed.value.message
    assert not getattr(crashed.value, "__notes__", None), "teardown failed too"
    deadline = time.monotonic() + 10
    while process_start_ticks(qemu[0]) == qemu[1] and time.monotonic() < deadline:
        time.sleep(0.1)  # reaped by the harness's stop; a zombie counts as gone
    assert process_start_ticks(qemu[0]) != qemu[1] or \
        Path(f"/proc/{qemu[0]}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    assert not os.path.exists(boot_dir), "the per-boot directory survived"
    assert not host_change.exists(), "the host's change was not undone"
    run = Run.open(session.run.path)
    assert run.meta["status"] == INCOMPLETE and spec.name in run.meta["error"]
    journal = Journal(run.path / "journal.jsonl")
    assert journal.pending() == [], [(e.kind, e.data) for e in journal.pending()]
    logs = [e.data.get("log") for e in journal.entries() if e.kind == "process"]
    assert logs and not [p for p in logs if p and os.path.exists(p)], "a process log survived"
