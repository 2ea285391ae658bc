"""S2 parameters, topology, the lab disk operation, and claims on synthetic runs."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import CommandOnlyNode

from harness.config.labdisk import LabDiskFs, parse_disk_state
from harness.errors import CapabilityMissing, HarnessError, SpecError
from harness.journal.journal import Journal
from harness.nodes import Result
from harness.studies.base import RunData
from harness.studies.registry import get_study
from harness.studies.s2 import analysis as s2_analysis
from harness.studies.s2 import design as s2_lab
from harness.studies.s2 import fs as s2_fs
from harness.studies.s2 import measure as s2_measure
from harness.studies.s2 import study as s2
from harness.studies.s2 import validity as s2_validity
from harness.verdicts.claims import INCONCLUSIVE, LAB, MET, NOT_MET, NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED


def test_profiles_and_the_papers_link():
    quick = s2.Params.resolve()
    assert quick.wan_rate_mbit == 1000 and quick.wan_rtt_ms == 4.8
    assert quick.bdp_bytes == pytest.approx(600_000)
    assert 1024 in quick.windows_kib and quick.tunings == ("era", "tuned")
    verdict = s2.Params.resolve(profile="verdict")
    assert verdict.repetitions >= 2 and len(verdict.block_sizes_kib) >= 2
    assert max(s2.Params.resolve(profile="paper").wan_clients) == 9 and 9 in verdict.wan_clients
    assert get_study("s2").citation.seed.startswith("002_")


def test_file_system_points_sweep_blocks_at_one_task_over_the_block_paths():
    params = s2.Params.resolve(clients=(1, 3), wan_clients=(1, 9), block_sizes_kib=(256, 1024))
    tuned = s2.file_system_points(params, "tuned")
    assert {(n, bs) for fs, path, n, bs in tuned if (fs, path) == ("pfs", "wan")} == {
        (1, 256), (1, 1024), (9, 1024)}
    assert {bs for fs, path, _n, bs in tuned if (fs, path) != ("pfs", "wan")} == {1024}
    assert {n for fs, path, n, _bs in tuned if (fs, path) == ("pfs", "lan")} == {1, 3}
    assert {n for fs, path, n, _bs in tuned if (fs, path) == ("nfs", "lan")} == {1}
    assert {n for fs, path, n, _bs in tuned if path == "wan"} == {1, 9}
    assert len(tuned) == 1 + 2 + 2 + 3  # nfs lan, nfs wan, pfs lan, pfs wan
    assert s2.file_system_points(params, "era") == [("nfs", "wan", 1, 1024)]
    both = s2.Params.resolve(block_paths=("lan", "wan"), block_sizes_kib=(256, 4096))
    assert {(path, bs) for fs, path, _n, bs in s2.file_system_points(both, "tuned")
            if fs == "pfs"} == {(p, b) for p in ("lan", "wan") for b in (256, 1024, 4096)}


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
    # the paper's 500 MB/s was its LAN's rate too; ours is below the lab's LAN (issue 34
    # item 15): 200 x f = 0.64 of the LAN wire's ceiling, still 1.6 x the WAN's line
    assert disks["pfs"].write_mbyte_s == 200
    assert 200 * 0.4 / 1000 < 1 / 8 and 200 > 1000 / 8
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
    # no -p: an existing name fails (the journal may read the machine's identity besides)
    assert [c for c in node.commands if "mkdir" in c] == [f"mkdir -m 0700 {path}"]
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
    assert cmd.startswith("mkdir -p /run/s2 && mkdir /run/s2/disk-nfs && mkfs.ext4 -q -F")
    assert cmd.endswith("/dev/vdb && mount /dev/vdb /run/s2/disk-nfs")
    assert changes[0].undo == {"mountpoint": "/run/s2/disk-nfs", "made": True}


@pytest.mark.parametrize("listing, words", [
    ("@mounts\n", "no disk with serial harness-nfs"),
    ("@dev /dev/vdb 0 0\n@mounts\n/dev/vdb /srv ext4 rw 0 0\n", "is in use"),
    ("@dev /dev/vdb 1 0\n@mounts\n", "is in use"),
    ("@dev /dev/vdb 0 0\n@mounts\ntmpfs /run/s2/disk-nfs tmpfs rw 0 0\n", "is in use"),
    ("@dev /dev/vdb 0 0\n@mounts\n@exists\n", "mount point /run/s2/disk-nfs exists already"),
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


def synthetic_run(reps: int = 5, noise: float = 0.01, nfs_era_mbyte: float = 1.45,
                  mtu_gain: float = 1.03, pfs_wan: float = 0.95, seed: int = 1,
                  flows: float = 0.975, rtts: float = 50.0, placement: dict | None = None,
                  extra: list[dict] | None = None) -> RunData:
    """A run whose numbers follow the paper's claims (or not, as asked), with small noise;
    every point ``rtts`` round trips long."""
    rng = np.random.default_rng(seed)
    goodput = LINE * s2_analysis.GOODPUT_PER_WIRE
    line_mbyte = goodput / 8
    rtt = 4.8e-3 / FACTOR
    nfs_disk = {"write": 30 * FACTOR, "read": 110 * FACTOR}

    def n(x):
        return x * (1 + rng.normal(0, noise))

    def fs(**row):
        return {"kind": "fs", "tuning": "tuned", "block_kib": 1024, "line_mbyte_s": line_mbyte,
                **row}

    rows = []
    for rep in range(1, reps + 1):
        for k in (0, 64, 256, 1024, 4096):
            ideal = min((k or 4096) * 1024 * 8 / rtt / 1e6, goodput)
            rows.append(dict(kind="window", tuning="tuned", path="wan", repetition=rep,
                             window_kib=k, mbit_s=n(ideal)))
        rows.append(dict(kind="window", tuning="era", path="wan", repetition=rep, window_kib=0,
                         mbit_s=n(0.16 * goodput)))
        rows.append(fs(fs="nfs", path="wan", tuning="era", repetition=rep, rw="read",
                       clients=1, mbyte_s=n(nfs_era_mbyte)))
        for c, share in ((1, 1.0), (9, 0.8)):  # NFS falls across the WAN (Fig. 2-6)
            rows.append(fs(fs="nfs", path="wan", repetition=rep, rw="write", clients=c,
                           mbyte_s=n(0.93 * nfs_disk["write"] * share)))
            rows.append(fs(fs="nfs", path="wan", repetition=rep, rw="read", clients=c,
                           mbyte_s=n(0.65 * nfs_disk["read"] * share)))
        for mtu, f in ((1500, 1.0), (9000, mtu_gain)):
            rows.append(dict(kind="mtu", tuning="tuned", path="wan", repetition=rep, mtu=mtu,
                             mbit_s=n(goodput * 0.8 * f)))
        for d in ("client->server", "server->client"):
            rows.append(dict(kind="flows", tuning="tuned", path="wan", repetition=rep,
                             direction=d, mbit_s=n(goodput * flows)))
        for disk, rw, v in (("nfs", "write", nfs_disk["write"]), ("nfs", "read", nfs_disk["read"]),
                            ("pfs", "write", 39.0)):
            rows.append(dict(kind="disk", fs=disk, path="local", repetition=rep, rw=rw,
                             clients=1, block_kib=1024, mbyte_s=n(v)))
        for c, nfs, pfs in ((1, 2.0, 10.0), (3, 1.5, 14.0)):
            rows.append(fs(fs="nfs", path="lan", repetition=rep, rw="write", clients=c,
                           mbyte_s=n(nfs)))
            rows.append(fs(fs="pfs", path="lan", repetition=rep, rw="write", clients=c,
                           mbyte_s=n(0.6 * 39 * pfs / 14)))
        rows.append(fs(fs="pfs", path="wan", repetition=rep, rw="write", clients=1,
                       mbyte_s=n(pfs_wan * line_mbyte)))
        rows.append(fs(fs="pfs", path="wan", repetition=rep, rw="write", clients=9,
                       mbyte_s=n(101 / 119.6 * line_mbyte)))
    rows += extra or []
    for row in rows:
        row.setdefault("rtts", rtts)
        row.setdefault("bdps", 20.0)
    meta = {"parameters": {"wan_rate_mbit": 1000.0, "wan_rtt_ms": 4.8},
            "placement": {"scaling": {"factor": FACTOR}, **(placement or {})}}
    return RunData(Path("."), meta, {"results": pd.DataFrame(rows)})


def outcomes(data: RunData) -> dict[str, str]:
    frame = s2_analysis.claims(data)
    return dict(zip(frame.claim_id, frame.outcome, strict=True))


def test_claims_reproduced_on_a_run_like_the_paper():
    got = outcomes(synthetic_run())
    assert got["window_over_rtt"] == MET  # our check of the WAN (source lab since 2026-11-30)
    for cid in ("window_line_rate", "era_cap", "nfs_untuned_capped",
                "nfs_tuned_disk", "nfs_tuned_write", "pfs_lan_below_disk",
                "pfs_wan_full_link", "nfs_falls", "pfs_scales"):
        assert got[cid] == REPRODUCED, cid
    # 101 MB/s: 0.845 of the goodput x/÷ 1.1 (the equivalence margin), decided at the paper's noise
    assert got["task_scaling"] == REPRODUCED
    assert outcomes(synthetic_run(noise=0.001))["task_scaling"] == REPRODUCED
    # +3 %: within what the headers allow (the target; the paper's +10 % is an expectation)
    tight = outcomes(synthetic_run(noise=0.003))
    assert tight["mtu_gain"] == MET and tight["mtu_header_bound"] == MET
    assert got["block_size"] == NOT_TESTABLE and got["block_size_lan"] == NOT_TESTABLE
    assert got["lan_saturation"] == NOT_TESTABLE and got["gpfs_bimodal"] == NOT_TESTABLE


def test_the_mtu_target_is_judged_beside_the_header_bound():
    """A +10 % gain on a rate-limited line is more than the saved headers allow: the target
    (the header saving) and the bound both say so."""
    got = outcomes(synthetic_run(mtu_gain=1.10))
    assert got["mtu_gain"] == NOT_MET and got["mtu_header_bound"] == NOT_MET
    assert s2_analysis.registered().claim("mtu_gain").region.high == pytest.approx(3.8 + 2.0)
    bound = s2_analysis.registered().claim("mtu_header_bound").region
    assert bound.high == pytest.approx(3.8 + 2.0)
    assert pytest.approx(0.038, abs=5e-4) == (8948 / 9014) / (1448 / 1514) - 1


def test_claims_not_reproduced_when_the_data_disagrees():
    got = outcomes(synthetic_run(nfs_era_mbyte=3.0, pfs_wan=0.5))
    assert got["nfs_untuned_capped"] == NOT_REPRODUCED  # NFS beat the usable bandwidth
    assert got["pfs_wan_full_link"] == NOT_REPRODUCED


def test_claims_inconclusive_with_one_repetition_or_noise_at_a_bound():
    got = outcomes(synthetic_run(reps=1))
    assert got["mtu_header_bound"] == INCONCLUSIVE and got["window_line_rate"] == INCONCLUSIVE
    got = outcomes(synthetic_run(reps=4, noise=0.2, mtu_gain=1.05))
    assert got["mtu_gain"] == INCONCLUSIVE


def test_points_shorter_than_the_regime_decide_nothing():
    """Points of fewer round trips than the registered minimum are outside the paper's
    regime: every claim on them is not testable, with the measured length."""
    frame = s2_analysis.claims(synthetic_run(rtts=s2_lab.MIN_RTTS - 16))
    paper = frame[frame.source == "paper"].set_index("claim_id")
    assert set(paper.outcome) == {NOT_TESTABLE}
    assert "shorter than the regime's 30 round trips (measured 14.0..14.0" in \
        paper.loc["pfs_wan_full_link", "reason"]
    # one long repetition among short ones is all that counts
    long_one = synthetic_run(rtts=10)
    long_one.tables["results"].loc[long_one.results.repetition == 1, "rtts"] = 60
    row = s2_analysis.claims(long_one).set_index("claim_id").loc["era_cap"]
    assert row.n == 1


def test_a_wan_point_above_the_line_is_invalid_never_inconclusive():
    """The LAN leak of 2026-11-25: a parallel-FS 'WAN' write of 16.9 Mbit/s on an 11.4
    Mbit/s line cannot have crossed the WAN."""
    leak = [dict(kind="fs", fs="pfs", path="wan", tuning="tuned", block_kib=1024, rw="write",
                 clients=1, repetition=1, mbyte_s=LINE * 16.9 / 11.4 / 8)]
    got = outcomes(synthetic_run(extra=leak))
    assert got["pfs_wan_full_link"] == "invalid"
    assert got["window_line_rate"] == REPRODUCED  # other claims are not touched


def test_disk_points_above_their_cap_are_invalid_beyond_the_throttles_burst():
    """A 1 MiB raw read at 17.2 MB/s against a 1.31 MB/s cap (2026-11-26) is impossible;
    a long read a few per cent over its cap is QEMU's first request, and counts."""
    disks = {"disks": {"server": {"nfs": {"read_mbyte_s": 1.31, "write_mbyte_s": 0.36}}}}
    checks = s2_validity.point_checks(pd.DataFrame([
        dict(kind="disk", fs="nfs", path="local", rw="read", mbyte_s=17.2, bytes=1 << 20,
             repetition=1),
        dict(kind="disk", fs="nfs", path="local", rw="read", mbyte_s=1.36, bytes=60e6,
             repetition=1)]), {"placement": disks})
    assert checks[0] is not None and "cap" in checks[0].why and checks[0].bound == 1.31
    assert checks[1] is None
    assert s2_validity.disk_slack(1.31, 60e6) == pytest.approx(
        (2 * 2**20 + 0.131e6) / 60e6 + 0.02)


