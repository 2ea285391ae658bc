"""Placement: host when it suffices, a VM when only it has the features, else refuse."""

import pytest

from harness.errors import CapabilityMissing
from harness.lab.placement import WIRE_HEADROOM, VMOffer, decide, fit_to_ceiling
from harness.lab.probe import Capabilities
from harness.studies.s4 import study as s4
from harness.topology.topology import TopologyBuilder

HOST = Capabilities("local", "6.18", {"netns": True, "veth": True, "htb": True, "mptcp": True,
                                      "netem": False, "tipc": False, "sctp": False,
                                      "rdma_rxe": False, "nfsd": False})
VM = VMOffer(True, "/boot/vmlinuz-6.1.0-56-amd64", "6.1.0-56-amd64",
             {"netns", "veth", "htb", "mptcp", "netem", "tipc", "sctp"})


def test_s4_stays_on_the_host():
    need = {"mptcp"} | s4.topology(s4.Params.resolve()).required_features()
    d = decide(need, HOST, VM, "study s4")
    assert d.where == "host" and d.modules == ()


def test_tipc_goes_to_a_vm_and_loads_its_module():
    d = decide({"netns", "tipc", "sctp"}, HOST, VM, "study s3")
    assert d.where == "vm"
    assert set(d.missing_on_host) == {"tipc", "sctp"} and set(d.modules) == {"tipc", "sctp"}
    assert "6.1.0-56-amd64" in d.reason


def test_netem_maps_to_its_module_name():
    assert decide({"netem"}, HOST, VM, "x").modules == ("sch_netem",)


def test_a_feature_nobody_has_is_refused_naming_it():
    with pytest.raises(CapabilityMissing, match="rdma_rxe.*neither this host"):
        decide({"tipc", "rdma_rxe"}, HOST, VM, "study s1")


def test_no_vm_tools_is_refused_with_the_reason():
    with pytest.raises(CapabilityMissing, match="no VM can be booted: qemu missing"):
        decide({"tipc"}, HOST, VMOffer(False, reason="qemu missing"), "study s3")


def test_unknown_feature_is_an_error():
    with pytest.raises(Exception, match="unknown features"):
        decide({"warp-drive"}, HOST, VM, "x")


def wan(rate, delay):
    return (TopologyBuilder("wan").node("a").node("b")
            .link(("a", "eth0", "198.18.0.1/24"), ("b", "eth0", "198.18.0.2/24"),
                  rate_mbit=rate, delay_ms=delay).build())


def test_rates_above_the_ceiling_are_scaled_keeping_the_bdp():
    topo, scaling = fit_to_ceiling(wan(1000, 2.4), ceiling_mbit=400)
    link = topo.links[0]
    assert scaling.factor == pytest.approx(0.32)
    assert link.rate_mbit == pytest.approx(320)
    assert link.rate_mbit * link.delay_ms == pytest.approx(1000 * 2.4)
    assert "bandwidth-delay product" in scaling.note


def test_a_lab_of_wires_alone_is_fitted_to_its_wires_ceiling():
    """Every link a wire between VMs: the namespace ceiling is not measured (None)."""
    topo, scaling = fit_to_ceiling(wan(1000, 2.4), ceiling_mbit=None, wire_ceiling_mbit=40)
    assert scaling.factor == pytest.approx(40 * WIRE_HEADROOM / 1000)
    assert scaling.ceiling_mbit == 40 and "between namespaces" not in scaling.note
    assert "40 Mbit/s over a wire" in scaling.note
    both = fit_to_ceiling(wan(1000, 2.4), ceiling_mbit=400, wire_ceiling_mbit=40)[1]
    assert both.factor == scaling.factor and "400 Mbit/s between namespaces" in both.note
    with pytest.raises(ValueError):
        fit_to_ceiling(wan(1000, 2.4), ceiling_mbit=None)


def test_rates_within_the_ceiling_are_left_alone():
    topo, scaling = fit_to_ceiling(wan(50, 10), ceiling_mbit=400)
    assert scaling.factor == 1.0 and topo == wan(50, 10)


def test_a_vm_lab_measures_ceilings_only_when_a_link_is_shaped(monkeypatch):
    """S1's lab (one unshaped wire) has nothing to scale: no ceiling is measured; S2's (a
    shaped WAN wire) measures its wires' ceilings and is scaled to them."""
    from harness.run import testbed_build
    from harness.studies.s1 import study as s1
    from harness.studies.s2 import study as s2

    measured = []

    def wire_ceiling(journal, vm_a, vm_b, mac_a, mac_b, caps):
        measured.append((mac_a, mac_b))
        return 40.0

    def namespace_ceiling(*args):
        raise AssertionError("a lab of wires alone needs no namespace ceiling")

    monkeypatch.setattr(testbed_build, "measure_wire_ceiling", wire_ceiling)
    monkeypatch.setattr(testbed_build, "measure_ceiling", namespace_ceiling)
    fit = testbed_build.fit_vm_lab
    nics = {end: f"mac-{end[0]}-{end[1]}" for end in
            (("a", "wire"), ("b", "wire"), ("client", "lan"), ("server", "lan"),
             ("client", "wan"), ("server", "wan"))}
    vms = {"": "vm0", "b": "vm-b", "server": "vm-server"}
    topo, scaling, ceilings = fit(None, s1.topology(s1.Params()), vms, nics, None, None)
    assert not measured and ceilings == {} and scaling.factor == 1.0
    assert scaling.ceiling_mbit is None and "no link of the lab is shaped" in scaling.note
    topo, scaling, ceilings = fit(None, s2.topology(s2.Params()), vms, nics, None, None)
    assert len(measured) == 2 and set(ceilings.values()) == {40.0}
    assert scaling.factor < 1.0 and scaling.ceiling_mbit == 40.0


