"""The host route S2 adds so the parallel file system's WAN traffic crosses the WAN."""

from __future__ import annotations

import pytest
from conftest import CommandOnlyNode

from harness.config import operation
from harness.config.operation import plan
from harness.config.route import HostRoute, host_prefix
from harness.errors import SpecError
from harness.journal.journal import _HANDLERS


@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch):
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


class RoutingMachine(CommandOnlyNode):
    """Answers `ip route show exact` with the routes it was given."""

    def __init__(self, routes=""):
        self.name, self.routes, self.commands = "client", routes, []

    def describe(self):
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        return 0, self.routes, ""


def test_a_missing_route_is_added_through_the_gateway_and_undone_by_the_route_handler():
    machine = RoutingMachine()
    (change,) = plan([HostRoute(machine, "198.18.2.1", "198.18.3.1")])
    assert machine.commands == ["ip -4 -o route show exact 198.18.2.1/32"]
    assert change.command == "ip route add 198.18.2.1/32 via 198.18.3.1"
    assert (change.kind, change.target, change.before, change.after) == (
        "route", "198.18.2.1/32", "none", "via 198.18.3.1")
    assert change.undo == {"destination": "198.18.2.1/32"} and "route" in _HANDLERS


def test_the_same_route_is_as_asked_and_another_is_refused():
    same = RoutingMachine("198.18.2.1 via 198.18.3.1 dev wan \n")
    (change,) = plan([HostRoute(same, "198.18.2.1", "198.18.3.1")])
    assert not change.changed
    other = RoutingMachine("198.18.2.1 via 10.9.9.9 dev eth0 \n")
    with pytest.raises(SpecError, match="already has a route to 198.18.2.1/32"):
        plan([HostRoute(other, "198.18.2.1", "198.18.3.1")])


def test_bad_addresses_are_refused_before_any_fact():
    machine = RoutingMachine()
    with pytest.raises(SpecError, match="not an IP address"):
        plan([HostRoute(machine, "198.18.2.1; reboot", "198.18.3.1")])
    assert machine.commands == []
    assert host_prefix("fd00::1") == "fd00::1/128"


def test_a_route_to_the_connected_peer_carries_a_scaled_minimum_rto():
    """Issue 34 item 16: the scaled WAN's minimum RTO, on a host route to the peer out of the
    WAN device (iproute2 locks rto_min, so TCP takes it); undone like any host route."""
    machine = RoutingMachine()
    (change,) = plan([HostRoute(machine, "198.18.3.1", device="wan", rto_min_ms=8700)])
    assert change.command == "ip route add 198.18.3.1/32 dev wan rto_min 8700ms"
    assert change.undo == {"destination": "198.18.3.1/32"}
    made = RoutingMachine("198.18.3.1 dev wan scope link rto_min lock 8.7s \n")
    (again,) = plan([HostRoute(made, "198.18.3.1", device="wan", rto_min_ms=8700)])
    assert not again.changed
    plain = RoutingMachine("198.18.3.1 dev wan scope link \n")  # not ours: no rto_min
    with pytest.raises(SpecError, match="already has a route"):
        plan([HostRoute(plain, "198.18.3.1", device="wan", rto_min_ms=8700)])
    for bad, words in (({"device": "wan", "rto_min_ms": 200_000}, "out of range"),
                       ({}, "gateway or a device"),
                       ({"device": "wan; reboot"}, "not an interface name")):
        with pytest.raises(SpecError, match=words):
            plan([HostRoute(RoutingMachine(), "198.18.3.1", **bad)])