def test_the_parallel_fs_lan_claim_needs_a_lan_as_fast_as_its_disk():
    placement = {"wire_ceilings_mbit": {"client:lan--server:lan": 116.6},
                 "disks": {"server": {"pfs": {"write_mbyte_s": 22.4, "read_mbyte_s": 22.4}}}}
    row = s2_analysis.claims(synthetic_run(placement=placement)).set_index("claim_id")
    assert row.loc["pfs_lan_below_disk", "outcome"] == NOT_TESTABLE
    assert "14.6 MB/s" in row.loc["pfs_lan_below_disk", "reason"]
    assert "22.4 MB/s" in row.loc["lan_saturation", "reason"]


def test_figures_render():
    data = synthetic_run()
    figs = s2_analysis.figures(data)
    assert set(figs) == {"fig2_1", "clients"}
    ax = figs["fig2_1"].axes[0]
    assert ax.get_xscale() == "log" and "BDP" in ax.get_xlabel()
    texts = [t.get_text() for a in figs["clients"].axes for t in a.texts]
    assert "paper: GPFS, 9 tasks: 101" in texts and "paper: NFS write 28" in texts


def test_five_flows_are_judged_on_table_2_5_at_the_papers_mtu():
    """The region comes from the text (950..986 Mbit/s at MTU 9000, over 1 Gbit/s's goodput
    there), not from a run: flows at 0.975 of the line reproduce it, 0.8 does not, and
    flows above what the line carries are invalid."""
    region = s2_analysis.registered().claim("network_fine").region
    # Table 2-5's 0.957..0.993 widened by the equivalence margin, capped at what the line carries
    assert (region.low, region.high) == pytest.approx((0.957 / 1.1, 1.02), abs=5e-4)
    assert outcomes(synthetic_run(flows=0.975))["network_fine"] == MET  # a lab check
    assert outcomes(synthetic_run(flows=0.8))["network_fine"] == NOT_MET
    assert outcomes(synthetic_run(flows=1.08))["network_fine"] == "invalid"


