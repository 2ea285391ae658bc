"""Inventories of real machines: bad input gets one clear error."""

import pytest

from harness.errors import SpecError
from harness.machines.inventory import Inventory
from harness.studies.s4 import study as s4

GOOD_INVENTORY = {
    "ssh": {"user": "root", "key": "~/.ssh/id_ed25519"},
    "nodes": {
        "client": {"host": "client.example.org", "interfaces": {
            "eth0": {"device": "enp1s0", "address": "192.0.2.10/24"},
            "eth1": {"device": "enp2s0", "address": "198.51.100.10/24"}}},
        "server": {"host": "server.example.org", "port": 2222, "interfaces": {
            "eth0": {"device": "ens3", "address": "203.0.113.5/24"}}},
    },
}


def test_inventory_covers_s4_without_its_router():
    inv = Inventory.from_dict(GOOD_INVENTORY)
    inv.check_covers(s4.topology(s4.Params.resolve()))
    assert inv.hosts["server"].port == 2222 and inv.hosts["client"].user == "root"
    assert inv.hosts["client"].accept_unknown_hosts is False


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("nodes"), "non-empty mapping"),
    (lambda d: d["nodes"]["client"].pop("host"), "needs a 'host'"),
    (lambda d: d["nodes"]["client"].update(passwd="x"), "unknown keys"),
    (lambda d: d["nodes"]["server"].update(port=70000), "out of range"),
    (lambda d: d["nodes"]["server"]["interfaces"]["eth0"].pop("device"), "needs 'device'"),
    (lambda d: d["nodes"]["server"]["interfaces"]["eth0"].update(address="x"), "invalid address"),
    (lambda d: d["ssh"].update(accept_unknown_hosts="yes"), "true or false"),
    (lambda d: d["ssh"].update(password="hunter2"), "password authentication is refused"),
])


def test_malformed_inventories(mutate, message):
    import copy

    data = copy.deepcopy(GOOD_INVENTORY)
    mutate(data)
    with pytest.raises(SpecError, match=message):
        Inventory.from_dict(data)


def test_inventory_missing_an_interface_is_refused():
    import copy

    data = copy.deepcopy(GOOD_INVENTORY)
    del data["nodes"]["client"]["interfaces"]["eth1"]
    with pytest.raises(SpecError, match="lacks interface 'eth1'"):
        Inventory.from_dict(data).check_covers(s4.topology(s4.Params.resolve()))


def test_inventory_file_errors(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        Inventory.load(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: [unclosed")
    with pytest.raises(SpecError, match="not valid YAML"):
        Inventory.load(bad)


def test_roles_outnumbering_the_machines_are_refused_naming_the_role():
    import copy

    data = copy.deepcopy(GOOD_INVENTORY)
    del data["nodes"]["server"]
    with pytest.raises(SpecError, match="no node 'server', which study topology 's4-mptcp'"):
        Inventory.from_dict(data).check_covers(s4.topology(s4.Params.resolve()))


def test_sudo_is_off_unless_the_inventory_says_so_and_only_a_user_login_goes_through_it():
    import copy

    from harness.nodes.sudo import SudoSSHNode

    data = copy.deepcopy(GOOD_INVENTORY)
    data["nodes"]["server"].update(user="alice", sudo=True)
    data["nodes"]["client"]["sudo"] = True  # root: sudo would add nothing
    inv = Inventory.from_dict(data)
    assert not Inventory.from_dict(GOOD_INVENTORY).hosts["server"].sudo
    server, client = inv.connect("server"), inv.connect("client")  # no connection yet
    assert isinstance(server, SudoSSHNode) and server.describe()["sudo"] is True
    assert not isinstance(client, SudoSSHNode)
    # the journal's undo rebuilds the node from its description: through sudo too
    from harness.nodes import node_from_description

    assert isinstance(node_from_description(server.describe()), SudoSSHNode)
    assert not isinstance(node_from_description(client.describe()), SudoSSHNode)
    data["nodes"]["server"]["sudo"] = "yes"
    with pytest.raises(SpecError, match="sudo must be true or false"):
        Inventory.from_dict(data)
