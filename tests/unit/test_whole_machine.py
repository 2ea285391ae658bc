"""Whole-machine lab nodes: a node that is its machine's initial namespace (Soft-RoCE's home).

The topology says so per node; placement never builds such a lab on this host;
the lab gives the node no namespace, renames its wire NIC in place and undoes
that (addresses off, old name and MTU back).
"""

import pytest

from harness.errors import CapabilityMissing, SpecError
from harness.journal.journal import Journal
from harness.lab.lab import Lab
from harness.lab.placement import VMOffer, decide
from harness.lab.probe import Capabilities
from harness.net.backend import CommandBackend
from harness.nodes import LocalNode, MachineRootNode, Node, node_from_description
from harness.topology.topology import Topology, TopologyBuilder

HOST = Capabilities("local", "6.18", {"netns": True, "veth": True, "htb": True, "mptcp": True,
                                      "netem": True, "tipc": True, "sctp": True,
                                      "rdma_rxe": True, "nfsd": True})
VM = VMOffer(True, "/boot/vmlinuz-6.1.0-56-amd64", "6.1.0-56-amd64",
             {"netns", "veth", "htb", "rdma_rxe"})


def pair() -> Topology:
    return (TopologyBuilder("pair").node("a", whole_machine=True)
            .node("b", machine="b", whole_machine=True)
            .link(("a", "wire", "198.18.1.1/24"), ("b", "wire", "198.18.1.2/24")).build())


class FakeMachine(Node):
    """A remote machine that records commands and answers the NIC listing."""

    def __init__(self, name: str, listing: str = ""):
        self.name = name
        self.listing = listing
        self.commands: list[str] = []

    def describe(self) -> dict:
        return {"type": "ssh", "name": self.name, "host": "127.0.0.1", "port": 1}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        return 0, self.listing if "/sys/class/net" in cmd else "", ""

    def spawn(self, cmd, *, cgroup=None):
        raise AssertionError("no process expected")

    def put(self, local_path, remote_path):
        pass

    def get(self, remote_path, local_path):
        pass


def test_topology_keeps_the_flag_and_describes_it():
    topo = pair()
    assert topo.whole_machine_nodes() == ["a", "b"]
    assert Topology.from_dict(topo.to_dict()) == topo
    assert "a whole machine" in topo.describe()


def test_a_whole_machine_node_must_be_alone_on_its_machine():
    with pytest.raises(SpecError, match="takes its whole machine.*c is there too"):
        (TopologyBuilder("x").node("a", whole_machine=True).node("c")
         .link(("a", "eth0", "198.18.1.1/24"), ("c", "eth0", "198.18.1.2/24")).build())


def test_placement_never_puts_a_whole_machine_node_on_this_host():
    d = decide({"netns", "rdma_rxe"}, HOST, VM, "study s1", machines=1, whole_machines=True)
    assert d.where == "vm" and "initial network namespace" in d.reason
    assert decide({"netns"}, HOST, VM, "x").where == "host"


def test_placement_without_vms_says_why_a_vm_was_needed():
    with pytest.raises(CapabilityMissing, match="takes a whole machine"):
        decide({"netns"}, HOST, VMOffer(False, reason="no qemu"), "study s1", whole_machines=True)


def test_the_lab_refuses_this_hosts_own_stack():
    topo = (TopologyBuilder("one").node("a", whole_machine=True).node("b", machine="b")
            .link(("a", "wire", "198.18.1.1/24"), ("b", "wire", "198.18.1.2/24")).build())
    with pytest.raises(SpecError, match="this host"):
        Lab(topo, Journal.__new__(Journal), LocalNode("local"),
            hosts={"b": FakeMachine("vm-b")},
            nics={("a", "wire"): "52:54:00:5e:00:01", ("b", "wire"): "52:54:00:5e:00:02"})


def test_lab_nodes_are_the_machines_and_the_plan_has_no_namespace():
    a, b = FakeMachine("vm"), FakeMachine("vm-b")
    lab = Lab(pair(), Journal.__new__(Journal), a, hosts={"b": b},
              nics={("a", "wire"): "52:54:00:5e:00:01", ("b", "wire"): "52:54:00:5e:00:02"})
    node = lab.node("a")
    assert isinstance(node, MachineRootNode) and node.netns_path is None
    assert node.machine is a and lab.node("b").machine is b
    kinds = [c.kind for c in lab.plan()]
    assert "netns" not in kinds and kinds.count("nic") == 2
    assert "initial namespace" in lab.plan()[0].after
    assert lab.record()["namespaces"] == {"a": None, "b": None}


