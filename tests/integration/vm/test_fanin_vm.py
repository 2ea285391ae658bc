"""SCTP and TIPC fan-in in a VM lab (the host kernel has neither).

The folder's one VM (conftest.py's ``guest``: TCG is slow). A 1:4 fan-in lab inside it; TIPC is
configured by harness.config.tipc (identity + UDP bearer per node) and must
be gone after the journal's undo; SCTP and TIPC reducers must deliver every
requested byte.
"""

from __future__ import annotations

import os

import pytest
from conftest import needs_root

from harness import fanin
from harness.config import apply, tipc
from harness.lab.lab import Lab
from harness.studies.s3 import study as s3

pytestmark = [pytest.mark.integration, pytest.mark.vm, needs_root]
N = 4


@pytest.fixture(scope="module")
def vm_lab(guest):
    from harness.vm import checks

    vm, journal = guest
    binary = str(fanin.build_local())  # on the host: the guest shares our root read-only
    # the generator's own checks: one VM is enough (the study puts the reducer in a second)
    params = s3.Params.resolve(mappers=(N,), cpu_mappers=N, port_rate_mbit=50, queue_packets=40,
                               reducer_own_kernel=False)
    mark = max((e.seq for e in journal.entries()), default=0)
    checks.load_modules(vm, ("tipc", "sctp"))
    with Lab(s3.topology(params), journal, host=vm, prefix=f"fv{os.getpid() % 10000}") as lab:
        yield vm, lab, journal, binary
    assert [e for e in journal.pending() if e.seq > mark] == []  # the VM's own stay till its end


def test_generator_binary_is_shared_with_the_guest(vm_lab):
    vm, lab, _journal, binary = vm_lab
    assert fanin.build_on(lab.node("reducer")) == binary  # same file, no rebuild in the guest


@pytest.mark.parametrize("proto", ["sctp", "tipc"])
def test_fanin_in_vm(vm_lab, proto):
    vm, lab, journal, binary = vm_lab
    reducer = lab.node("reducer")
    mark = max((e.seq for e in journal.entries()), default=0)
    records = []
    if proto == "tipc":
        records = apply(journal, [tipc.TipcNode(reducer, "t-red", "udp", dict(
            name="t", localip=s3.REDUCER_IP, remoteip=s3.mapper_ip(0)))] + [
            tipc.TipcNode(lab.node(s3.mapper_name(i)), f"t-{i}", "udp", dict(
                name="t", localip=s3.mapper_ip(i), remoteip=s3.REDUCER_IP)) for i in range(N)])
        assert tipc.wait_links(reducer, N, timeout=90) == N
        state = tipc.probe(reducer)
        assert state.identity == "t-red" and state.bearers == ("udp:t",)
        # a second identity is refused, not silently ignored
        with pytest.raises(Exception, match="already has TIPC identity"):
            apply(journal, [tipc.TipcNode(reducer, "other", "udp", dict(
                name="u", localip=s3.REDUCER_IP))])
    nodes = [lab.node(s3.mapper_name(i)) for i in range(N)]
    listens = [fanin.mapper_address(proto, s3.mapper_ip(i), s3.PORT, i) for i in range(N)]
    with fanin.mapper_fleet(journal, nodes, listens, proto, binary) as fleet:
        spec = fanin.ReduceSpec(proto, 16384, 5, warmup=1)
        result = fanin.run_reducer(reducer, binary, spec, listens)
    out = result.output
    assert result.ok, out.errors
    assert out.summary["bytes"] == N * 16384 * 5
    assert [r["round"] for r in out.rounds] == list(range(6))
    assert sum(e["requests"] for e in fleet.exits) == N * 6
    print(f"\n{proto}: mean rate {out.summary['mean_rate_mbit']:.1f} Mbit/s, "
          f"rounds ms {[round(r['duration_ns'] / 1e6, 1) for r in out.measured()]}")
    if proto == "tipc":
        assert [r.kind for r in records].count("tipc") == N + 1
        journal.undo_all(after_seq=mark)
        assert tipc.probe(reducer).bearers == ()
