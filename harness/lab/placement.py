"""Where a namespace lab runs: on this host, or in a VM with Debian's stock kernel.

Each study declares the kernel features it needs. The host is used when its
own kernel has them all (probed for real). Otherwise, if a VM can offer the
missing ones (Debian's kernel and its modules installed, QEMU present), the
lab is built inside a VM; else the run stops before anything changes, naming
what is missing where.

A VM lab is slower than the host (software emulation under TCG), so it
measures its own ceiling -- the unshaped rate between two of its namespaces --
and a study asking for more is scaled down keeping the bandwidth-delay product
(rates x f, delays / f), recorded and said beside every affected figure. A
topology whose rates are registered by design (``Topology.fixed_rates``, S3's
verdict profile) is never scaled: a lab that cannot carry them is refused
(:class:`~harness.errors.CeilingTooLow`), so every run of that design measures
in one regime, whatever the machine's load when its ceiling was probed.
"""

from __future__ import annotations

import glob
import os
from dataclasses import asdict, dataclass, field, replace

from ..errors import CapabilityMissing, CeilingTooLow, HarnessError
from ..journal.journal import Journal
from ..nodes import Node
from ..topology.topology import Topology
from .probe import FEATURES, Capabilities

# Features a stock Debian kernel provides as loadable modules, and which.
FEATURE_MODULES = {
    "tipc": "kernel/net/tipc/tipc.ko",
    "sctp": "kernel/net/sctp/sctp.ko",
    "netem": "kernel/net/sched/sch_netem.ko",
    "rdma_rxe": "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko",
    "nfsd": "kernel/fs/nfsd/nfsd.ko",
}
MODULE_NAMES = {"tipc": "tipc", "sctp": "sctp", "netem": "sch_netem", "rdma_rxe": "rdma_rxe",
                "nfsd": "nfsd"}
# Built into Debian's kernel (or always there in a guest of ours).
VM_BUILTIN = {"netns", "veth", "htb", "tbf", "mptcp", "nat"}
CEILING_HEADROOM = 0.8  # emulate at most this share of the measured ceiling
WIRE_HEADROOM = 0.4  # ... and of a wire's between VMs (93 of 186 Mbit/s verified at 90-97 %)


@dataclass
class VMOffer:
    available: bool
    kernel: str = ""
    kernel_version: str = ""
    features: set[str] = field(default_factory=set)
    reason: str = ""

    def describe(self) -> str:
        if not self.available:
            return f"VM nodes: not available ({self.reason})"
        return (f"VM nodes: Debian kernel {self.kernel_version} under QEMU offers "
                f"{', '.join(sorted(self.features))}")


def vm_offer() -> VMOffer:
    """What a VM node could offer on this machine, without booting one."""
    try:
        from ..vm.machine import require_programs, resolve_kernel

        require_programs()
        kernel, version = resolve_kernel()
    except (CapabilityMissing, ImportError) as exc:
        return VMOffer(False, reason=str(exc).replace("\n", " "))
    features = set(VM_BUILTIN)
    for feature, module in FEATURE_MODULES.items():
        if glob.glob(f"/lib/modules/{version}/{module}*"):
            features.add(feature)
    return VMOffer(True, kernel, version, features)


@dataclass(frozen=True)
class Decision:
    where: str  # "host" | "vm"
    reason: str
    missing_on_host: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    machines: int = 1

    def to_dict(self) -> dict:
        return asdict(self)