def test_the_nic_is_found_by_mac_for_the_undo():
    a = FakeMachine("vm", "lo 00:00:00:00:00:00 65536\nwire 52:54:00:5e:00:01 1500\n")
    b = FakeMachine("vm-b", "ens4 52:54:00:5e:00:02 1500\n")
    lab = Lab(pair(), Journal.__new__(Journal), a, hosts={"b": b},
              nics={("a", "wire"): "52:54:00:5e:00:01", ("b", "wire"): "52:54:00:5e:00:02"})
    lab._read_root_nics()
    assert lab._root_nics == {("a", "wire"): ("wire", 1500), ("b", "wire"): ("ens4", 1500)}
    b.listing = ""
    with pytest.raises(SpecError, match="no NIC with MAC 52:54:00:5e:00:02"):
        lab._read_root_nics()


def test_command_backend_renames_in_place_then_configures_the_root_namespace():
    backend = CommandBackend(LocalNode("x"))
    backend.rename_nic("52:54:00:5e:00:01", "wire")
    backend.configure_interface("", "wire", "198.18.1.1/24", 9000)
    backend.add_route("", __import__("harness.topology.topology", fromlist=["Route"]).Route(
        "a", "198.19.0.0/16", via="198.18.1.2"))
    script = backend.script()
    assert "ip -n" not in script and "ip -batch -" in script
    assert script.index("name wire") < script.index("addr add 198.18.1.1/24 dev wire")
    assert "link set wire mtu 9000" in script and "route add 198.19.0.0/16" in script


def test_machine_root_node_runs_on_its_machine_and_is_rebuilt_from_its_description():
    vm = FakeMachine("vm")
    node = MachineRootNode(vm, "a")
    node.run("echo hi")
    assert vm.commands == ["echo hi"] and node.command_on_machine(["ip", "a"]) == "ip a"
    back = node_from_description(node.describe())
    assert isinstance(back, MachineRootNode) and back.name == "a"
    assert back.parent.describe()["host"] == "127.0.0.1"


def test_the_undo_gives_the_nic_its_name_and_mtu_back():
    from harness.net.backend import _undo_root_nic

    vm = FakeMachine("vm")
    _undo_root_nic(MachineRootNode(vm, "a"),
                   {"ifname": "wire", "name": "ens4", "mtu": 1500, "mac": "x"})
    (cmd,) = vm.commands
    assert "ip addr flush dev wire" in cmd and "mtu 1500" in cmd and "name ens4" in cmd


@pytest.mark.parametrize("ends_with_run, undo_env, undone_inside", [
    (True, "", False),  # a run's own VMs: their state ends with them, no SSH command each
    (True, "1", True),  # HARNESS_UNDO_IN_VMS=1: undone one by one, as on a real machine
    (False, "", True),  # machines the run does not stop (inventory): always undone
])
def test_teardown_leaves_changes_inside_the_runs_own_vms_to_end_with_them(
        tmp_path, monkeypatch, ends_with_run, undo_env, undone_inside):
    monkeypatch.setenv("HARNESS_UNDO_IN_VMS", undo_env)
    a, b = FakeMachine("vm"), FakeMachine("vm-b")
    journal = Journal(tmp_path / "journal.jsonl")
    lab = Lab(pair(), journal, a, hosts={"b": b}, machines_end_with_run=ends_with_run,
              nics={("a", "wire"): "52:54:00:5e:00:01", ("b", "wire"): "52:54:00:5e:00:02"})
    lab._scope_start = 0
    on_host = tmp_path / "harness-host-change"
    on_host.write_text("made by the run")
    journal.record("file", LocalNode(), path=str(on_host))
    guest_a = journal.record("file", lab.node("a"), path="/tmp/harness-guest-change")
    guest_b = journal.record("file", b, path="/tmp/harness-guest-change-b")
    lab.teardown()
    assert not on_host.exists(), "a change on this host is always undone"
    pending = {e.seq for e in journal.pending()}
    if undone_inside:
        assert not pending and any("/tmp/harness-guest-change" in c for c in a.commands)
        assert any("/tmp/harness-guest-change-b" in c for c in b.commands)
    else:
        assert pending == {guest_a.seq, guest_b.seq}  # marked undone when their VM stops
        # nothing but the one read of each VM's identity that its first record names
        assert not [c for c in a.commands + b.commands if "boot_id" not in c]
