"""Bad input, as data: malformed inventories, sweep files and parameters.

Each case goes through ``harness run``/``harness batch`` exactly as a user's
would and must be refused with ONE clear error (exit 2, one ``harness: error``
line naming the problem, a hint) before anything changes: no run folder, no
machine lock taken, no namespace, no SSH connection (every host here is
unreachable by construction: a refused inventory never gets that far).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from harness.cli import main

from .test_inventory import GOOD_INVENTORY

ROOT = Path(__file__).resolve().parents[2]
S4 = ROOT / "notebooks" / "s4_mptcp.ipynb"
S3 = ROOT / "notebooks" / "s3_tipc.ipynb"
S2 = ROOT / "notebooks" / "s2_wan_fs.ipynb"

GOOD = {**GOOD_INVENTORY, "ssh": {**GOOD_INVENTORY["ssh"], "known_hosts": "~/.ssh/known_hosts"}}


def _set(path: str, value):
    """A mutation setting GOOD[path] (dotted) to ``value``."""
    def mutate(data):
        *parents, last = path.split(".")
        for key in parents:
            data = data[key]
        data[last] = value
    return mutate


def _drop(path: str):
    def mutate(data):
        *parents, last = path.split(".")
        for key in parents:
            data = data[key]
        del data[last]
    return mutate


IFACE = "nodes.server.interfaces.eth0"

BAD_INVENTORIES = [
    # missing fields
    ("no nodes", _drop("nodes"), "non-empty mapping 'nodes"),
    ("no host", _drop("nodes.client.host"), "node 'client' needs a 'host'"),
    ("no device", _drop(f"{IFACE}.device"), "needs 'device' and 'address'"),
    ("no address", _drop(f"{IFACE}.address"), "needs 'device' and 'address'"),
    ("interface the study needs", _drop("nodes.client.interfaces.eth1"),
     "lacks interface 'eth1'"),
    ("node the study needs", _drop("nodes.server"), "has no node 'server'"),
    # unknown keys
    ("unknown top-level key", _set("hosts", {}), "unknown top-level keys ['hosts']"),
    ("unknown node key", _set("nodes.client.address", "192.0.2.10"), "unknown keys ['address']"),
    ("unknown ssh key", _set("ssh.timeout", 5), "unknown keys under 'ssh': ['timeout']"),
    ("unknown interface key", _set(f"{IFACE}.mtu", 9000), "unknown keys ['mtu']"),
    ("singular accept_unknown_host", _set("ssh.accept_unknown_host", True),
     "unknown keys under 'ssh': ['accept_unknown_host']"),
    # password authentication
    ("password under ssh", _set("ssh.password", "hunter2"), "password authentication"),
    ("password on a node", _set("nodes.client.password", "hunter2"), "password authentication"),
    ("passphrase", _set("ssh.passphrase", "x"), "password authentication"),
    # accept_unknown_hosts misuse
    ("accept as text", _set("ssh.accept_unknown_hosts", "yes"), "must be true or false"),
    ("accept 'false' as text", _set("ssh.accept_unknown_hosts", "false"), "must be true or false"),
    ("accept as a number", _set("nodes.client.accept_unknown_hosts", 1), "must be true or false"),
    ("accept without known_hosts", lambda d: (d["ssh"].pop("known_hosts"),
                                              d["ssh"].update(accept_unknown_hosts=True)),
     "accept_unknown_hosts needs an explicit known_hosts"),
    # duplicate addresses
    ("duplicate address across nodes", _set(f"{IFACE}.address", "192.0.2.10/24"),
     "address 192.0.2.10 is given twice"),
    ("duplicate address on one node", _set("nodes.client.interfaces.eth1.address",
                                           "192.0.2.10/24"), "address 192.0.2.10 is given twice"),
    # shell metacharacters and other bad names
    ("device with ;", _set(f"{IFACE}.device", "ens3;reboot"), "device name 'ens3;reboot'"),
    ("device with $()", _set(f"{IFACE}.device", "$(reboot)"), "device name '$(reboot)'"),
    ("device with space", _set(f"{IFACE}.device", "ens 3"), "device name 'ens 3'"),
    ("device too long", _set(f"{IFACE}.device", "a" * 16), "device name"),
    ("host with backquote", _set("nodes.client.host", "`reboot`"), "host name '`reboot`'"),
    ("host with option", _set("nodes.client.host", "-oProxyCommand=x"), "host name"),
    ("user with ;", _set("ssh.user", "root;id"), "user name 'root;id'"),
    # values
    ("bad address", _set(f"{IFACE}.address", "300.1.1.1/24"), "invalid address"),
    ("port out of range", _set("nodes.server.port", 70000), "out of range"),
    ("port as bool", _set("nodes.server.port", True), "non-numeric port"),
    ("nodes as a list", _set("nodes", ["client", "server"]), "non-empty mapping 'nodes"),
]


@pytest.fixture
def quiet_machine(data_root, tmp_path, monkeypatch):
    """Where a refused run would leave traces: the data folder and the lock folder."""
    locks = tmp_path / "locks"
    monkeypatch.setenv("HARNESS_LOCK_DIR", str(locks))

    def untouched():
        assert not (data_root / "runs").exists() or not any((data_root / "runs").rglob("*"))
        assert not locks.exists() or not any(locks.iterdir())
    return untouched


def refused(capsys, argv: list[str]) -> str:
    """Run the CLI; it must fail with exactly one error line (and its hint)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("harness: error")]
    assert len(lines) == 1, err
    assert "how to fix" in err, err
    return err


