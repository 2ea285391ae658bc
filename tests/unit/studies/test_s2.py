"""S2 parameters, topology, the lab disk operation, and claims on synthetic runs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import CommandOnlyNode

from harness.claims import INCONCLUSIVE, LAB, MET, NOT_MET, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED
from harness.config.labdisk import LabDiskFs, parse_disk_state
from harness.errors import CapabilityMissing, HarnessError, SpecError
from harness.journal import Journal
from harness.nodes import Result
from harness.studies import s2, s2_analysis, s2_fs
from harness.studies.base import RunData
from harness.studies.registry import get_study


def test_profiles_and_the_papers_link():
    quick = s2.Params.resolve()
    assert quick.wan_rate_mbit == 1000 and quick.wan_rtt_ms == 4.8
    assert quick.bdp_bytes == pytest.approx(600_000)
    assert 1024 in quick.windows_kib and quick.tunings == ("era", "tuned")
    verdict = s2.Params.resolve(profile="verdict")
    assert verdict.repetitions >= 4 and len(verdict.block_sizes_kib) >= 2
    assert max(s2.Params.resolve(profile="paper").wan_clients) == 5
    assert get_study("s2").citation.seed.startswith("002_")


def test_file_system_points_sweep_blocks_for_the_parallel_fs_across_the_wan_only():
    params = s2.Params.resolve(clients=(1, 3), wan_clients=(1, 2), block_sizes_kib=(256, 1024))
    tuned = s2.file_system_points(params, "tuned")
    assert {(n, bs) for fs, path, n, bs in tuned if (fs, path) == ("pfs", "wan")} == {
        (1, 256), (1, 1024), (2, 256), (2, 1024)}
    assert {bs for fs, path, _n, bs in tuned if (fs, path) != ("pfs", "wan")} == {1024}
    assert {n for fs, path, n, _bs in tuned if path == "lan"} == {1, 3}
    assert len(tuned) == 2 + 2 + 2 + 4  # nfs lan, nfs wan, pfs lan, pfs wan
    assert s2.file_system_points(params, "era") == [("nfs", "wan", 1, 1024)]


@pytest.mark.parametrize("given, message", [
    (dict(windows_kib="64,64"), "repeats a value"),
    (dict(tunings="era"), "must include tuned"),
    (dict(file_systems="nfs,gpfs"), "unknown file system"),
    (dict(mtus="1500,4000"), "compares 1500 and 9000 only"),
    (dict(clients="0"), "out of range"),
    (dict(wan_rtt_ms=0), "out of range"),
])
def test_bad_parameters_fail_before_anything(given, message):
    with pytest.raises(SpecError, match=message):
        s2.Params.resolve(**given)


def test_topology_keeps_the_papers_link_and_disks():
    topo = s2.topology(s2.Params.resolve())
    wan = next(link for link in topo.links if link.a.ifname == "wan")
    lan = next(link for link in topo.links if link.a.ifname == "lan")
    assert wan.rate_mbit == 1000 and wan.delay_ms == pytest.approx(2.4) and wan.mtu == 9000
    assert lan.rate_mbit is None and lan.delay_ms == 0
    disks = {d.name: d for d in topo.node("server").disks}
    assert (disks["nfs"].write_mbyte_s, disks["nfs"].read_mbyte_s) == (30, 110)
    assert disks["pfs"].write_mbyte_s == 500
    assert topo.machine_of("client") != topo.machine_of("server")


# -- machines from an inventory: the user's own file systems ---------------------------------

def test_a_users_parallel_file_system_is_measured_over_its_one_path():
    params = s2.Params.resolve(pfs_mount="/gpfs/fs1", pfs_path="lan", clients=(1, 2))
    assert params.existing and params.measured_file_systems() == ("pfs",)
    assert params.paths("pfs") == ("lan",) and params.paths("nfs") == ("lan", "wan")
    points = s2.file_system_points(params, "tuned")
    assert {(fs, path) for fs, path, _n, _bs in points} == {("pfs", "lan")}
    assert s2.file_system_points(params, "era") == []  # the untuned cap is NFS's
    both = s2.Params.resolve(nfs_export="/export/scratch", pfs_mount="/gpfs/fs1",
                             server_disk_dir="/srv/raw")
    assert both.measured_file_systems() == ("nfs", "pfs")
    assert {(fs, path) for fs, path, _n, _bs in s2.file_system_points(both, "tuned")} == {
        ("nfs", "lan"), ("nfs", "wan"), ("pfs", "wan")}
    assert not s2.Params.resolve().existing  # the lab's own


@pytest.mark.parametrize("given, message", [
    (dict(pfs_mount="gpfs/fs1"), "not a plain absolute path"),
    (dict(pfs_mount="/gpfs/../etc"), "not a plain absolute path"),
    (dict(nfs_export="/export/my data"), "not a plain absolute path"),
    (dict(nfs_export="/export;reboot"), "not a plain absolute path"),
    (dict(server_disk_dir="/srv/raw"), "the disk under an existing NFS export"),
    (dict(pfs_mount="/gpfs/fs1", file_systems="nfs"), "names none of the existing"),
    (dict(pfs_path="metro"), "not one of the choices"),
])
def test_bad_paths_of_a_users_file_systems_are_refused(given, message):
    with pytest.raises(SpecError, match=message):
        s2.Params.resolve(**given)


def test_a_users_file_systems_need_an_inventory_and_an_inventory_needs_them():
    study = get_study("s2")
    with pytest.raises(SpecError, match="none was given"):
        study.check_where(s2.Params.resolve(), "machines.yaml")
    with pytest.raises(SpecError, match="file systems of real machines"):
        study.check_where(s2.Params.resolve(pfs_mount="/gpfs/fs1"), "")
    study.check_where(s2.Params.resolve(pfs_mount="/gpfs/fs1"), "machines.yaml")
    study.check_where(s2.Params.resolve(), "")
    tools = {t.name for t in study.requirements(s2.Params.resolve(pfs_mount="/gpfs/fs1")).tools}
    assert tools == {"iperf3", "fio"}  # nothing is served on real machines


class ShellNode(CommandOnlyNode):
    """Answers each command with the exit status of the first rule whose text it contains."""

    def __init__(self, name: str, failing: tuple[str, ...] = ()):
        self.name, self.failing, self.commands = name, failing, []

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.commands.append(text)
        return (1 if any(f in text for f in self.failing) else 0), "", "refused"


@pytest.mark.parametrize("failing, words", [
    (("mount.nfs4",), "client cannot mount NFS v4"),
    (("test -d /gpfs/fs1",), "no writable directory /gpfs/fs1"),
    (("findmnt",), "on the root file system"),
    (("test -d /srv/raw",), "server has no directory /srv/raw"),
])
def test_a_users_file_systems_are_checked_before_anything_changes(failing, words):
    params = s2.Params.resolve(nfs_export="/export/scratch", pfs_mount="/gpfs/fs1",
                               server_disk_dir="/srv/raw")
    client = ShellNode("client", failing)
    server = ShellNode("server", failing)
    with pytest.raises(CapabilityMissing, match=words):
        s2_fs.check_existing(client, server, params)
    s2_fs.check_existing(ShellNode("client"), ShellNode("server"), params)  # all there


def test_the_runs_directory_is_made_before_it_is_recorded_and_only_removed_if_made(tmp_path):
    journal = Journal(tmp_path / "journal.jsonl")
    session = SimpleNamespace(dry_run=False, journal=journal,
                              run=SimpleNamespace(run_id="20261125T000000Z-abc123"))
    node = ShellNode("client")
    path = s2_fs.own_directory(session, node, "/gpfs/fs1/")
    assert path == "/gpfs/fs1/harness-20261125T000000Z-abc123"
    assert node.commands == [f"mkdir -m 0700 {path}"]  # no -p: an existing name fails
    (entry,) = journal.pending()
    assert entry.kind == "file" and entry.data["path"] == path
    taken = ShellNode("client", failing=("mkdir",))
    with pytest.raises(HarnessError, match="cannot make the run's directory"):
        s2_fs.own_directory(session, taken, "/gpfs/fs2")
    assert len(journal.pending()) == 1  # nothing recorded: the undo never removes theirs


# -- the lab disk operation ------------------------------------------------------------------

class DiskNode(CommandOnlyNode):
    def __init__(self, listing: str):
        self.name, self.listing, self.commands = "server", listing, []

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        return 0, self.listing, ""


FRESH = "@dev /dev/vdb 0 0\n@mounts\nproc /proc proc rw 0 0\n"


def diff(listing: str, op: LabDiskFs | None = None):
    """The operation's changes given what its fact command printed."""
    op = op or LabDiskFs(DiskNode(listing), "harness-nfs", "/run/s2/disk-nfs")
    op.check()
    fact = op.facts()["disk"]
    return op.diff({"disk": fact.parse(Result("server", fact.command, listing, "", 0, 0.0))})