def test_point_lengths_table_counts_the_short_points():
    lengths = s2_analysis.point_lengths(synthetic_run(rtts=20).results)
    assert (lengths["short"] == lengths["points"]).all() and (lengths.rtts_min == 20).all()


def test_interface_counters_around_a_point_give_each_paths_bytes():
    command = s2_fs.counters_command(("lan", "wan"))
    assert command.startswith("echo @net $(cat /sys/class/net/lan/statistics/tx_bytes ")
    assert command.count("/statistics/") == 4
    stderr = "@net 100 200 1000 2000\nfio: some warning\n@net 150 260 11000 2500\n"
    assert s2_fs.counter_deltas(("lan", "wan"), stderr) == {
        "lan_tx_bytes": 50, "lan_rx_bytes": 60, "wan_tx_bytes": 10000, "wan_rx_bytes": 500}
    assert s2_fs.counter_deltas(("lan", "wan"), "@net 1 2 3 4\n") == {}  # no after line
    assert s2_fs.counter_deltas(("lan", "wan"), "@net 1 2\n@net 3 4\n") == {}  # a device gone


def test_the_clients_cpu_busy_share_is_read_around_each_point():
    """/proc/stat's cpu line before and after: busy = all but idle and iowait, of all CPUs."""
    before = "@cpu 100 0 50 800 50 0 0 0 0 0"
    after = "@cpu 260 0 130 840 70 0 0 0 0 0"  # +160 +80 busy, +40 idle, +20 iowait
    assert s2_fs.busy_pct(f"{before}\n@net 1 2\n{after}\n") == pytest.approx(80.0)
    assert s2_fs.busy_pct(before) is None and s2_fs.busy_pct(f"{before}\n{before}") is None
    assert s2_fs.CPU_COMMAND.startswith("echo @cpu ") and "/proc/stat" in s2_fs.CPU_COMMAND


