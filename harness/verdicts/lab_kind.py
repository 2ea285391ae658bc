"""Whether two runs were made in the same kind of lab, read from their run.json ``placement``.

A pool's members must be measured in one regime. The placement says where a run's nodes ran
(host namespaces or VMs, which kernel, how many vCPUs, TCG or KVM) and, for a lab too slow
for the paper's rates, the factor its rates were scaled by. Some of what it holds is a fact
of one boot and differs between any two runs of one design: QEMU's pid and SSH port, boot and
sshd times, the wire ceilings measured that time. Those are left out of the comparison. The
scaling factor is a regime (S3 at 91 Mbit/s is not S3 at 20 Mbit/s); it is made from the
lab's ceiling measured at the start of each run (on the 2-core TCG host here: 227 and 209
Mbit/s on a quiet machine, 50 under load 7), so two runs of one design agree in it only
within a margin: the project's equivalence margin (:data:`harness.verdicts.margins.FACTOR`,
x/÷ 1.1), the one that says when two figures count as the same. A lab's disks are capped at
the paper's rates times that same factor (S2: ``scaled_by``), so they compare as the caps
before scaling; the scaled caps follow the factor. Lists that name a set (kernel modules)
compare as sets.
"""

from __future__ import annotations

from .margins import FACTOR

#: facts of one VM boot: differ between any two runs, say nothing of the regime
BOOT_FACTS = frozenset({"boot_s", "guest_sshd_uptime_s", "prepare_s", "qemu_pid", "ssh_port",
                        "silent_boots"})
#: placement entries measured per run (the regime they lead to is compared as ``scaling``)
MEASURED = frozenset({"wire_ceilings_mbit"})
#: placement entries that are sets, however ordered
SETS = frozenset({"modules", "missing_on_host"})


def _vm(vm: dict) -> dict:
    return {k: v for k, v in vm.items() if k not in BOOT_FACTS}


def _unscaled(disk: dict) -> dict:
    """A disk's placement with its caps before scaling (rate / ``scaled_by``), to 3 digits."""
    factor = disk.get("scaled_by")
    if not factor:
        return disk
    return {k: (float(f"{v / factor:.3g}") if k.endswith("_mbyte_s") and v else v)
            for k, v in disk.items() if k != "scaled_by"}


def _disks(disks: dict) -> dict:
    return {machine: ({name: _unscaled(d) if isinstance(d, dict) else d
                       for name, d in held.items()} if isinstance(held, dict) else held)
            for machine, held in disks.items()}


def lab_kind(placement: dict | None) -> dict:
    """The part of a run's placement that says what kind of lab it ran in (module docstring):
    everything but one boot's facts and the measured ceilings; the scaling as its factor, the
    disks with their caps before scaling."""
    out = {}
    for key, value in (placement or {}).items():
        if key in MEASURED:
            continue
        if key == "vm" and isinstance(value, dict):
            value = _vm(value)
        elif key == "vms" and isinstance(value, dict):
            value = {name: _vm(vm) if isinstance(vm, dict) else vm for name, vm in value.items()}
        elif key == "scaling" and isinstance(value, dict):
            value = {"factor": value.get("factor")}
        elif key == "disks" and isinstance(value, dict):
            value = _disks(value)
        elif key in SETS and isinstance(value, list):
            value = sorted(value, key=str)
        out[key] = value
    return out


def scaled_rate_text(placement: dict | None) -> str:
    scaling = (placement or {}).get("scaling") or {}
    factor, top = scaling.get("factor"), scaling.get("max_rate_mbit")
    if factor is None:
        return "not scaled"
    ceiling = scaling.get("ceiling_mbit")
    return (f"rates x{factor:.3f}" + (f" ({top:g} -> {top * factor:.0f} Mbit/s)" if top else "")
            + (f", lab ceiling measured {ceiling:.0f} Mbit/s" if ceiling else ""))


def differences(a: dict | None, b: dict | None) -> list[str]:
    """What makes two placements different kinds of lab, each said in words; [] if none."""
    ka, kb = lab_kind(a), lab_kind(b)
    fa = (ka.pop("scaling", None) or {}).get("factor")
    fb = (kb.pop("scaling", None) or {}).get("factor")
    out = [f"{key}: {ka.get(key)!r:.200} vs {kb.get(key)!r:.200}"
           for key in sorted(set(ka) | set(kb)) if ka.get(key) != kb.get(key)]
    if (fa is None) != (fb is None) or (fa is not None and max(fa, fb) > min(fa, fb) * FACTOR):
        out.append(f"scaling: {scaled_rate_text(a)} vs {scaled_rate_text(b)} (a different "
                   f"regime: the scaled rates of one pool agree within x/÷ {FACTOR:g}, the "
                   "equivalence margin)")
    return out
