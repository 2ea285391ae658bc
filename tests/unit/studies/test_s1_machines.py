"""S1's machines (issue 34 items 1-2): the paper's uniprocessor kernel (001:44) as VMs of one
vCPU, or of two booted maxcpus=1 where the host holds the SMP level; vCPUs pinned to cores of
their own; the SMP claim not testable when its level's vCPUs exceed the host's cores, with
the counts, and every other claim testable on the machine gates at one vCPU per VM."""

from __future__ import annotations

import pandas as pd
import pytest

from harness.studies.s1 import analysis as s1_analysis
from harness.studies.s1 import cpus as s1_cpus
from harness.studies.s1 import study as s1
from harness.verdicts.claims import NOT_TESTABLE
from harness.verdicts.gates.facts import RunFacts
from harness.verdicts.gates.registry import Gate, apply, evaluate

from .test_s1 import synthetic
from .test_s1_smp import with_levels

#: the claims resting on the 1-CPU level's rows: the machine gates must pass for them at one
#: vCPU per VM on a 2-core host (those needing KVM aside)
UP_CLAIMS = ("s1.tcp_nagle_irregular", "s1.verbs_bw_better_small", "s1.verbs_bw_large",
             "s1.polling_raises_bandwidth")


def run_meta(cpus: int, cores: int, accel: str = "kvm", kernel_args=()) -> dict:
    """run.json as a VM run records it: two VMs of ``cpus`` vCPUs on ``cores`` host cores."""
    return {"placement": {"where": "vm", "machines": 2,
                          "vm": {"accel": accel, "cpus": cpus, "kernel_args": list(kernel_args)}},
            "provenance": {"controller": {"cpus": cores}}}


def gated(frame: pd.DataFrame, meta: dict) -> pd.DataFrame:
    """S1's claims table through its registered gates, as :class:`Study` applies them."""
    reg = s1_analysis.registered()
    table = s1_analysis.claims(frame, meta)
    return apply(table, meta, {}, {c.id: c.gates for c in reg.claims}).set_index("claim_id")


@pytest.mark.parametrize("levels, cores, want", [
    ((1, 2), 2, dict(cpus=1, pin=True)),  # this host: 4 vCPUs would need 4 cores
    ((1, 2), 3, dict(cpus=1, pin=True)),
    ((1, 2), 4, dict(cpus=2, kernel_args=("maxcpus=1",), pin=True)),
    ((1,), 64, dict(cpus=1, pin=True)),  # no SMP level asked: no second vCPU
])
def test_the_vms_are_uniprocessor_unless_the_host_holds_two_of_two(levels, cores, want):
    from harness.topology.topology import Topology, VMShape

    want = VMShape(**want)
    assert s1_cpus.vm_shape(levels, cores) == want
    topo = s1.topology(s1.Params.resolve(cpus=",".join(map(str, levels))), cores=cores)
    assert topo.vms == want
    assert f"VMs of {want.cpus} vCPU" in topo.notes and "pinned" in topo.notes
    assert Topology.from_dict(topo.to_dict()).vms == want  # archived and read back


def test_a_kernel_argument_that_is_not_a_plain_word_is_refused():
    from harness.errors import SpecError
    from harness.topology.topology import VMShape

    with pytest.raises(SpecError, match="not a plain word"):
        VMShape(cpus=1, kernel_args=("maxcpus=1; reboot",)).validate()


def test_the_smp_claim_is_not_testable_when_its_level_exceeds_the_host_with_the_counts():
    """This host: two VMs of 1 vCPU (the run's facts pass), but the SMP level needs 2 vCPUs
    per VM: 4 vCPUs on 2 cores. Before issue 34 the gate read the run's 2 vCPUs on 2 cores
    and passed."""
    meta = run_meta(cpus=1, cores=2)
    table = gated(synthetic(), meta)
    smp = table.loc["s1.smp_latency_larger"]
    assert smp.outcome == NOT_TESTABLE
    assert ("no_oversubscription: FAILED (4 vCPUs (2 VMs x 2, the claim's level; the run "
            "booted 1) on 2 host cores)") in smp.gates
    for cid in UP_CLAIMS:
        assert "no_oversubscription: passed (2 vCPUs (2 VMs x 1) on 2 host cores)" \
            in table.loc[cid, "gates"], cid
        assert "uniprocessor: passed (1 vCPU per VM)" in table.loc[cid, "gates"], cid
        assert table.loc[cid, "outcome"] != NOT_TESTABLE or cid == "s1.verbs_bw_large", cid


def test_the_smp_claim_is_judged_where_the_host_holds_its_level():
    meta = run_meta(cpus=2, cores=4, kernel_args=("maxcpus=1",))
    table = gated(with_levels(synthetic(), smp=1.25), meta)
    smp = table.loc["s1.smp_latency_larger"]
    assert smp.outcome == "reproduced", smp.reason
    assert "no_oversubscription: passed (4 vCPUs (2 VMs x 2) on 4 host cores)" in smp.gates
    # the other claims: 2 vCPUs booted maxcpus=1, their rows the 1-CPU level's
    assert "uniprocessor: passed (2 vCPUs per VM, the kernel booted maxcpus=1" \
        in table.loc["s1.verbs_bw_better_small", "gates"]


def test_two_vcpus_booted_smp_are_not_the_papers_uniprocessor():
    two = evaluate(Gate("uniprocessor"), RunFacts.from_meta(run_meta(cpus=2, cores=8)), {})
    assert not two.passed and two.figures == "2 vCPUs per VM"
    nosmp = evaluate(Gate("uniprocessor"),
                     RunFacts.from_meta(run_meta(cpus=2, cores=8, kernel_args=("nosmp",))), {})
    assert nosmp.passed and "booted nosmp" in nosmp.figures


def test_the_gate_counts_what_the_run_booted_when_it_booted_more():
    facts = RunFacts.from_meta(run_meta(cpus=4, cores=4))
    result = evaluate(Gate("no_oversubscription", {"vcpus_per_vm": 2}), facts, {})
    assert not result.passed and result.figures == "8 vCPUs (2 VMs x 4) on 4 host cores"