@pytest.mark.parametrize("case, mutate, message", BAD_INVENTORIES,
                         ids=[c[0] for c in BAD_INVENTORIES])
def test_bad_inventory_is_refused_before_anything(case, mutate, message, tmp_path, capsys,
                                                  quiet_machine):
    data = copy.deepcopy(GOOD)
    mutate(data)
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(data))
    err = refused(capsys, ["run", str(S4), "--inventory", str(path)])
    assert message in err
    quiet_machine()


def test_the_good_inventory_passes_the_same_checks(tmp_path):
    from harness.run.execute import check_parameters

    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(GOOD))
    study, _params = check_parameters(S4, {"inventory": str(path)})
    assert study.name == "s4"


BAD_SWEEPS = [
    ("not YAML", "notebook: [", "not valid YAML"),
    ("not a mapping", "- a\n- b\n", "needs 'notebook:'"),
    ("no notebook", "sweep: {streams: [[1]]}\n", "needs 'notebook:'"),
    ("missing notebook", "notebook: nowhere.ipynb\n", "notebook nowhere.ipynb does not exist"),
    ("unknown key", "notebook: {nb}\nrepeat: 2\n", "unknown keys ['repeat']"),
    ("axis not a list", "notebook: {nb}\nsweep: {repetitions: 2}\n", "non-empty list"),
    ("empty axis", "notebook: {nb}\nsweep: {repetitions: []}\n", "non-empty list"),
    ("fixed and swept", "notebook: {nb}\nparameters: {repetitions: 2}\n"
     "sweep: {repetitions: [1, 2]}\n", "both fixed and swept"),
    ("unknown parameter", "notebook: {nb}\nsweep: {streamz: [1]}\n", "unknown parameter(s) streamz"),
    ("a bad point", "notebook: {nb}\nsweep: {repetitions: [2, 0]}\n", "repetitions=0"),
    ("run_dir", "notebook: {nb}\nparameters: {run_dir: /tmp/x}\n", "run_dir is set by"),
    ("parameters not a mapping", "notebook: {nb}\nparameters: [1]\n", "must be mappings"),
]


@pytest.mark.parametrize("case, text, message", BAD_SWEEPS, ids=[c[0] for c in BAD_SWEEPS])
def test_bad_sweep_is_refused_before_any_point_runs(case, text, message, tmp_path, capsys,
                                                    quiet_machine):
    path = tmp_path / "sweep.yaml"
    path.write_text(text.replace("{nb}", str(S4)))
    err = refused(capsys, ["batch", str(path), "-q"])
    assert message in err
    quiet_machine()


