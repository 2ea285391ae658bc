"""VM nodes: Debian's stock kernel under QEMU, controlled only over SSH.

Use::

    from harness.vm import VM, boot_vm
    with boot_vm(VM(name="vm1", cpus=2, memory_mib=2048), journal) as vm:
        vm.run("modprobe sctp")                     # vm is an SSHNode (VMNode)
        with Lab(topology, journal, host=vm) as lab: ...  # namespaces inside the VM
        vm.boot.to_dict()                           # accel + why, boot seconds, ...

Why this route (docs/explanation/placement.md):

* **Kernel**: Debian's ``linux-image-amd64`` as installed by apt, with the
  host root file system shared *read-only* over 9p. The guest runs exactly the
  host's user space (iperf3, tc, python, this project and /work/venv) and
  loads modules (tipc, sctp, sch_netem, rdma_rxe) from the host's
  ``/lib/modules/<version>``, which must match the booted kernel. No disk
  image to build, ship or keep in sync. The guest writes only to tmpfs.
* **QEMU directly, not vng**: one process whose pid the journal records and
  kills by pid; virtme-ng is used only for its initramfs builder. vng works
  (~17 s per command) but is a chain of processes with its own temp files.
* **Fast under TCG** (measured on this 2-core shared host): the kernel's
  ELF is booted directly through its PVH entry (kimage.py; skips 7-14 s of
  XZ self-decompression under TCG), our own busybox-only PID 1 replaces
  virtme-ng-init (no udev: saved 8-16 s), and the shared root is remounted
  with the guest page cache (``VM.root_cache``). Ready for SSH in 10-14 s at
  host load ~2, 15-25 s at load ~4 (target <= 30 s).
* **Accelerator**: KVM only if a bounded probe boot shows it works (on a PVM
  host a stock kernel hangs under KVM forever); otherwise TCG. The verdict and
  its reason are cached per host kernel and guest kernel and recorded in each
  boot record; ``HARNESS_VM_ACCEL=tcg|kvm`` overrides.
* **Transport**: the same SSH (paramiko SSHNode) as for real machines. Fresh
  host and user keys per boot; host key checking stays on (known_hosts is
  written from the generated key, never learned from the network). Network:
  QEMU user mode with ``restrict=on`` and one forward from a free 127.0.0.1
  port to guest :22. Nothing leaves the VM; no tap devices, no host routes.
  A lab's wires between VMs are QEMU ``dgram`` netdevs (UDP on 127.0.0.1);
  ``HARNESS_VM_WIRE=stream`` or ``...,event_idx=off`` builds them otherwise,
  to study their TX stall (wirekind.py, benchmarks/wire_stall.py).

The guest is a kernel-feature provider, not a security boundary: it can read
the host's files (read-only), as any process of the harness could.
"""

from . import checks  # noqa: F401  (registers the tipc_bearer undo handler)
from .accel import AccelVerdict, probe_accel
from .boot import (
    BootRecord,
    VMBootError,
    VMNode,
    boot_vm,
    forget_changes_in_vms,
    forget_guest_changes,
)
from .machine import VM, resolve_kernel

__all__ = [
    "VM",
    "AccelVerdict",
    "BootRecord",
    "VMBootError",
    "VMNode",
    "boot_vm",
    "forget_changes_in_vms",
    "forget_guest_changes",
    "probe_accel",
    "resolve_kernel",
]
