"""Soft-RoCE link operation against a fake machine: module and link facts, changes and undo."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from conftest import CommandOnlyNode

from harness.config import operation, rdma
from harness.config.operation import UNKNOWN, apply, plan
from harness.errors import CapabilityMissing, SpecError
from harness.journal.journal import Journal

# Captured: `modprobe -S 6.1.0-56-amd64 --show-depends rdma_rxe` on Debian 12 (each line
# ends in a space).
CHAIN = "".join(f"insmod /lib/modules/6.1.0-56-amd64/kernel/{path}.ko \n" for path in (
    "net/ipv4/udp_tunnel", "net/ipv6/ip6_udp_tunnel", "drivers/infiniband/core/ib_core",
    "drivers/infiniband/core/ib_uverbs", "drivers/infiniband/sw/rxe/rdma_rxe"))
RXE_CHAIN = ["udp_tunnel", "ip6_udp_tunnel", "ib_core", "ib_uverbs", "rdma_rxe"]
# Modelled on iproute2 6.1's rdma/link.c (keys ifindex, ifname, port, state, physical_state,
# netdev, netdev_index): no RDMA device here to capture from.
LINKS_JSON = ('[{"ifindex":1,"ifname":"mlx5_0","port":1,"state":"ACTIVE",'
              '"physical_state":"LINK_UP","netdev":"enp1s0f0","netdev_index":4}]')


class RdmaMachine(CommandOnlyNode):
    """A machine whose kernel state is a set of loaded modules and a list of RDMA links.

    It answers the operation's probe, ``ip -j link show``, ``modprobe``, ``rdma link
    add`` and the undo commands; with ``journal`` set, each change first checks that
    the journal already holds it (write ahead).
    """

    def __init__(self, name="vm1", loaded=(), links=(), netdevs=("eth0", "eth1"), chain=CHAIN,
                 tool=True, journal: Journal | None = None):
        self.name, self.loaded, self.links = name, list(loaded), [dict(x) for x in links]
        self.netdevs, self.chain, self.tool, self.journal = netdevs, chain, tool, journal
        self.commands: list[str] = []

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _written(self, word: str) -> None:
        if self.journal is not None:
            assert word in self.journal.path.read_text(), "changed before it was journalled"

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        if cmd == rdma._PROBE:
            if not self.tool:
                return 0, "@notool\n", ""
            links = json.dumps(self.links) if "ib_core" in self.loaded else \
                "Failed to open NETLINK_RDMA socket"
            chain = self.chain or "modprobe: FATAL: Module rdma_rxe not found in directory\n"
            text = "\n".join(["@loaded", *self.loaded, "@builtin", "@chain", chain.rstrip(),
                              "@links", links]) + "\n"
            return 0, text, ""
        if cmd.startswith("ip -j link show dev "):
            dev = shlex.split(cmd)[-1]
            return (0, json.dumps([{"ifname": dev, "mtu": 1500}]), "") if dev in self.netdevs \
                else (1, "", f'Device "{dev}" does not exist.')
        if cmd == "modprobe rdma_rxe":
            self._written("rdma_rxe")
            self.loaded += [m for m in RXE_CHAIN if m not in self.loaded]
            return 0, "", ""
        if cmd.startswith("rdma link add "):
            _r, _l, _a, name, _t, kind, _n, dev = shlex.split(cmd)
            self._written(name)
            assert "rdma_rxe" in self.loaded, "link added before the module was loaded"
            self.links.append({"ifname": name, "port": 1, "state": "ACTIVE",
                               "physical_state": "LINK_UP", "netdev": dev})
            return 0, "", ""
        if "rdma link delete" in cmd:
            name = re.search(r"rdma link delete (\S+);", cmd).group(1)
            self.links = [x for x in self.links if x["ifname"] != name]
            return 0, "", ""
        if "rmmod" in cmd:
            for module in re.findall(r"rmmod ([A-Za-z0-9_-]+)", cmd):
                if module in self.loaded:
                    self.loaded.remove(module)
            return 0, "", ""
        raise AssertionError(f"unexpected command {cmd!r}")



@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch):
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


def test_loads_the_module_and_adds_the_link_then_undoes_exactly_that(journal):
    vm = RdmaMachine(loaded=["udp_tunnel"], journal=journal)
    records = apply(journal, [rdma.RxeLink(vm, "rxe0", "eth1")])
    assert [(r.kind, r.target, r.before, r.after, r.changed) for r in records] == [
        ("kernel-module", "rdma_rxe", "not loaded", "loaded", True),
        ("rdma-link", "rxe0", None, "rxe over eth1 (MTU 1500)", True)]
    assert "rdma_rxe" in vm.loaded and [x["ifname"] for x in vm.links] == ["rxe0"]
    # the module before the link: the link's change runs in the round after the module's
    assert vm.commands.index("modprobe rdma_rxe") < \
        vm.commands.index("rdma link add rxe0 type rxe netdev eth1")
    # applied again: nothing to do, nothing more to undo
    again = apply(journal, [rdma.RxeLink(vm, "rxe0", "eth1")])
    assert [r.changed for r in again] == [False, False]
    assert len(journal.pending()) == 2
    journal.undo_all()
    assert vm.links == [] and vm.loaded == ["udp_tunnel"]  # udp_tunnel was there before


def test_a_loaded_module_and_links_of_others_are_left_alone(journal):
    mlx = json.loads(LINKS_JSON)
    vm = RdmaMachine(loaded=RXE_CHAIN, links=mlx)
    records = apply(journal, [rdma.RxeLink(vm, "rxe0", "eth0")])
    assert [(r.kind, r.before, r.changed) for r in records] == [
        ("kernel-module", "loaded", False), ("rdma-link", None, True)]
    journal.undo_all()
    assert vm.loaded == RXE_CHAIN and [x["ifname"] for x in vm.links] == ["mlx5_0"]
    assert not any("rmmod" in c for c in vm.commands)


def test_a_link_that_exists_already_is_as_asked_and_is_not_deleted(journal):
    vm = RdmaMachine(loaded=RXE_CHAIN, links=[{"ifname": "rxe0", "netdev": "eth1"}])
    records = apply(journal, [rdma.RxeLink(vm, "rxe0", "eth1")])
    assert [r.changed for r in records] == [False, False]
    assert journal.pending() == []
    assert [c["target"] for c in journal.configuration()] == ["rdma_rxe", "rxe0"]


@pytest.mark.parametrize("links, match", [
    ([{"ifname": "rxe0", "netdev": "eth0"}], "already has RDMA link rxe0 over eth0"),
    ([{"ifname": "rxe_old", "netdev": "eth1"}], "eth1 already has RDMA link rxe_old"),
])
def test_links_not_made_by_this_run_are_refused_before_anything_changes(journal, links, match):
    vm = RdmaMachine(loaded=["udp_tunnel"] + RXE_CHAIN[1:], links=links)
    with pytest.raises(SpecError, match=match):
        apply(journal, [rdma.RxeLink(vm, "rxe0", "eth1")])
    assert journal.entries() == [] and not any(c.startswith(("modprobe", "rdma link"))
                                               for c in vm.commands)


@pytest.mark.parametrize("name, netdev, match", [
    ("rxe 0", "eth1", "link name 'rxe 0'"), ("0rxe", "eth1", "link name"),
    ("rxe0", "eth1; reboot", "network device name"), ("rxe0", "a" * 16, "network device name"),
])
def test_bad_names_are_refused_before_any_fact_is_read(journal, name, netdev, match):
    vm = RdmaMachine()
    with pytest.raises(SpecError, match=match) as info:
        apply(journal, [rdma.RxeLink(vm, name, netdev)])
    assert info.value.hint and vm.commands == []


def test_missing_device_tool_or_module_is_said_before_anything_changes(journal):
    with pytest.raises(SpecError, match="has no interface 'eth9'"):
        apply(journal, [rdma.RxeLink(RdmaMachine(), "rxe0", "eth9")])
    with pytest.raises(CapabilityMissing, match="no `rdma` command") as info:
        apply(journal, [rdma.RxeLink(RdmaMachine(tool=False), "rxe0", "eth1")])
    assert "apt-get install iproute2" in info.value.hint
    with pytest.raises(CapabilityMissing, match="no rdma_rxe module") as info:
        apply(journal, [rdma.RxeLink(RdmaMachine(chain=""), "rxe0", "eth1")])
    assert "kernel" in info.value.hint
    assert journal.entries() == []


def test_a_namespace_node_is_refused():
    class Namespace(RdmaMachine):
        netns_path = "/run/netns/a1"

    with pytest.raises(SpecError, match="network namespace"):
        rdma.RxeLink(Namespace(), "rxe0", "eth1").check()


def test_a_dry_run_plans_from_the_asked_state_where_the_machine_is_not_built():
    changes = plan([rdma.RxeLink(RdmaMachine(), "rxe0", "eth1")], exists=lambda node: False)
    assert [(c.kind, c.before, c.command) for c in changes] == [
        ("kernel-module", UNKNOWN, "modprobe rdma_rxe"),
        ("rdma-link", UNKNOWN, "rdma link add rxe0 type rxe netdev eth1")]


def test_state_parsing_builtin_module_and_real_link_json():
    text = "\n".join(["@loaded", "ib_core", "@builtin", "rdma_rxe", "@chain",
                      "builtin rdma_rxe", "@links", LINKS_JSON])
    state = rdma.parse_rxe_state("vm1", text)
    assert state.module == "builtin" and state.to_load == ()
    assert state.link("mlx5_0") == rdma.RdmaLink("mlx5_0", 1, "ACTIVE", "LINK_UP", "enp1s0f0")
    loadable = rdma.parse_rxe_state("vm1", "@loaded\nudp_tunnel\n@builtin\n@chain\n" + CHAIN
                                    + "@links\nFailed to open NETLINK_RDMA socket\n")
    assert loadable.module == "loadable" and loadable.links == ()
    assert loadable.to_load == tuple(RXE_CHAIN[1:])
    with pytest.raises(CapabilityMissing, match="rdma link show"):
        rdma.parse_rxe_state("vm1", "@loaded\nrdma_rxe\n@links\nFailed to open NETLINK_RDMA "
                             "socket\n")


def test_verbs_tools_run_with_a_locked_memory_limit_of_their_own():
    argv = rdma.with_memlock(["ib_send_lat", "-a"])
    assert argv == ["prlimit", "--memlock=unlimited", "ib_send_lat", "-a"]