def test_a_fresh_lab_disk_is_formatted_and_mounted():
    changes = diff(FRESH)
    assert len(changes) == 1
    cmd = changes[0].command
    assert cmd.startswith("mkdir -p /run/s2/disk-nfs && mkfs.ext4 -q -F")
    assert cmd.endswith("/dev/vdb && mount /dev/vdb /run/s2/disk-nfs")
    assert changes[0].undo == {"mountpoint": "/run/s2/disk-nfs", "made": True}


@pytest.mark.parametrize("listing, words", [
    ("@mounts\n", "no disk with serial harness-nfs"),
    ("@dev /dev/vdb 0 0\n@mounts\n/dev/vdb /srv ext4 rw 0 0\n", "is in use"),
    ("@dev /dev/vdb 1 0\n@mounts\n", "is in use"),
    ("@dev /dev/vdb 0 0\n@mounts\ntmpfs /run/s2/disk-nfs tmpfs rw 0 0\n", "is in use"),
])
def test_a_disk_that_is_not_fresh_or_not_there_is_never_formatted(listing, words):
    with pytest.raises(SpecError, match=words):
        diff(listing)


@pytest.mark.parametrize("op, words", [
    (dict(serial="sda"), "not a lab disk"),
    (dict(fstype="btrfs"), "not supported"),
    (dict(mountpoint="/srv/x"), "not under /run"),
    (dict(mountpoint="/run/../etc"), "not under /run"),
])
def test_bad_lab_disk_arguments(op, words):
    args = dict(serial="harness-nfs", mountpoint="/run/s2/d", fstype="ext4") | op
    with pytest.raises(SpecError, match=words):
        LabDiskFs(DiskNode(FRESH), **args).check()