BAD_PARAMETERS = [
    (S4, "streams", "0", "out of range"),
    (S4, "streams", "1-200", "out of range"),
    (S4, "streams", "many", "not a list of integers"),
    (S4, "repetitions", "2.5", "whole number"),
    (S4, "duration_s", "'4; reboot'", "not a number"),
    (S4, "gridftp", "maybe", "must be true or false"),
    (S4, "profile", "fast", "unknown profile 'fast'"),
    (S4, "sender_cpus", "-1", "out of range"),
    (S4, "nonsense", "1", "unknown parameter(s) nonsense"),
    (S4, "run_dir", "/tmp/x", "run_dir is set by"),
    (S3, "protocols", "[tcp-cubic, 'sctp; reboot']", "unknown"),
    (S3, "protocols", "[]", "is empty"),
    (S2, "pfs_mount", "'/gpfs/fs1; rm -rf /'", "not a plain absolute path"),
    (S2, "nfs_export", "export/scratch", "not a plain absolute path"),
    (S2, "pfs_mount", "/gpfs/fs1", "file systems of real machines"),  # no inventory given
]


@pytest.mark.parametrize("notebook, name, value, message", BAD_PARAMETERS,
                         ids=[f"{p[1]}={p[2]}" for p in BAD_PARAMETERS])
def test_bad_parameter_is_refused_before_anything(notebook, name, value, message, capsys,
                                                  quiet_machine):
    err = refused(capsys, ["run", str(notebook), "-p", name, value])
    assert message in err
    quiet_machine()


def test_a_parameters_file_that_is_not_a_mapping_is_refused(tmp_path, capsys, quiet_machine):
    path = tmp_path / "params.yaml"
    path.write_text("- streams\n")
    err = refused(capsys, ["run", str(S4), "-f", str(path)])
    assert "must be a mapping" in err
    quiet_machine()


PING = ROOT / "tests" / "studies" / "ping_study.ipynb"
SLURM_TEMPLATE = {"ssh": {"user": "root", "key": "~/.ssh/id_ed25519",
                          "known_hosts": "~/.ssh/known_hosts"},
                  "interfaces": {"eth0": {"device": "ib0", "address": "{ip}/24"}}}

#: Slurm's part (harness/slurm*.py). Each is refused before sbatch is asked: an unknown
#: partition is Slurm's own refusal (sbatch --test-only), checked against a real Slurm in
#: tests/integration/slurm/test_slurm.py::test_bad_sbatch_options_are_refused_...
BAD_SLURM = [
    ("--nodes fewer than the roles", ["--slurm", "--nodes=1"], None, None,
     "sets --nodes, which the harness sets itself"),
    ("-N fewer than the roles", ["--slurm", "-N1"], None, None,
     "sets --nodes, which the harness sets itself"),
    ("data folder missing", ["--slurm", "--time=5"], None, "missing",
     "does not exist (or is not a folder), and a Slurm job archives its run there"),
    ("data folder not writable", ["--slurm", "--time=5"], None, "/proc/sys",
     "is not writable by this user"),
    ("template address without a placeholder", ["--slurm", "--time=5"],
     _set("interfaces.eth0.address", "10.1.0.1/24"), None, "address 10.1.0.1 is given twice"),
    ("template with an unknown placeholder", ["--slurm", "--time=5"],
     _set("interfaces.eth0.address", "{ipaddr}/24"), None, "uses {ipaddr}"),
    ("template naming a role the study lacks", ["--slurm", "--time=5"],
     _set("nodes", {"server": {"host": "{node_addr}"}}), None, "names ['server']"),
    ("--inventory slurm outside an allocation", ["--inventory", "slurm"], None, None,
     "needs a Slurm allocation, and SLURM_JOB_NODELIST is not set"),
]


@pytest.mark.parametrize("case, argv, mutate, data, message", BAD_SLURM,
                         ids=[c[0] for c in BAD_SLURM])
def test_bad_slurm_input_is_refused_before_anything(case, argv, mutate, data, message,
                                                    data_root, tmp_path, capsys, monkeypatch,
                                                    quiet_machine):
    for name in ("SLURM_JOB_NODELIST", "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    if data == "/proc/sys":  # a folder no one may write into, root included
        monkeypatch.setenv("HARNESS_DATA", data)
    elif data != "missing":
        data_root.mkdir()
    template = copy.deepcopy(SLURM_TEMPLATE)
    if mutate:
        mutate(template)
    path = tmp_path / "template.yaml"
    path.write_text(yaml.safe_dump(template))
    err = refused(capsys, ["run", str(PING), *argv, "--inventory-template", str(path)])
    assert message in err
    quiet_machine()
    assert not (data_root / "slurm").exists()  # no submission, no log, no inventory
