"""The machine gates: what the run's VMs were (their vCPUs against the host's cores, their
accelerator, one CPU each), read from the facts run.json recorded."""

from __future__ import annotations

from collections.abc import Mapping

from .facts import GateResult, RunFacts


def no_oversubscription(facts: RunFacts, _tables, params) -> GateResult:
    """All vCPUs within the host's cores. ``vcpus_per_vm`` (optional): the vCPUs per VM the
    claim's rows need (S1's SMP level: 2), counted in place of what the run booted when
    more -- a run that booted fewer, because the host could not hold them, did not measure
    that level, and the gate says with what counts."""
    name = "no_oversubscription"
    if facts.vms == 0:
        return GateResult(name, True, "no VMs: the nodes run on a real kernel")
    if facts.vcpus_per_vm is None or facts.host_cores is None:
        return GateResult(name, False, "the VMs' vCPUs or the host's cores were not recorded")
    need = int(params.get("vcpus_per_vm") or 0)
    per_vm = max(facts.vcpus_per_vm, need)
    total = facts.vms * per_vm
    level = (f", the claim's level; the run booted {facts.vcpus_per_vm}"
             if per_vm != facts.vcpus_per_vm else "")
    return GateResult(name, total <= facts.host_cores,
                      f"{total} vCPUs ({facts.vms} VMs x {per_vm}{level}) on "
                      f"{facts.host_cores} host cores")


def accelerated_virtualisation(facts: RunFacts, _tables, params, meta: Mapping) -> GateResult:
    """VMs under KVM. ``placement`` (optional): where in run.json the claim's own lab recorded
    its placement (dotted, e.g. ``s0.far_placement``: S0's distance sweep boots a VM of its own
    while the main sweep runs on the host), read in place of the run's main placement."""
    name = "accelerated_virtualisation"
    where = str(params.get("placement") or "")
    if where:
        record: object = meta
        for key in where.split("."):
            record = record.get(key) if isinstance(record, Mapping) else None
        if not isinstance(record, Mapping):
            return GateResult(name, False, f"the placement of the claim's lab ({where}) was not "
                              "recorded")
        facts = RunFacts.from_meta({"placement": record})
    if facts.vms == 0:
        return GateResult(name, True, "no VMs: the nodes run on a real kernel")
    if not facts.accel:
        return GateResult(name, False, "the VMs' accelerator was not recorded")
    if facts.accel == "kvm":
        return GateResult(name, True, "VMs under KVM")
    return GateResult(name, False, f"VMs under {facts.accel.upper()}: every guest instruction "
                      "is emulated, so CPU time and latency inside a guest are the emulator's")


def uniprocessor(facts: RunFacts, _tables, _params) -> GateResult:
    name = "uniprocessor"
    if facts.vms == 0:
        return GateResult(name, False, "no VMs: the machines' CPU counts are not recorded, so "
                          "the paper's uniprocessor kernel cannot be confirmed")
    if facts.vcpus_per_vm is None:
        return GateResult(name, False, "the VMs' vCPUs were not recorded")
    if facts.vcpus_per_vm > 1 and facts.booted_one_cpu:
        return GateResult(name, True, f"{facts.vcpus_per_vm} vCPUs per VM, the kernel booted "
                          f"{facts.booted_one_cpu}: one CPU online unless a level brings "
                          "another up (the claim's rows are the one-CPU level's)")
    return GateResult(name, facts.vcpus_per_vm == 1,
                      f"{facts.vcpus_per_vm} vCPU{'s' if facts.vcpus_per_vm != 1 else ''} per VM")

