"""What a regime gate reads and what it gives: :class:`RunFacts`, the facts of a run the machine
gates read from its run.json (a fact not recorded is ``None``, and fails the gate that needs
it), and :class:`GateResult`, a gate evaluated on one run with the figures it read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class GateResult:
    """A gate evaluated on one run: passed or not, with the figures it read."""

    gate: str
    passed: bool
    figures: str

    def text(self) -> str:
        return f"{self.gate}: {'passed' if self.passed else 'FAILED'} ({self.figures})"


@dataclass(frozen=True)
class RunFacts:
    """The facts of a run the machine gates read, from its run.json."""

    host_cores: int | None  # the CPUs the controller could run on
    vms: int  # VMs of the run's lab (0: namespaces on the host kernel, or a user's machines)
    vcpus_per_vm: int | None
    accel: str | None  # "kvm", "tcg"; None without VMs
    kernel_args: tuple[str, ...] = ()  # what the VMs' kernels were booted with beyond ours

    @property
    def booted_one_cpu(self) -> str:
        """The kernel argument that booted each VM's kernel on one CPU ("" if none did):
        ``nosmp``, ``maxcpus=0`` or ``maxcpus=1``."""
        for arg in self.kernel_args:
            if arg in ("nosmp", "maxcpus=0", "maxcpus=1"):
                return arg
        return ""
    #: run.json's link verification, one record per link direction (empty: not recorded)
    links: tuple[Mapping, ...] = ()

    @classmethod
    def from_meta(cls, meta: Mapping) -> RunFacts:
        placement = meta.get("placement") or {}
        vm = placement.get("vm") or {}
        controller = (meta.get("provenance") or {}).get("controller") or {}
        cores = controller.get("cpus")
        if cores is None:
            cores = (meta.get("machine_activity") or {}).get("cpus")
        vms = int(placement.get("machines") or 0) if vm else 0
        return cls(host_cores=int(cores) if cores else None, vms=vms,
                   vcpus_per_vm=int(vm["cpus"]) if vm.get("cpus") else None,
                   accel=vm.get("accel") if vm else None,
                   kernel_args=tuple(vm.get("kernel_args") or ()),
                   links=tuple(meta.get("link_verification") or ()))