def decide(needed: set[str], host: Capabilities, offer: VMOffer, purpose: str,
           machines: int = 1, whole_machines: bool = False) -> Decision:
    """Host if it suffices, else a VM that has everything, else stop naming what is missing.

    ``machines`` > 1: the topology keeps nodes in that many separate kernels,
    which one host kernel cannot be: one VM per machine. ``whole_machines``: some
    node is its machine's initial namespace (:class:`~harness.topology.topology.TopologyNode`),
    which this host's must never be: VMs too.
    """
    unknown = sorted(f for f in needed if f not in FEATURES)
    if unknown:
        raise HarnessError(f"{purpose} asks for unknown features {unknown}",
                           f"known features: {', '.join(sorted(FEATURES))}")
    missing = host.missing(needed)
    if not missing and machines == 1 and not whole_machines:
        return Decision("host", f"the host kernel ({host.kernel}) has every feature needed: "
                                f"{', '.join(sorted(needed))}")
    if not offer.available:
        why = (f"needs {', '.join(missing)}, which this host's kernel ({host.kernel}) lacks"
               if missing else f"keeps its nodes in {machines} separate kernels"
               if machines > 1 else "has a node that takes a whole machine's network stack")
        raise CapabilityMissing(
            f"{purpose} {why}, and no VM can be booted: {offer.reason}",
            "install the VM tools (bash env/setup), or run on machines from an inventory")
    beyond = sorted(set(missing) - offer.features)
    if beyond:
        detail = "; ".join(f"{f}: needs {FEATURES[f][1]}" for f in beyond)
        raise CapabilityMissing(
            f"{purpose} needs {', '.join(beyond)}, which neither this host's kernel "
            f"({host.kernel}) nor a VM with Debian's kernel {offer.kernel_version} offers ({detail})",
            "run it on machines from an inventory that have these features")
    modules = tuple(MODULE_NAMES[f] for f in needed if f in MODULE_NAMES)
    if missing:
        reason = (f"the host kernel ({host.kernel}) lacks {', '.join(missing)}; a VM with "
                  f"Debian's kernel {offer.kernel_version} has them")
    else:
        reason = f"the host kernel ({host.kernel}) has every feature needed"
    if machines > 1:
        reason += (f"; the topology keeps its nodes in {machines} separate kernels: one VM "
                   "each, joined by wires")
    if whole_machines:
        reason += ("; a node takes its machine's initial network namespace: a VM's, never "
                   "this host's")
    return Decision("vm", reason, tuple(missing), modules, machines)


def guest_capabilities(vm: Node, host: Capabilities, decision: Decision) -> Capabilities:
    """Load the modules the study needs in the guest and read back what is loaded.

    Cheaper than a full probe under emulation (a Python start-up in the guest
    costs many seconds). The guest runs the host's own user space over 9p, so
    its tools and their versions are the host's.
    """
    facts = ("uname -r && cat /proc/sys/net/ipv4/tcp_available_congestion_control "
             "/proc/sys/net/ipv4/tcp_congestion_control /proc/modules")
    load = f"modprobe -a {' '.join(decision.modules)} && " if decision.modules else ""
    res = vm.run(load + facts, timeout=180,
                 hint="the guest loads modules of its own kernel from /lib/modules/$(uname -r)")
    release, available, default, *modules = res.stdout.splitlines()
    loaded = {line.split()[0] for line in modules if line.strip()}
    features = {f: True for f in VM_BUILTIN}
    for feature, module in MODULE_NAMES.items():
        features[feature] = module in loaded
    return Capabilities(node=vm.name, kernel=release.strip(), features=features,
                        congestion_available=available.split(),
                        congestion_default=default.strip(), tools=dict(host.tools))