def test_disk_state_reads_partitions_and_mounts():
    res = Result("n", "", "@dev /dev/vdc 2 1\n@mounts\n/dev/vdc /a ext4 rw 0 0\n@exists\n", "", 0,
                 0.0)
    state = parse_disk_state("n", "harness-x", "/run/x", res)
    assert state.device == "/dev/vdc" and state.holders == 3 and state.mounted_at == ("/a",)
    assert state.mountpoint_exists


# -- claims on synthetic runs ---------------------------------------------------------------

LINE = 78.0  # the lab's WAN after scaling (factor 0.078)
FACTOR = LINE / 1000


def synthetic_run(reps: int = 5, noise: float = 0.01, nfs_era_mbyte: float = 1.2,
                  mtu_gain: float = 1.10, pfs_wan: float = 0.95, seed: int = 1,
                  flows: float = 0.97) -> RunData:
    """A run whose numbers follow the paper's claims (or not, as asked), with small noise."""
    rng = np.random.default_rng(seed)
    goodput = LINE * s2_analysis.GOODPUT_PER_WIRE
    rtt = 4.8e-3 / FACTOR

    def n(x):
        return x * (1 + rng.normal(0, noise))

    rows = []
    for rep in range(1, reps + 1):
        for tuning in ("era", "tuned"):
            for k in (0, 64, 256, 1024, 4096):
                cap = 87 if tuning == "era" and k == 0 else (128 if tuning == "era" else k or 4096)
                ideal = min(cap * 1024 * 8 / rtt / 1e6, goodput)
                rows.append(dict(kind="window", tuning=tuning, repetition=rep, window_kib=k,
                                 mbit_s=n(ideal)))
            rows.append(dict(kind="fs", fs="nfs", path="wan", tuning=tuning, repetition=rep,
                             rw="write", clients=1, block_kib=1024,
                             mbyte_s=n(nfs_era_mbyte if tuning == "era" else 0.65 * 2.34)))
        for mtu, f in ((1500, 1.0), (9000, mtu_gain)):
            rows.append(dict(kind="mtu", tuning="tuned", repetition=rep, mtu=mtu,
                             mbit_s=n(goodput * 0.8 * f)))
        for d in ("client->server", "server->client"):
            rows.append(dict(kind="flows", tuning="tuned", repetition=rep, direction=d,
                             mbit_s=n(goodput * flows)))
        for fs, w in (("nfs", 2.34), ("pfs", 39.0)):
            rows.append(dict(kind="disk", fs=fs, path="local", repetition=rep, rw="write",
                             clients=1, block_kib=1024, mbyte_s=n(w)))
        for c, nfs, pfs in ((1, 2.0, 10.0), (3, 1.5, 14.0)):
            for fs, v in (("nfs", nfs), ("pfs", pfs)):
                rows.append(dict(kind="fs", fs=fs, path="lan", tuning="tuned", repetition=rep,
                                 rw="write", clients=c, block_kib=1024,
                                 mbyte_s=n(v if fs == "nfs" else 0.6 * 39 * pfs / 14)))
        rows.append(dict(kind="fs", fs="pfs", path="wan", tuning="tuned", repetition=rep,
                         rw="write", clients=1, block_kib=1024,
                         mbyte_s=n(pfs_wan * goodput / 8)))
    meta = {"parameters": {"wan_rate_mbit": 1000.0, "wan_rtt_ms": 4.8},
            "placement": {"scaling": {"factor": FACTOR}}}
    return RunData(Path("."), meta, {"results": pd.DataFrame(rows)})


