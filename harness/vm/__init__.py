"""VM nodes: Debian's stock kernel under QEMU, controlled only over SSH.

Why this route (summary for the README):

* **Kernel**: Debian's ``linux-image-amd64`` as installed by apt, booted
  directly (``-kernel``), with the host root file system shared *read-only*
  over 9p. The guest therefore runs exactly the host's user space (iperf3,
  tc, python, this project from /work) and loads modules (tipc, sctp,
  sch_netem, rdma_rxe) from the host's ``/lib/modules/<version>``, which must
  match the booted kernel. No disk image to build, ship or keep in sync.
* **QEMU directly, not vng**: one process whose pid the journal records and
  kills; virtme-ng is used only for its initramfs builder (busybox + 9p
  modules). Our own tiny PID 1 (see guest.py) skips udev, which cost 8-16 s of
  a TCG boot here.
* **Accelerator**: KVM only if a bounded probe boot shows it works (on a PVM
  host a stock kernel hangs under KVM); otherwise TCG. Verdict cached per host
  kernel and guest kernel, recorded with its reason in each boot record.
* **Transport**: the same SSH (paramiko) as for real machines. Fresh host and
  user keys per boot, host key checking stays on (the known_hosts file is
  written from the generated key, never learned from the network). Networking
  is QEMU user mode with ``restrict=on``: one forward from a free
  127.0.0.1 port to guest :22, nothing reaches beyond the VM, no tap devices.

Inside a VM, labs are built from network namespaces exactly as on the host
(``NamespaceNode(netns, parent=vm)``).
"""

from . import checks  # noqa: F401  (registers the tipc_bearer undo handler)
from .accel import AccelVerdict, probe_accel
from .boot import BootRecord, VMBootError, VMNode, boot_vm, forget_guest_changes
from .spec import VM, resolve_kernel

__all__ = [
    "VM",
    "AccelVerdict",
    "BootRecord",
    "VMBootError",
    "VMNode",
    "boot_vm",
    "forget_guest_changes",
    "probe_accel",
    "resolve_kernel",
]