# -- rates registered by design (S3's verdict profile, 2026-11-29T16:35Z) --------------------

def _s3(profile: str):
    from harness.studies.s3 import study as s3

    return s3.topology(s3.Params.resolve(profile=profile))


def test_registered_rates_are_never_scaled_and_a_lab_too_slow_for_them_is_refused():
    """Under load the wire's ceiling read 93 Mbit/s and S3's verdict run was scaled to x0.37,
    on a quiet machine 209-233 and x0.84-0.93: one registration, two regimes. The verdict
    profile registers its port (75 Mbit/s): a lab that carries it measures at exactly that
    rate, one that cannot (0.4 x 93 = 37 Mbit/s) is refused with what was measured, what the
    registration needs and how to fix it. The quick profile still scales."""
    from harness.errors import CeilingTooLow

    verdict = _s3("verdict")
    assert "registered for profile verdict" in verdict.fixed_rates
    port = max(link.rate_mbit for link in verdict.links if link.rate_mbit)
    assert port == 75.0
    topo, scaling = fit_to_ceiling(verdict, ceiling_mbit=987, wire_ceiling_mbit=227)
    assert topo == verdict and scaling.factor == 1.0 and scaling.fixed_rates == verdict.fixed_rates
    assert scaling.max_rate_mbit == 75.0 and scaling.ceiling_mbit == 227
    with pytest.raises(CeilingTooLow) as caught:
        fit_to_ceiling(verdict, ceiling_mbit=987, wire_ceiling_mbit=93.3)
    text = str(caught.value)
    assert "cannot carry its registered rates" in text and "fastest link is 75 Mbit/s" in text
    assert "93 Mbit/s over a wire between its VMs (measured" in text
    assert "at most 37 Mbit/s" in text and "it needs 94 Mbit/s between namespaces and 188 " \
        "Mbit/s over a wire" in text and "No benchmark point was measured" in text
    assert "quieter machine" in caught.value.hint and "quick profile" in caught.value.hint
    record = caught.value.record["scaling"]
    assert record["ceiling_mbit"] == 93.3 and record["max_rate_mbit"] == 75.0
    assert record["fixed_rates"] == verdict.fixed_rates
    quick = _s3("quick")
    assert quick.fixed_rates == ""
    topo, scaling = fit_to_ceiling(quick, ceiling_mbit=987, wire_ceiling_mbit=93.3)
    assert scaling.factor == pytest.approx(93.3 * WIRE_HEADROOM / 100)


def test_a_verdict_run_its_lab_cannot_carry_stops_before_any_point_incomplete_and_recorded(
        tmp_path, monkeypatch):
    """The refusal inside a run: the ceilings measured (fakes here), one error, nothing
    measured after it, the run left incomplete (its journal undone as always) and run.json's
    placement holding the registered rate and the measured ceilings."""
    import json

    from harness.archive.archive import INCOMPLETE
    from harness.errors import CeilingTooLow
    from harness.lab.placement import Decision
    from harness.run import session as session_module
    from harness.run import testbed_build
    from harness.run.session import open_session

    verdict = _s3("verdict")
    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))  # not the machine's
    monkeypatch.setattr(testbed_build, "measure_ceiling", lambda *args: 987.0)
    monkeypatch.setattr(testbed_build, "measure_wire_ceiling", lambda *args: 93.3)
    placing = testbed_build.Placing(None, HOST, set(), set(), "study s3",
                                    Decision("vm", "TIPC needs a VM", ("tipc",), ("tipc",), 2))
    monkeypatch.setattr(session_module, "place", lambda *args: placing)
    built = []

    def build_lab(placing, topology, study, journal, stack):  # the VMs "booted", then fitted
        nics = {(e.node, e.ifname): "52:54:00:00:00:01" for link in topology.wires()
                for e in (link.a, link.b)}
        testbed_build.fit_vm_lab(journal, topology, {"": "vm", "reducer": "vm-reducer"}, nics,
                                 None, None)
        built.append(topology)

    monkeypatch.setattr(session_module, "build_lab", build_lab)
    measured = []
    with pytest.raises(CeilingTooLow, match="cannot carry its registered rates"):
        with open_session("s3", {"profile": "verdict"}, root=tmp_path) as session:
            session.testbed(verdict)
            measured.append("a benchmark point")
    assert not built and not measured
    (run_json,) = tmp_path.rglob("run.json")
    meta = json.loads(run_json.read_text())
    assert meta["status"] == INCOMPLETE
    assert "cannot carry its registered rates" in meta["measurement_error"]
    scaling = meta["placement"]["scaling"]
    assert scaling["max_rate_mbit"] == 75.0 and scaling["ceiling_mbit"] == 93.3
    assert "registered for profile verdict" in scaling["fixed_rates"]
    assert meta["placement"]["wire_ceilings_mbit"] == {"reducer:eth0--switch:red": 93.3}
