"""Parameters, inventories and sweep files: bad input gets one clear error."""

import pytest

from harness.errors import SpecError
from harness.inventory import Inventory
from harness.studies import s4
from harness.studies.parameters import int_list
from harness.sweep import Sweep, _same


def test_stream_lists_accept_ranges_and_refuse_nonsense():
    assert int_list("streams", "1-3,10", 1, 128) == (1, 2, 3, 10)
    assert int_list("streams", 4, 1, 128) == (4,)
    for bad in ("0", "1,x", "", [1, 200], True):
        with pytest.raises(SpecError):
            int_list("streams", bad, 1, 128)


def test_s4_profiles_and_overrides():
    quick = s4.Params.resolve()
    paper = s4.Params.resolve(profile="paper")
    assert quick.streams == (1, 2, 4, 10) and paper.streams == tuple(range(1, 11))
    assert paper.repetitions >= 3
    custom = s4.Params.resolve(profile="paper", streams="1,10", repetitions=None)
    assert custom.streams == (1, 10) and custom.repetitions == paper.repetitions


@pytest.mark.parametrize("given, message", [
    ({"streams": 0}, "out of range"),
    ({"duration_s": -1}, "out of range"),
    ({"sender_cpus": 0.001}, "out of range"),
    ({"gridftp": "yes"}, "true or false"),
    ({"path_rate_mbit": 0}, "out of range"),
    ({"no_such": 1}, "unknown parameter"),
    ({"profile": "fast"}, "unknown profile"),
])
def test_s4_bad_parameters(given, message):
    with pytest.raises(SpecError, match=message):
        s4.Params.resolve(**given)


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
    (lambda d: d["ssh"].update(password="hunter2"), "unknown keys under 'ssh'"),
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


def test_sweep_points_are_the_cartesian_product(tmp_path):
    nb = tmp_path / "n.ipynb"
    nb.write_text("{}")
    f = tmp_path / "s.yaml"
    f.write_text("notebook: n.ipynb\nparameters: {profile: quick}\n"
                 "sweep: {sender_cpus: [0.0, 0.5], streams: ['1', '2']}\n")
    sweep = Sweep.load(f)
    assert sweep.notebook == nb.resolve()
    assert len(sweep.points()) == 4
    assert {"profile": "quick", "sender_cpus": 0.5, "streams": "2"} in sweep.points()


@pytest.mark.parametrize("text, message", [
    ("parameters: {}\n", "needs 'notebook:'"),
    ("notebook: n.ipynb\nsweep: {a: 1}\n", "non-empty list"),
    ("notebook: n.ipynb\nparameters: {a: 1}\nsweep: {a: [1]}\n", "both fixed and swept"),
    ("notebook: n.ipynb\nrepeat: 3\n", "unknown keys"),
    ("notebook: [", "not valid YAML"),
])
def test_malformed_sweeps(tmp_path, text, message):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    with pytest.raises(SpecError, match=message):
        Sweep.load(f)


def test_completed_point_matching_ignores_tuple_list_and_empty_values():
    assert _same({"streams": [1, 2], "inventory": None}, {"streams": (1, 2)})
    assert not _same({"streams": [1, 2]}, {"streams": (1, 3)})


def test_iperf3_durations_must_be_whole_seconds():
    from harness.tools.iperf3 import iperf3_client_argv

    argv = iperf3_client_argv("198.18.0.2", 5201, 3, 2, "cubic", None, True)
    assert argv[:2] == ["mptcpize", "run"] and argv[argv.index("-t") + 1] == "3"
    for bad in (0.5, 1.5, 0):
        with pytest.raises(SpecError, match="whole number"):
            iperf3_client_argv("198.18.0.2", 5201, bad, 1, None, None, False)
    with pytest.raises(SpecError, match="stream count"):
        iperf3_client_argv("198.18.0.2", 5201, 1, 0, None, None, False)


def test_iperf3_json_without_a_summary_is_an_error():
    from harness.errors import HarnessError
    from harness.tools.iperf3 import parse_iperf3_json

    busy = '{"start": {}, "intervals": [], "end": {}, "error": "the server is busy running a test. try again later"}'
    with pytest.raises(HarnessError, match="server is busy"):
        parse_iperf3_json(busy, 1)
    with pytest.raises(HarnessError, match="no end-of-test summary"):
        parse_iperf3_json('{"end": {}}', 1)