def outcomes(data: RunData) -> dict[str, str]:
    frame = s2_analysis.claims(data)
    return dict(zip(frame.claim_id, frame.outcome, strict=True))


def test_claims_reproduced_on_a_run_like_the_paper():
    got = outcomes(synthetic_run())
    for cid in ("window_line_rate", "window_over_rtt", "era_cap", "nfs_untuned_capped",
                "nfs_tuned_disk", "mtu_gain", "network_fine", "pfs_lan_below_disk",
                "pfs_wan_full_link", "nfs_falls", "pfs_scales"):
        assert got[cid] == REPRODUCED, cid
    assert got["block_size"] == NOT_TESTABLE  # one block size
    assert got["lan_saturation"] == NOT_TESTABLE and got["gpfs_bimodal"] == NOT_TESTABLE


def test_claims_not_reproduced_when_the_data_disagrees():
    got = outcomes(synthetic_run(nfs_era_mbyte=8.0, mtu_gain=1.0, pfs_wan=0.5))
    assert got["nfs_untuned_capped"] == NOT_REPRODUCED  # NFS beat the usable bandwidth
    assert got["mtu_gain"] == NOT_REPRODUCED
    assert got["pfs_wan_full_link"] == NOT_REPRODUCED


def test_claims_inconclusive_with_one_repetition_or_noise_at_a_bound():
    got = outcomes(synthetic_run(reps=1))
    assert got["mtu_gain"] == INCONCLUSIVE and got["window_line_rate"] == INCONCLUSIVE
    got = outcomes(synthetic_run(reps=4, noise=0.2, mtu_gain=1.05))
    assert got["mtu_gain"] == INCONCLUSIVE


def test_figures_render():
    data = synthetic_run()
    figs = s2_analysis.figures(data)
    assert set(figs) == {"fig2_1", "clients"}
    ax = figs["fig2_1"].axes[0]
    assert ax.get_xscale() == "log" and "BDP" in ax.get_xlabel()


