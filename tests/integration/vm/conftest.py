"""One lab VM for this folder's tests: booted once, by the first test that asks for it.

TCG is slow and the machine has two shared cores, so the VM tests that only need a guest
kernel (its modules, its own file systems, namespace labs inside it) share one VM: the VM
basics (test_vm.py), the SCTP and TIPC fan-in (test_fanin_vm.py) and NFS and GlusterFS
(test_fs_vm.py). Each of those leaves the guest as it found it, and checks that it did. The
suite's scheduler gives this folder to one worker as one unit (tests/suite_order.py), so its
files run one after another under this one boot. Tests that must boot their own VM (a crash,
a boot cut short) do so.

When the folder's last test has run, the VM is stopped and nothing may be left of it: no QEMU
process, no per-boot folder, no process log, no pending journal entry.
"""

from __future__ import annotations

import os

import pytest

from harness.journal.journal import Journal
from harness.vm import VM, boot_vm

from .vm_host import assert_nothing_left, require_vm_host


@pytest.fixture(scope="package")
def guest(tmp_path_factory):
    """The folder's VM (2 vCPUs, 1.5 GiB, Debian's stock kernel) and the journal it was booted
    in; the tests' own changes in the guest go to that journal too, each test undoing its own."""
    require_vm_host()
    journal = Journal(tmp_path_factory.mktemp("vmjournal") / "journal.jsonl")
    spec = VM(name=f"t{os.getpid()}", cpus=2, memory_mib=1536, boot_timeout_s=150)
    with boot_vm(spec, journal) as vm:
        boot_dir = os.path.dirname(vm.known_hosts)
        yield vm, journal
    assert_nothing_left(journal, [boot_dir])