@dataclass(frozen=True)
class Scaling:
    factor: float  # applied to rates; delays are divided by it
    ceiling_mbit: float | None  # None: not measured (no link of the lab is shaped)
    max_rate_mbit: float | None
    note: str
    #: where the rates are registered ("": scaled to the ceiling; Topology.fixed_rates)
    fixed_rates: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def fit_to_ceiling(topology: Topology, ceiling_mbit: float | None,
                   headroom: float = CEILING_HEADROOM,
                   wire_ceiling_mbit: float | None = None) -> tuple[Topology, Scaling]:
    """Scale rates down (and delays up) when they exceed what the VM (and its wires) carry.

    A wire between VMs (two emulated NICs and a loopback socket) is slower and
    burstier than a veth: it is given more headroom (WIRE_HEADROOM). ``ceiling_mbit``
    None: not measured, as no link of the lab lies inside one machine (every link a wire).
    """
    if ceiling_mbit is None and wire_ceiling_mbit is None:
        raise ValueError("fit_to_ceiling needs the namespace ceiling, the wires' or both")
    rates = [link.rate_mbit for link in topology.links if link.rate_mbit is not None]
    top = max(rates) if rates else None
    limits, whats, carries, needs = [], [], [], []
    if ceiling_mbit is not None:
        limits.append(ceiling_mbit * headroom)
        whats.append(f"{headroom:.0%} of the lab's ceiling ({ceiling_mbit:.0f} Mbit/s)")
        carries.append(f"{ceiling_mbit:.0f} Mbit/s between namespaces")
        needs.append(f"{(top or 0) / headroom:.0f} Mbit/s between namespaces")
    if wire_ceiling_mbit is not None:
        limits.append(wire_ceiling_mbit * WIRE_HEADROOM)
        whats.append(f"{WIRE_HEADROOM:.0%} of its wires' ceiling ({wire_ceiling_mbit:.0f} "
                     "Mbit/s)")
        carries.append(f"{wire_ceiling_mbit:.0f} Mbit/s over a wire between its VMs")
        needs.append(f"{(top or 0) / WIRE_HEADROOM:.0f} Mbit/s over a wire")
    limit = min(limits)
    what = "within " + " and ".join(whats)
    carries = "this lab carries at most " + " and ".join(carries)
    floor = min(c for c in (ceiling_mbit, wire_ceiling_mbit) if c is not None)
    fixed = topology.fixed_rates
    if fixed and top is not None and top > limit:
        raise CeilingTooLow(
            f"this lab cannot carry its registered rates ({fixed}): the fastest link is "
            f"{top:g} Mbit/s, but {carries} (measured at the start of this run), and a lab "
            f"emulates rates {what}: at most {limit:.0f} Mbit/s here; it needs "
            f"{' and '.join(needs)}. No benchmark point was measured",
            "run it on a quieter machine (the ceiling is measured at each run's start: other "
            "runs, builds or tests on the machine lower it; `uptime` shows the load), or use "
            "the quick profile, which scales the lab's rates to what the machine carries",
            record={"scaling": Scaling(1.0, floor, top, f"refused: {limit:.0f} Mbit/s "
                                       f"carried, {top:g} registered", fixed).to_dict()})
    if top is None or top <= limit:
        return topology, Scaling(1.0, floor, top,
                                 f"no scaling: the fastest link ({top or 'unshaped'} Mbit/s) is "
                                 f"{what}" + (f"; its rates are registered ({fixed})"
                                              if fixed else ""), fixed)
    factor = limit / top
    links = tuple(replace(link,
                          rate_mbit=None if link.rate_mbit is None else link.rate_mbit * factor,
                          delay_ms=link.delay_ms / factor)
                  for link in topology.links)
    scaled = replace(topology, links=links).validate()
    return scaled, Scaling(
        factor, floor, top,
        f"rates scaled by {factor:.3f} ({top:g} -> {top * factor:.0f} Mbit/s) and one-way delays "
        f"by {1 / factor:.2f}x to keep the bandwidth-delay product: {carries} (measured)")


def measure_ceiling(journal: Journal, host: Node, capabilities: Capabilities | None = None,
                    seconds: int = 3) -> float:
    """Unshaped TCP goodput between two namespaces on ``host`` (Mbit/s)."""
    from ..topology.topology import TopologyBuilder
    from .lab import Lab
    from .verify import measure_goodput_mbit

    topo = (TopologyBuilder("ceiling").node("a").node("b")
            .link(("a", "eth0", "198.18.255.1/30"), ("b", "eth0", "198.18.255.2/30")).build())
    with Lab(topo, journal, host, capabilities=capabilities) as lab:
        return measure_goodput_mbit(lab, topo.links[0], seconds)


def measure_wire_ceiling(journal: Journal, host_a: Node, host_b: Node, mac_a: str, mac_b: str,
                         capabilities: Capabilities | None = None, seconds: int = 3) -> float:
    """Unshaped TCP goodput over a wire from a namespace on ``host_a`` to one on ``host_b``.

    The NICs go back to their root namespaces when the namespaces are deleted.
    """
    from ..topology.topology import TopologyBuilder
    from .lab import Lab
    from .verify import measure_goodput_mbit

    topo = (TopologyBuilder("wire-ceiling").node("a").node("b", machine="peer")
            .link(("a", "wire", "198.18.255.5/30"), ("b", "wire", "198.18.255.6/30")).build())
    with Lab(topo, journal, host_a, capabilities=capabilities, hosts={"peer": host_b},
             nics={("a", "wire"): mac_a, ("b", "wire"): mac_b}) as lab:
        return measure_goodput_mbit(lab, topo.links[0], seconds, journal)


EXTRA_VM_MEMORY_MIB = 768  # a VM that holds one or a few nodes of a multi-machine lab


def vm_memory_mib(extra_vms: int = 0) -> int:
    """Guest memory: enough for dozens of namespaces, bounded by what the host has free
    (after ``extra_vms`` smaller VMs of the same lab)."""
    from ..vm.machine import QEMU_OVERHEAD_MIB, mem_available_mib

    spare = mem_available_mib() - extra_vms * (EXTRA_VM_MEMORY_MIB + QEMU_OVERHEAD_MIB)
    return max(512, min(2048, spare - QEMU_OVERHEAD_MIB - 512))


def vm_cpus() -> int:
    return max(1, min(2, os.cpu_count() or 1))
