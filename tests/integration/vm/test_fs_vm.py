"""NFSv4 and GlusterFS for real, in one lab VM (the folder's: conftest.py's ``guest``): serve, export,
mount, fio, then undo it all.

Everything runs inside the VM (Debian's stock kernel, the host's root read-only
over 9p): the server and the client are the same machine and the client
mounts the VM's own address, so no traffic leaves it. Afterwards the VM must
be as it was: the same mounts, kernel modules and processes (nfsd's kernel
threads included), no export, no brick process, no FUSE client, no state
tmpfs, and every journal entry undone. The steps' wall times under TCG are
printed (`pytest -s`) and were measured for docs/measurements.md.
"""

from __future__ import annotations

import time

import pytest
from conftest import needs_root

from harness.config import apply
from harness.config.glusterfs import GLUSTERD, GlusterDaemon, GlusterMount, GlusterVolume
from harness.config.nfs import RPC_NFSD, NfsExport, NfsMount, NfsServer
from harness.errors import SpecError
from harness.lab.probe import probe
from harness.tools.fio import FIO, FioJob, run_fio
from harness.vm.qemu import GUEST_ADDR

pytestmark = [pytest.mark.integration, pytest.mark.vm, needs_root]

EXPORT, NFS_MNT = "/tmp/harness-s2-export", "/tmp/harness-s2-nfs"
BRICK_FS, GLUSTER_MNT = "/tmp/harness-s2-bricks", "/tmp/harness-s2-gluster"
BRICK = f"{BRICK_FS}/b1"
MB = 1 << 20
# What the state check leaves out: its own shell, ps and the SSH session; kernel workers.
TRANSIENT = ("ps", "sh", "sshd", "cat", "cut", "sort", "awk", "timeout", "ls")


def _state(vm) -> dict:
    out = vm.run("cat /proc/mounts; echo @@; cut -d' ' -f1 /proc/modules | sort; echo @@; "
                 "ps -eo pid=,comm=; echo @@; ls -d /tmp/harness-s2-* 2>/dev/null; true",
                 timeout=60).stdout
    mounts, modules, procs, paths = out.split("@@\n")
    return {"mounts": sorted(mounts.splitlines()), "modules": modules.split(),
            "procs": {tuple(line.split(None, 1)) for line in procs.splitlines() if line.strip()},
            "paths": paths.split()}


def _new_processes(before: set, after: set) -> list:
    return sorted(p for p in after - before
                  if p[1] not in TRANSIENT and not p[1].startswith(("kworker", "rcu_", "jbd2")))


def _timed(timings: dict, name: str, fn):
    started = time.monotonic()
    out = fn()
    timings[name] = round(time.monotonic() - started, 2)
    return out


def _write_read(vm, directory: str, label: str, timings: dict) -> None:
    common = dict(name="seq", directory=directory, block_size=MB, size=4 * MB, numjobs=2)
    (w,) = _timed(timings, f"{label} fio write", lambda: run_fio(vm, FioJob(rw="write", **common),
                                                               timeout=120))
    (r,) = _timed(timings, f"{label} fio read", lambda: run_fio(vm, FioJob(rw="read", **common),
                                                              timeout=120))
    assert (w.rw, w.bytes, w.numjobs) == ("write", 8 * MB, 2) and w.mb_per_s > 0
    assert (r.rw, r.bytes) == ("read", 8 * MB) and r.mb_per_s > 0
    print(f"\n{label}: write {w.mb_per_s:.1f} MB/s, read {r.mb_per_s:.1f} MB/s (1 MB = 1e6 B)")


def _brick_filesystem(vm, journal, timings) -> None:
    """An ext4 on a RAM disk (brd) for the brick: glusterfsd needs user.* extended
    attributes, which the VM's tmpfs (Linux 6.1) lacks. It stands in for the study's data
    disk; recorded so that the journal removes it too."""
    journal.record("kernel-module", vm, modules=["brd"])
    journal.record("mountpoint", vm, path=BRICK_FS, made=True)  # made by the mkdir below
    journal.record("unmount", vm, path=BRICK_FS, fstype="ext4", source="/dev/ram0", made=True)
    _timed(timings, "brick ext4 on brd", lambda: vm.run(
        f"modprobe brd rd_nr=1 rd_size=262144 && mkfs.ext4 -q -F /dev/ram0 && "
        f"mkdir {BRICK_FS} && mount /dev/ram0 {BRICK_FS}", timeout=120))