def test_five_flows_at_the_line_itself_decide_the_network_check():
    """The network check is a floor (>= 0.95 of the line): flows measured at the line, as in
    the verdict run (1.00x [0.99, 1.00]), or a hair above it (the shaper's burst), reproduce
    it; flows well below it do not."""
    for at_the_line in (1.0, 1.01):
        assert outcomes(synthetic_run(flows=at_the_line))["network_fine"] == REPRODUCED
    assert outcomes(synthetic_run(flows=0.8))["network_fine"] == NOT_REPRODUCED


def test_interface_counters_around_a_point_give_each_paths_bytes():
    command = s2_fs.counters_command(("lan", "wan"))
    assert command.startswith("echo @net $(cat /sys/class/net/lan/statistics/tx_bytes ")
    assert command.count("/statistics/") == 4
    stderr = "@net 100 200 1000 2000\nfio: some warning\n@net 150 260 11000 2500\n"
    assert s2_fs.counter_deltas(("lan", "wan"), stderr) == {
        "lan_tx_bytes": 50, "lan_rx_bytes": 60, "wan_tx_bytes": 10000, "wan_rx_bytes": 500}
    assert s2_fs.counter_deltas(("lan", "wan"), "@net 1 2 3 4\n") == {}  # no after line
    assert s2_fs.counter_deltas(("lan", "wan"), "@net 1 2\n@net 3 4\n") == {}  # a device gone


def test_path_share_is_what_crossed_the_points_own_wire():
    write = {"bytes": 1000, "wan_tx_bytes": 1040, "wan_rx_bytes": 30, "lan_tx_bytes": 2}
    assert s2.path_share(write, "wan", "write") == {"path_bytes": 1040, "path_share": 1.04}
    read = {"bytes": 1000, "lan_rx_bytes": 5, "wan_rx_bytes": 1030}
    assert s2.path_share(read, "lan", "read")["path_share"] == 0.005  # it went over the WAN
    assert s2.path_share({"bytes": 1000}, "wan", "write") == {}


def test_the_on_path_check_fails_a_run_whose_points_took_the_other_wire():
    def run(wan_share):
        rows = [dict(kind="fs", fs=fs, path=path, rw=rw, tuning="tuned", clients=1,
                     repetition=rep, mbyte_s=1.0,
                     path_share=(wan_share if (fs, path) == ("pfs", "wan") else 1.03 + rep / 1000))
                for fs in ("nfs", "pfs") for path in ("lan", "wan") for rw in ("write", "read")
                for rep in (1, 2, 3)]
        return s2_analysis.on_path(pd.DataFrame(rows))
    good = run(1.04)
    assert good.outcome == MET and good.claim.source == LAB
    bad = run(0.0)  # the parallel FS's "WAN" data over the LAN: what the counters caught
    assert bad.outcome == NOT_MET and "pfs write over the WAN" in bad.note
    assert s2_analysis.on_path(pd.DataFrame([{"kind": "fs"}])).outcome == NOT_TESTABLE
    # a whole run without counters still has every claim, this one not testable
    assert outcomes(synthetic_run())["fs_on_path"] == NOT_TESTABLE


# -- registration (the quotes against the seed: tests/unit/test_registration.py) ----------------

def test_the_design_is_the_profiles_and_defaults_the_study_runs():
    """DESIGN is written out (s2 imports s2_analysis: importing s2 back would be a circle);
    it must be what the study runs, or a change of it would go unregistered."""
    design = s2_analysis.DESIGN
    assert design["profiles"] == s2.PROFILES
    defaults = s2.Params.resolve()
    for key, value in design["fixed"].items():
        assert getattr(defaults, key) == value, key
    assert set(design["points"]) == {c.id for c in s2_analysis.CLAIMS.values()}


def test_the_on_path_check_is_registered_as_a_check_of_the_lab_with_its_change():
    claim = s2_analysis.CLAIMS["fs_on_path"]
    assert claim.source == LAB and not claim.quote
    registration = get_study("s2").registration().to_dict()
    (change,) = registration["changes"]
    assert change["claims"] == ["fs_on_path"] and "target -> lab" in change["what"]
    sources = {c["id"]: c["source"] for c in registration["claims"]}
    assert sources["fs_on_path"] == LAB and sources["network_fine"] == "paper"