def test_the_parallel_fs_ceiling_is_written_on_its_uncapped_volume_over_the_lan(monkeypatch):
    """Each tuned repetition writes the second volume (the uncapped disk) over the LAN at the
    LAN's task counts and one task per block size, sized by the LAN wire, files removed;
    each row carries the same repetition's capped-disk write and the line's goodput."""
    import contextlib

    from harness.studies.order import MeasuringOrder

    params = s2.Params.resolve(profile="verdict")
    assert s2_measure.ceiling_points(params) == [(1, 1024), (3, 1024), (1, 256), (1, 4096)]
    assert s2_measure.ceiling_points(s2.Params.resolve(profile="quick")) == [(1, 1024)]
    mounts, points = [], []

    @contextlib.contextmanager
    def mounted(session, client, fs, server_ip, conf, volume=""):
        mounts.append((fs, server_ip, volume))
        yield "/run/s2-s2free-198-18-2-1"

    def fio(session, node, directory, rw, n, block, size, name, cold, others, clear=False,
            interfaces=None, write_only=False):
        points.append((directory, rw, n, block, size, clear, write_only, sorted(interfaces)))
        return {"mbyte_s": 8.3, "seconds": 10.0, "bytes": size * n, "process_s": 11.0,
                "lan_tx_bytes": size * n, "client_busy_pct": 97.0}

    monkeypatch.setattr(s2_fs, "mounted", mounted)
    monkeypatch.setattr(s2_fs, "fio", fio)
    session = fake_session(0.1, lan_mbit=240.0)
    bed = SimpleNamespace(node=lambda n: n, device=lambda n, path: f"{n}-{path}",
                          address=lambda n, path: s2.ADDRESSES[(n, path)].split("/")[0])
    disk = [{"kind": "disk", "fs": "pfs", "rw": "write", "repetition": 2, "mbyte_s": 19.1},
            {"kind": "disk", "fs": "pfs", "rw": "write", "repetition": 1, "mbyte_s": 99.0}]
    conf = {"pfs": {"volume": "s2vol", "free_volume": "s2free", "brick_host": "198.18.2.1"}}
    rows = s2_measure.measure_ceiling(session, bed, params, conf, MeasuringOrder(1), 2, disk)
    assert mounts == [("pfs", "198.18.2.1", "s2free")]
    assert sorted((n, block // 1024) for _d, _rw, n, block, *_ in points) == [
        (1, 256), (1, 1024), (1, 4096), (3, 1024)]
    assert all(rw == "write" and clear and only for _d, rw, _n, _b, _s, clear, only, _i in points)
    rtt = 4.8e-3 / 0.1
    one = [p for p in points if p[2] == 1 and p[3] == 1 << 20][0]
    assert one[4] == pytest.approx(50 * rtt * 30e6, rel=0.01)  # 50 RTTs at the LAN's 30 MB/s
    assert {r["kind"] for r in rows} == {"ceiling"} and len(rows) == 4
    assert all(r["disk_write_mbyte_s"] == 19.1 for r in rows)  # this repetition's disk
    line = 1000 * 0.1 * 1448 / 1514 / 8
    assert all(r["line_mbyte_s"] == pytest.approx(line) for r in rows)
    assert all(r["path_share"] == 1.0 and r["client_busy_pct"] == 97.0 for r in rows)
    # a user's machines (nothing served) and runs without the LAN get none
    assert s2_measure.measure_ceiling(session, bed, params, {"pfs": {"existing": True}},
                                      MeasuringOrder(1), 1, disk) == []


def test_the_server_gets_an_uncapped_disk_for_the_ceiling():
    disks = {d.name: d for d in s2.topology(s2.Params.resolve()).node("server").disks}
    assert disks["pfs-free"].write_mbyte_s is None and disks["pfs-free"].read_mbyte_s is None
    assert disks["pfs"].write_mbyte_s == s2_lab.PFS_DISK_MBYTE_S


def test_path_share_is_what_crossed_the_points_own_wire():
    write = {"bytes": 1000, "wan_tx_bytes": 1040, "wan_rx_bytes": 30, "lan_tx_bytes": 2}
    assert s2.path_share(write, "wan", "write") == {"path_bytes": 1040, "path_share": 1.04}
    read = {"bytes": 1000, "lan_rx_bytes": 5, "wan_rx_bytes": 1030}
    assert s2.path_share(read, "lan", "read")["path_share"] == 0.005  # it went over the WAN
    assert s2.path_share({"bytes": 1000}, "wan", "write") == {}


def test_the_on_path_check_fails_a_run_whose_points_took_the_other_wire():
    def run(wan_share, repetitions=3):
        rows = [dict(kind="fs", fs=fs, path=path, rw=rw, tuning="tuned", clients=1,
                     repetition=rep, mbyte_s=1.0,
                     path_share=(wan_share if (fs, path) == ("pfs", "wan") else 1.03 + rep / 1000))
                for fs in ("nfs", "pfs") for path in ("lan", "wan") for rw in ("write", "read")
                for rep in range(1, repetitions + 1)]
        return s2_analysis.on_path(pd.DataFrame(rows))
    good = run(1.04)
    assert good.outcome == MET and good.claim.source == LAB
    bad = run(0.0, repetitions=5)  # the parallel FS's "WAN" data over the LAN: the counters caught it
    assert bad.outcome == NOT_MET and "pfs write over the WAN" in bad.note
    # with 3 repetitions (24 points, a quarter of them at 0) Student t's interval, 0.58..0.97,
    # does not clear 0.95 either way: never met, and the lowest point is named
    few = run(0.0)
    assert few.outcome == INCONCLUSIVE and few.estimate.n == 24 and "pfs write over the WAN" in few.note
    assert s2_analysis.on_path(pd.DataFrame([{"kind": "fs"}])).outcome == NOT_TESTABLE
    # a whole run without counters still has every claim, this one not testable
    assert outcomes(synthetic_run())["fs_on_path"] == NOT_TESTABLE


# -- registration (the quotes against the seed: tests/unit/test_registration.py) ----------------

def test_the_design_is_the_profiles_and_defaults_the_study_runs():
    """The registered design (s2/registration.toml) must be what the study runs, or a change
    of it would go unregistered."""
    design = s2_analysis.registered().design
    assert design["profiles"] == json.loads(json.dumps(s2.PROFILES))
    defaults = s2.Params.resolve()
    for key, value in design["fixed"].items():
        assert json.loads(json.dumps(getattr(defaults, key))) == value, key
    assert set(design["points"]) == {c.id for c in s2_analysis.registered().claims}


def test_the_changes_of_2026_11_26_are_registered():
    claim = s2_analysis.registered().claim("fs_on_path")
    assert claim.source == LAB and not claim.quote
    registration = get_study("s2").registration().to_dict()
    changed = [c["claims"] for c in registration["changes"]]
    assert ["fs_on_path"] in changed and ["network_fine"] in changed and ["era_cap"] in changed
    assert any("4607b76" in c["why"] for c in registration["changes"])
    sources = {c["id"]: c["source"] for c in registration["claims"]}
    assert sources["fs_on_path"] == LAB and sources["network_fine"] == LAB  # since 2026-11-30
    assert sources["mtu_header_bound"] == LAB
    bimodal = s2_analysis.registered().claim("gpfs_bimodal").region
    assert bimodal.low > 0 and bimodal.why != "-"


# -- point sizing ------------------------------------------------------------------------------

def fake_session(factor: float, lan_mbit: float = 116.0):
    disks = {name: {"read_mbyte_s": d.read_mbyte_s * factor,
                    "write_mbyte_s": d.write_mbyte_s * factor}
             for name, d in (("nfs", s2_lab.NFS_DISK), ("pfs", s2_lab.PFS_DISK))}
    placement = {"disks": {"server": disks},
                 "wire_ceilings_mbit": {"client:lan--server:lan": lan_mbit}}
    return SimpleNamespace(scaling=SimpleNamespace(factor=factor), placement=lambda: placement)


def test_points_are_sized_in_round_trips_whatever_the_scale():
    """A point's bytes are point_rtts round trips at its expected rate: the same at f = 0.012
    and 0.045 (RTT / f x rate x f); an NFS WAN point is no longer a 1 MiB file."""
    params = s2.Params.resolve(profile="verdict")
    sizes = [s2_measure.file_bytes(fake_session(f), params, "nfs", "wan", 1, "tuned")
             for f in (0.012, 0.045)]
    assert abs(sizes[0] - sizes[1]) <= 1 << 20
    # NFS's disk reads 110 MB/s x f, under the line: 50 RTTs of 4.8 ms at 110 MB/s
    assert sizes[1] == pytest.approx(50 * 4.8e-3 * 110e6, rel=0.05)
    assert sizes[1] / params.bdp_bytes > 40  # ~44 BDP where 3 s gave ~1.7
    # the era's buffers cap the path at 302400 B per round trip
    era = s2_measure.file_bytes(fake_session(0.045), params, "nfs", "wan", 1, "era")
    assert era == pytest.approx(50 * 302400, rel=0.1)
    # tasks share the point's bytes
    nine = s2_measure.file_bytes(fake_session(0.045), params, "nfs", "wan", 9, "tuned")
    assert nine == pytest.approx(sizes[1] / 9, abs=1 << 20)
    seconds, omit = s2_measure.iperf3_timing(fake_session(0.045), params)
    rtt = 4.8e-3 / 0.045
    assert seconds >= 50 * rtt and omit >= 10 * rtt and omit < 10 * rtt + 1


# -- regimes (issue 34 items 9, 10, 13) -----------------------------------------------------

WAN_CLAIMS = ("window_line_rate", "window_over_rtt", "era_cap", "nfs_untuned_capped",
              "nfs_tuned_disk", "nfs_tuned_write", "mtu_gain", "mtu_header_bound",
              "network_fine", "pfs_wan_full_link", "task_scaling")


def verification(server_to_client_ok: bool = True) -> list[dict]:
    def record(direction, ok, ratio):
        return {"link": "client:wan--server:wan", "direction": direction, "ok": ok,
                "rate_ok": ok, "rtt_ok": True, "rate_ratio": ratio, "attempts": [0.94, ratio],
                "configured_mbit": 23.39, "link_layer_mbit": 23.39 * ratio, "rtt_ms": 208.0,
                "expected_rtt_ms": 205.2}
    return [{"link": "client:lan--server:lan", "direction": "client->server", "ok": True,
             "rate_ok": None, "rtt_ok": None, "rtt_ms": 2.1},
            record("client->server", True, 0.99),
            record("server->client", server_to_client_ok, 0.99 if server_to_client_ok else 0.948)]


PFS_DISK_WRITE = 39.0  # the synthetic run's parallel-FS disk write, MB/s


def ceiling_rows(mbyte_s: float, reps: int = 5) -> list[dict]:
    """The parallel FS's ceiling points (its volume on the uncapped disk, over the LAN) as
    measure_ceiling writes them, each at ``mbyte_s``."""
    line_mbyte = LINE * s2_analysis.GOODPUT_PER_WIRE / 8
    return [{"kind": "ceiling", "fs": "pfs", "path": "lan", "tuning": "tuned", "repetition": rep,
             "rw": "write", "clients": n, "block_kib": bs, "mbyte_s": mbyte_s,
             "disk_write_mbyte_s": PFS_DISK_WRITE, "line_mbyte_s": line_mbyte}
            for rep in range(1, reps + 1) for n, bs in ((1, 1024), (3, 1024), (1, 256), (1, 4096))]


def in_regime_run(window_bdps: float = 1.3, verified: bool = True, ceiling: float = 60.0,
                  seek_ms: float = 8.0, **kwargs) -> RunData:
    """A run like the paper's, its WAN verified (or not) and every sampled point's window
    ``window_bdps`` of the BDP (the -w 64 KiB point below it, as asked for); the parallel
    FS's own ceiling ``ceiling`` MB/s (above its disk and the line: the paper's regime) and
    each disk's seek cost ``seek_ms``."""
    data = synthetic_run(noise=0.003, extra=ceiling_rows(ceiling), **kwargs)
    frame = data.results.copy()
    sampled = frame.kind.isin(("window", "mtu", "flows"))
    frame.loc[sampled, "window_bdps"] = window_bdps
    frame.loc[(frame.kind == "window") & (frame.window_kib == 64), "window_bdps"] = 0.1
    frame.loc[frame.kind == "disk", "seek_ms"] = seek_ms
    meta = {**data.meta, "link_verification": verification(verified)}
    return RunData(Path("."), meta, {"results": frame})


def gated(data: RunData) -> pd.DataFrame:
    """The claims table as the study gives it: gates applied (Study.claims)."""
    return get_study("s2").claims(data).set_index("claim_id")


def test_a_failed_wan_check_makes_the_claims_on_the_wan_not_testable():
    """Issue 34 item 10: the reference measured on after its server-to-client WAN check
    failed; every claim resting on the WAN is not testable, naming the direction and its
    figures, while the LAN's claims are judged."""
    passed = gated(in_regime_run())
    assert passed.loc["window_line_rate", "outcome"] == REPRODUCED
    assert passed.loc["nfs_tuned_write", "outcome"] == REPRODUCED
    failed = gated(in_regime_run(verified=False))
    for cid in WAN_CLAIMS:
        assert failed.loc[cid, "outcome"] == NOT_TESTABLE, cid
        reason = failed.loc[cid, "reason"]
        assert "links_verified failed" in reason and "server->client" in reason, cid
        assert "0.948" in reason, cid
    assert failed.loc["pfs_lan_below_disk", "outcome"] == REPRODUCED  # the LAN's check passed


def test_tuned_buffers_give_the_papers_window_under_the_guests_accounting():
    """Issue 34 item 9: 1 MB of buffer gave the paper's 2.6.9 kernel a window of 3/4 MB (1.31
    BDP); Linux 6.1 advertises half a buffer (tcp_adv_win_scale 1), so 1 MB gives 0.87 BDP.
    The tuned buffer is sized from the BDP and the guest's own accounting."""
    bdp = 1e9 / 8 * 4.8e-3
    assert pytest.approx(1.31, abs=0.005) == s2_lab.TUNED_WINDOW_BDPS
    assert 1048576 * s2_lab.window_share(1) / bdp == pytest.approx(0.87, abs=0.01)

    class Guest(CommandOnlyNode):
        def __init__(self, name, text):
            self.name, self.text = name, text

        def describe(self):
            return {"type": "local", "name": self.name}

        def _execute(self, cmd, timeout, stdin):
            return 0, self.text, ""

    linux61 = s2_measure.window_accounting((Guest("client", "6.1.0-56-amd64\n1\n"),
                                            Guest("server", "6.1.0-56-amd64\n1\n")), bdp)
    buffer = linux61["tuned_buffer"]
    assert buffer * s2_lab.window_share(1) / bdp >= s2_lab.TUNED_WINDOW_BDPS
    assert buffer == 1572864 and linux61["machines"]["client"]["tcp_adv_win_scale"] == 1
    tuned = s2_lab.tuning_settings("tuned", buffer)
    assert tuned["net.ipv4.tcp_rmem"] == "4096 87380 1572864"
    assert tuned["net.core.rmem_max"] == tuned["net.core.wmem_max"] == "1572864"
    assert s2_lab.tuning_settings("era")["net.ipv4.tcp_rmem"] == "302400 87380 302400"
    # a kernel of 6.6 or later ignores tcp_adv_win_scale: its scaling ratio starts at half
    newer = s2_measure.window_accounting((Guest("client", "6.18.0\n1\n"),), bdp)
    assert newer["machines"]["client"]["accounting"].startswith("scaling_ratio")
    # the paper's own kernel would need just its 1 MB
    assert s2_lab.tuned_buffer(bdp, 2) == 1048576


def test_a_tuned_window_below_the_bdp_gates_the_claims_that_rest_on_it():
    """Issue 34 item 9: the window each tuned point reached, read from its socket (ss), must
    cover the BDP; a point whose window stayed below it leaves its claims not testable, with
    the figures. The -w 64 KiB point is below the BDP by design and gates nothing."""
    low = gated(in_regime_run(window_bdps=0.87))
    for cid in ("window_line_rate", "nfs_tuned_disk", "pfs_wan_full_link", "mtu_gain",
                "network_fine"):
        assert low.loc[cid, "outcome"] == NOT_TESTABLE, cid
        assert "at_least failed" in low.loc[cid, "reason"], cid
        assert "0.87..0.87 against at least 1" in low.loc[cid, "reason"], cid
    assert low.loc["window_over_rtt", "outcome"] == MET  # a lab check of the shaper
    assert low.loc["era_cap", "outcome"] == REPRODUCED  # the era's window is meant to be small
    # a run that did not sample its sockets decides none of them
    unsampled = in_regime_run()
    frame = unsampled.results.drop(columns="window_bdps")
    old = gated(RunData(Path("."), unsampled.meta, {"results": frame}))
    assert old.loc["window_line_rate", "outcome"] == NOT_TESTABLE
    assert "not measured" in old.loc["window_line_rate", "reason"]


def test_a_parallel_fs_below_its_disk_or_line_leaves_its_claims_not_testable():
    """The referee of 2026-11-30: GlusterFS wrote a flat ~8.3 MB/s on the LAN, below its disk
    (18-20 MB/s) and its wire: the emulated machines, not the disk or the line, set every
    parallel-FS write, so "below the disk" and "the full link" were judged on the platform's
    ceiling. The LAN's claims need the file system's own ceiling (its volume on an uncapped
    disk) to reach the disk; the WAN's need the file system on its own disk, over the LAN, to
    reach the line (the run of 09:03Z: ceiling 15 > line 12.6 > LAN write 8.6 MB/s)."""
    line_mbyte = LINE * s2_analysis.GOODPUT_PER_WIRE / 8
    lan = ("pfs_lan_below_disk", "pfs_scales", "block_size_lan")
    wan = ("pfs_wan_full_link", "task_scaling")
    free = gated(in_regime_run())
    assert free.loc["pfs_lan_below_disk", "outcome"] == REPRODUCED
    assert free.loc["pfs_wan_full_link", "outcome"] == REPRODUCED
    low = gated(in_regime_run(ceiling=0.7 * PFS_DISK_WRITE))  # below the disk
    for cid in lan:
        assert low.loc[cid, "outcome"] == NOT_TESTABLE, cid
        assert "own write ceiling" in low.loc[cid, "reason"], cid
    assert "0.7..0.7 against at least 1" in low.loc["pfs_lan_below_disk", "reason"]
    assert "measured anyway" in low.loc["pfs_lan_below_disk", "reason"]
    assert low.loc["pfs_wan_full_link", "outcome"] == REPRODUCED  # the LAN write binds not
    # the file system on its disk over the LAN below the line: the line cannot bind its WAN write
    data = in_regime_run()
    frame = data.results.copy()
    lan_writes = (frame.kind == "fs") & (frame.fs == "pfs") & (frame.path == "lan")
    frame.loc[lan_writes, "mbyte_s"] = 0.7 * line_mbyte
    slow = gated(RunData(Path("."), data.meta, {"results": frame}))
    for cid in wan:
        assert slow.loc[cid, "outcome"] == NOT_TESTABLE, cid
        assert "on its own disk over the LAN" in slow.loc[cid, "reason"], cid
    assert "0.7..0.7 against at least 1" in slow.loc["pfs_wan_full_link", "reason"]
    # a run without ceiling points (every run before 2026-11-30) decides none of the LAN's
    old = in_regime_run()
    frame = old.results[old.results.kind != "ceiling"]
    unmeasured = gated(RunData(Path("."), old.meta, {"results": frame}))
    assert unmeasured.loc["pfs_lan_below_disk", "outcome"] == NOT_TESTABLE
    assert "not measured" in unmeasured.loc["pfs_lan_below_disk", "reason"]


def test_a_disk_without_seek_cost_gates_only_the_claims_whose_clients_interleave():
    """The seek gate reads a measurement (random minus sequential 4 KiB read latency, ms), on
    the claims whose clients' files interleave on the disk (nfs_falls, pfs_scales,
    task_scaling); one sequential stream against its disk (nfs_tuned_disk, nfs_tuned_write)
    moves no heads, so a disk without seek cost cannot be why it falls short (the second
    S2 review, 2026-11-30). task_scaling's machines per task is the paper's own 4 nodes for 9
    tasks; network_fine, five flows through the lab's own shaper, is a lab check."""
    flat = gated(in_regime_run(seek_ms=0.04))
    assert flat.loc["nfs_falls", "outcome"] == NOT_TESTABLE
    assert "seek cost in ms" in flat.loc["nfs_falls", "reason"] and "0.04" in flat.loc["nfs_falls", "reason"]
    for cid in ("nfs_tuned_disk", "nfs_tuned_write"):
        assert flat.loc[cid, "outcome"] == REPRODUCED, (cid, flat.loc[cid, "reason"])
        assert "seek" not in flat.loc[cid, "gates"], cid
    assert flat.loc["network_fine", "outcome"] == MET
    gate = [g for g in s2_analysis.registered().claim("task_scaling").gates
            if g.params.get("column") == "machines_per_task"][0]
    assert gate.params["min"] == pytest.approx(4 / 9, abs=0.005)


def test_the_jumbo_frame_gain_is_a_target_within_the_physical_cap():
    """Issue 34 item 13: 'about 10 % can be expected' (002:166) is the paper's expectation,
    not a measurement: a target of ours, its region within the +3.8 % the headers allow
    (plus the clocks' 2 %). A +10 % gain on a shaped line misses it; +3.8 % meets it."""
    claim = s2_analysis.registered().claim("mtu_gain")
    assert claim.source == "target" and not claim.is_paper
    cap = ((8948 / 9014) / (1448 / 1514) - 1) * 100
    bound = s2_analysis.registered().claim("mtu_header_bound").region
    assert claim.region.high <= bound.high == pytest.approx(cap + 2.0, abs=0.05)
    assert claim.region.low <= cap <= claim.region.high
    assert gated(in_regime_run(mtu_gain=1.10)).loc["mtu_gain", "outcome"] == NOT_MET
    assert gated(in_regime_run(mtu_gain=1 + cap / 100)).loc["mtu_gain", "outcome"] == MET


def test_the_scaled_wan_carries_the_papers_minimum_rto_in_round_trips():
    """Issue 34 item 16: 200 ms is 42 of the paper's 4.8 ms round trips but about one of the
    scaled WAN's; the lab sets rto_min 200 ms / f on each end's route to the other's WAN
    address (recorded operations) and notes what it set."""
    from harness.config.route import HostRoute

    applied, notes = [], {}
    session = SimpleNamespace(scaling=SimpleNamespace(factor=0.023), dry_run=False,
                              apply=lambda *ops: applied.extend(ops),
                              note=lambda **fields: notes.update(fields))
    bed = SimpleNamespace(node=lambda n: n, device=lambda n, path: f"{n}-{path}",
                          address=lambda n, path: s2.ADDRESSES[(n, path)].split("/")[0])
    rto_min = s2.scale_timers(session, bed, s2.Params.resolve())
    assert rto_min == round(200 / 0.023) == 8696
    assert [(op.node, op.destination, op.device, op.rto_min_ms) for op in applied] == [
        ("client", "198.18.3.1", "client-wan", 8696), ("server", "198.18.3.2", "server-wan", 8696)]
    assert all(isinstance(op, HostRoute) for op in applied)
    timers = notes["tcp_timers"]
    assert timers["paper_rto_min_rtts"] == pytest.approx(41.7, abs=0.1)
    assert timers["rto_min_rtts"] == pytest.approx(timers["paper_rto_min_rtts"], rel=1e-3)
    applied.clear()
    assert s2.scale_timers(session, bed, s2.Params.resolve(scale_rto_min=False)) == 0
    assert not applied and notes["tcp_timers"]["rto_min_rtts"] == pytest.approx(0.96, abs=0.01)
    assert s2_lab.scaled_rto_min_ms(1.0) == 0  # an unscaled WAN keeps the kernel's
    # a lab scaled very low (f = 0.0005 under a load of 18) gets TCP's largest RTO, and says so
    assert s2_lab.scaled_rto_min_ms(0.000516) == 120_000
    session.scaling.factor = 0.000516
    assert s2.scale_timers(session, bed, s2.Params.resolve()) == 120_000
    assert notes["tcp_timers"]["capped"] and applied[-1].rto_min_ms == 120_000


def test_claims_read_a_point_fixed_before_data_never_the_best_of_each_repetition():
    """Issue 34 item 15: the maximum of noisy points in each repetition, averaged, reads high.
    NFS against its disk is read at one task, the parallel FS's full link at one task and
    1 MiB blocks, the untuned NFS cap on the read: a faster point beside them changes
    nothing."""
    nfs_disk_read = 110 * FACTOR
    line_mbyte = LINE * s2_analysis.GOODPUT_PER_WIRE / 8
    faster = []
    for rep in range(1, 6):
        faster.append({"kind": "fs", "tuning": "tuned", "block_kib": 1024, "fs": "nfs",
                       "path": "wan", "repetition": rep, "rw": "read", "clients": 4,
                       "mbyte_s": 0.9 * nfs_disk_read})
        faster.append({"kind": "fs", "tuning": "tuned", "block_kib": 4096, "fs": "pfs",
                       "path": "wan", "repetition": rep, "rw": "write", "clients": 1,
                       "mbyte_s": 1.3 * line_mbyte})  # invalid, above the line: never chosen
        faster.append({"kind": "fs", "tuning": "era", "block_kib": 1024, "fs": "nfs",
                       "path": "wan", "repetition": rep, "rw": "write", "clients": 1,
                       "mbyte_s": 5.0})  # a write above the cap: the claim reads the read
    plain = s2_analysis.claims(synthetic_run(noise=0.003)).set_index("claim_id")
    got = s2_analysis.claims(synthetic_run(noise=0.003, extra=faster)).set_index("claim_id")
    for cid in ("nfs_tuned_disk", "pfs_wan_full_link", "nfs_untuned_capped"):
        assert got.loc[cid, "outcome"] == REPRODUCED, (cid, got.loc[cid, "reason"])
        assert got.loc[cid, "value"] == pytest.approx(plain.loc[cid, "value"]), cid
    assert "fixed before data" in got.loc["nfs_tuned_disk", "note"]


def test_the_verdict_profile_repeats_every_point_at_least_six_times_and_sweeps_lan_blocks():
    """Issue 34 items 14, 15: six repetitions, now across the three runs of a pooled reference
    (issue 33 item 3: runs.verdict = 3, a third of the repetitions each, recorded as a change);
    the LAN's block sweep (002:263) measured."""
    verdict = s2.Params.resolve(profile="verdict")
    reg = get_study("s2").registration()
    runs = reg.design["runs"]["verdict"]
    assert runs == 3 and verdict.repetitions == 2 and verdict.repetitions * runs >= 6
    assert reg.design["profiles"]["verdict"]["repetitions"] == verdict.repetitions
    (split,) = [c for c in reg.changes if "runs.verdict = 3" in c.what]
    assert "was 6" in split.what and "issue 33 item 3" in split.why
    assert s2.LAN in verdict.block_paths


def test_scaling_claims_need_clients_on_machines_of_their_own_and_a_disk_that_seeks():
    """Issue 34 items 11, 12: the paper's clients were machines, and its disk-bound figures
    rest on disks that seek. fio's tasks in one client VM (machines per task 1/n) and a
    throttled virtual disk whose seek cost nobody measured leave the scaling and read claims
    not testable, with those figures; clients of their own and a measured seek pass."""
    data = in_regime_run()
    frame = data.results.drop(columns="seek_ms")  # a run that did not measure it
    fs = frame.kind == "fs"
    frame.loc[fs, "machines_per_task"] = 1 / frame.loc[fs, "clients"]
    one_vm = gated(RunData(Path("."), data.meta, {"results": frame}))
    for cid in ("nfs_falls", "pfs_scales", "task_scaling"):
        reason = one_vm.loc[cid, "reason"]
        assert one_vm.loc[cid, "outcome"] == NOT_TESTABLE, cid
        assert "client machines per client task" in reason, (cid, reason)
        level = "0.44" if cid == "task_scaling" else "1"  # the paper's 4 nodes for 9 tasks
        assert (f"0.111..1 against at least {level} " in reason
                or f"0.333..1 against at least {level} " in reason), (cid, reason)
        assert "seek cost" in reason and "was not measured" in reason, cid
    # one sequential stream against its disk: no seek gate (the second S2 review, 2026-11-30)
    assert one_vm.loc["nfs_tuned_write", "outcome"] == REPRODUCED
    assert one_vm.loc["nfs_tuned_disk", "outcome"] == REPRODUCED
    frame.loc[fs, "machines_per_task"] = 1.0
    frame.loc[frame.kind == "disk", "seek_ms"] = 8.0
    own = gated(RunData(Path("."), data.meta, {"results": frame}))
    for cid in ("nfs_falls", "pfs_scales", "nfs_tuned_disk", "nfs_tuned_write"):
        assert own.loc[cid, "outcome"] == REPRODUCED, (cid, own.loc[cid, "reason"])


def test_the_papers_missing_figures_are_registered():
    """Issue 34 item 14: Fig. 2-10 (write 80 / read 105 MB/s, 002:333) and the LAN's read
    saturating at 2 clients (002:232) are registered, not testable here with the reason."""
    got = gated(in_regime_run())
    for cid, line in (("testbed2_write", "002:333"), ("testbed2_read", "002:333"),
                      ("lan_saturation_read", "002:232")):
        assert got.loc[cid, "outcome"] == NOT_TESTABLE and got.loc[cid, "seed_line"] == line
    write = s2_analysis.registered().claim("testbed2_write").region  # the margin: 80 x/÷ 1.1
    assert write.low * 1000 * 1448 / 1514 / 8 == pytest.approx(80 / 1.1, abs=0.01)
    assert write.high * 1000 * 1448 / 1514 / 8 == pytest.approx(80 * 1.1, abs=0.01)


def test_the_wans_shaper_and_its_queue_in_bdps_go_to_run_json():
    """run.json's wan_queue: the shaper the lab realised on the WAN and the queue behind its
    delay line, in full frames and BDPs (S2's WAN at f = 0.082: 2.02 BDPs); none outside a lab."""
    from harness.lab.placement import fit_to_ceiling
    from harness.topology.shaping import plan_egress

    notes = {}
    session = SimpleNamespace(dry_run=False, note=lambda **fields: notes.update(fields))
    scaled, _ = fit_to_ceiling(s2.topology(s2.Params.resolve()), None, wire_ceiling_mbit=204.15)
    wan = next(lnk for lnk in scaled.links if lnk.name == "client:wan--server:wan")
    lab = SimpleNamespace(egress_plan=lambda node, ifname: plan_egress(wan)
                          if (node, ifname) == ("client", s2.WAN) else None)
    record = s2.note_wan_queue(session, SimpleNamespace(lab=lab))
    assert notes["wan_queue"] == record and record["shaper"] == "netem"
    assert record["queue_bdps"] == pytest.approx(2.02, abs=0.02) and record["limit_packets"] == 1000
    assert s2.note_wan_queue(session, SimpleNamespace()) is None  # machines of an inventory