def test_nfs_and_glusterfs_served_mounted_measured_and_undone_in_one_vm(guest):
    vm, journal = guest
    timings: dict[str, float] = {}
    caps = probe(vm, tools=[FIO, RPC_NFSD, GLUSTERD])
    assert caps.has("nfs") and caps.has("glusterfs"), caps.describe()
    assert caps.tools["fio"] == "fio-3.33" and caps.tools["glusterd"].startswith("glusterfs 10")
    before = _state(vm)
    with journal.scope():
        _brick_filesystem(vm, journal, timings)
        ready = _state(vm)
        booted = len(journal.entries())
        with journal.scope():
            _serve_mount_measure(vm, journal, timings)
            undo_started = time.monotonic()
        timings["undo all"] = round(time.monotonic() - undo_started, 2)
        print(f"\nTCG timings (s): {timings}")
        after = _state(vm)
        left = [(e.kind, e.data) for e in journal.entries()[booted:] if not e.undone]
        assert left == []
        # exactly as before the operations: mounts, modules, processes (nfsd's threads too)
        assert after["mounts"] == ready["mounts"]
        assert after["modules"] == ready["modules"]
        assert after["paths"] == [BRICK_FS]
        assert _new_processes(ready["procs"], after["procs"]) == []
    final = _state(vm)
    assert final["mounts"] == before["mounts"] and final["paths"] == []
    # glusterd configures geo-replication at each start unless gsyncd is stubbed: 40-90 s
    assert timings["glusterd start"] < 60


def _serve_mount_measure(vm, journal, timings) -> None:
    # NFS: the server, a directory of the VM's /tmp exported as the NFSv4 pseudo root
    # (fsid=0: the VM's own root is 9p, which nfsd cannot export), a mount of SERVER:/
    _timed(timings, "nfs server", lambda: apply(journal, [NfsServer(vm, threads=4)]))
    journal.record("file", vm, path=EXPORT)
    vm.run(f"mkdir {EXPORT}", timeout=30)
    with pytest.raises(SpecError, match="add fsid=0"):
        apply(journal, [NfsExport(vm, EXPORT, GUEST_ADDR, ("rw", "sync"))])
    _timed(timings, "nfs export", lambda: apply(journal, [NfsExport(
        vm, EXPORT, GUEST_ADDR, ("rw", "sync", "no_subtree_check", "no_root_squash",
                                 "fsid=0"))]))
    _timed(timings, "nfs mount", lambda: apply(journal, [NfsMount(
        vm, GUEST_ADDR, "/", NFS_MNT, ("vers=4.2",))]))
    assert f"{GUEST_ADDR}:/ {NFS_MNT} nfs4 " in vm.read_text("/proc/mounts")
    _write_read(vm, NFS_MNT, "nfs", timings)
    sizes = vm.run(f"stat -c %s {EXPORT}/seq.0.0 {EXPORT}/seq.1.0", timeout=30).stdout
    assert sizes.split() == [str(4 * MB)] * 2  # the files are on the server's side

    # GlusterFS: glusterd, a one-brick volume on the VM's own address, a FUSE mount
    _timed(timings, "glusterd start", lambda: apply(journal, [GlusterDaemon(vm)]))
    _timed(timings, "gluster volume create+start", lambda: apply(journal, [GlusterVolume(
        vm, "s2v", [(GUEST_ADDR, BRICK)])]))
    _timed(timings, "glusterfs mount", lambda: apply(journal, [GlusterMount(
        vm, GUEST_ADDR, "s2v", GLUSTER_MNT)]))
    assert f"{GUEST_ADDR}:/s2v {GLUSTER_MNT} fuse.glusterfs " in vm.read_text("/proc/mounts")
    _write_read(vm, GLUSTER_MNT, "glusterfs", timings)
    assert vm.run(f"stat -c %s {BRICK}/seq.0.0", timeout=30).stdout.split() == [str(4 * MB)]
