"""GlusterFS daemon, volume and mount operations against fake machines: facts, plans, parsers."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CommandOnlyNode

from harness.config import glusterfs, operation
from harness.config.operation import UNKNOWN, plan
from harness.errors import CapabilityMissing, SpecError

DATA = Path(__file__).parent / "data"
# Captured in a lab VM (Debian 12, glusterfs 10.3): `gluster --mode=script volume info v1 --xml`
# of a one-brick volume just created, the same for a volume that does not exist, and
# `volume status v1 --xml` of a started volume and of one not started.
INFO = (DATA / "gluster-10.3-volume-info.xml").read_text()
STARTED = INFO.replace("<statusStr>Created</statusStr>", "<statusStr>Started</statusStr>")
NO_VOLUME = (DATA / "gluster-10.3-volume-info-missing.xml").read_text()
STATUS = (DATA / "gluster-10.3-volume-status.xml").read_text()
NOT_STARTED = (DATA / "gluster-10.3-volume-status-not-started.xml").read_text()
NOT_RUNNING = "Connection failed. Please check if gluster daemon is operational.\n"
ADDRESSES = ("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
             "2: eth0    inet 10.0.2.15/24 scope global eth0\\       valid_lft forever\n")


@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch):
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


class GlusterMachine(CommandOnlyNode):
    """A machine that answers the GlusterFS operations' probes from a few state variables."""

    def __init__(self, running=False, dirs=("ro", "ro", "missing"), info=NO_VOLUME,
                 bricks=("missing",), tools=("glusterd", "gluster", "mount.glusterfs"),
                 proc_mounts="", mountpoint="missing", fuse="loadable"):
        self.name, self.running, self.dirs, self.info = "vm1", running, dirs, info
        self.bricks, self.tools, self.proc_mounts = bricks, tools, proc_mounts
        self.mountpoint, self.fuse = mountpoint, fuse
        self.commands: list[str] = []

    def describe(self):
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        if cmd.startswith("echo @info;"):
            out = ["@info", self.info if self.running else NOT_RUNNING, "@addresses", ADDRESSES]
            out += [x for i, word in enumerate(self.bricks) for x in (f"@b{i}", word)]
            return 0, "\n".join(out) + "\n", ""
        out = ["@tools", *self.tools]
        if cmd == glusterfs._DAEMON_PROBE:
            out += ["@gsyncd", "/usr/lib/x86_64-linux-gnu/glusterfs/gsyncd",
                    "@cli", "running" if self.running else ""]
            out += [x for i, word in enumerate(self.dirs) for x in (f"@d{i}", word)]
        else:
            chain = {"loadable": "insmod /lib/modules/6.1.0-56-amd64/kernel/fs/fuse/fuse.ko ",
                     "loaded": "", "builtin": "builtin fuse"}[self.fuse]
            out += ["@mountpoint", self.mountpoint, "@mounts", self.proc_mounts,
                    "@loaded", "fuse" if self.fuse == "loaded" else "", "@builtin_fuse",
                    "@chain_fuse", chain]
        return 0, "\n".join(out) + "\n", ""


def test_glusterd_gets_writable_state_then_runs_in_the_foreground():
    changes = plan([glusterfs.GlusterDaemon(GlusterMachine())])
    gsyncd = "/usr/lib/x86_64-linux-gnu/glusterfs/gsyncd"
    assert [(c.kind, c.target, c.before) for c in changes] == [
        ("state-dir", "/var/lib/glusterd", "read-only"),
        ("state-dir", "/var/log/glusterfs", "read-only"),
        ("state-dir", "/run/gluster", None), ("gsyncd-stub", gsyncd, "geo-replication's gsyncd"),
        ("glusterd", "glusterd", None)]
    assert changes[2].command == "mkdir -m 0755 /run/gluster" and changes[2].undo_kind == "file"
    assert changes[3].command.endswith(f"mount --bind /run/harness-gsyncd-stub {gsyncd}")
    assert changes[3].undo == {"path": gsyncd}
    daemon = changes[-1]
    assert daemon.background and daemon.command == "exec glusterd -N"
    assert "gluster --mode=script pool list" in daemon.ready
    with_georep = plan([glusterfs.GlusterDaemon(GlusterMachine(), geo_replication=True)])
    assert "gsyncd-stub" not in [c.kind for c in with_georep]


def test_the_gsyncd_stub_answers_like_gsyncd(tmp_path):
    import subprocess

    stub = tmp_path / "gsyncd"
    stub.write_text(glusterfs._STUB_TEXT)
    stub.chmod(0o755)
    version = subprocess.run([str(stub), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and "gsyncd" in version.stdout.splitlines()[0]
    other = subprocess.run([str(stub), "-c", "x", "--config-set-rx", "a", "b", ".", "."],
                           capture_output=True, text=True)
    assert other.returncode == 0 and other.stdout == ""


def test_a_running_glusterd_is_left_as_found():
    changes = plan([glusterfs.GlusterDaemon(GlusterMachine(running=True))])
    assert [(c.kind, c.changed) for c in changes] == [("glusterd", False)]


def test_no_glusterd_installed():
    with pytest.raises(CapabilityMissing, match="lacks glusterd") as err:
        plan([glusterfs.GlusterDaemon(GlusterMachine(tools=("gluster",)))])
    assert "glusterfs-server" in err.value.hint


def volume(node, **kw):
    base = dict(name="v1", bricks=[("10.0.2.15", "/tmp/b1")],
                options={"performance.write-behind-window-size": "4MB"})
    return glusterfs.GlusterVolume(node, **{**base, **kw})


def test_a_volume_is_created_with_its_options_then_started():
    create, start = plan([volume(GlusterMachine(running=True))])
    assert create.command == (
        "gluster --mode=script volume create v1 10.0.2.15:/tmp/b1 force && "
        "gluster --mode=script volume set v1 performance.write-behind-window-size 4MB")
    assert create.undo_kind == "gluster-volume" and create.undo == {
        "name": "v1", "bricks": ["/tmp/b1"]}
    assert start.command == "gluster --mode=script volume start v1"
    assert start.undo == {"name": "v1"}


def test_the_same_started_volume_is_as_asked_another_is_refused():
    machine = GlusterMachine(running=True, info=STARTED, bricks=("rw",))
    (change,) = plan([volume(machine, options={})])
    assert not change.changed
    with pytest.raises(SpecError, match="already has gluster volume v1"):
        plan([volume(machine, bricks=[("10.0.2.15", "/tmp/other")])])
    with pytest.raises(SpecError, match=r"already has gluster volume v1 \(Created"):
        plan([volume(GlusterMachine(running=True, info=INFO), options={})])


def test_a_volume_needs_glusterd_local_bricks_and_new_brick_paths():
    with pytest.raises(SpecError, match="apply GlusterDaemon"):
        plan([volume(GlusterMachine(running=False))])
    with pytest.raises(SpecError, match="not an address of vm1"):
        plan([volume(GlusterMachine(running=True), bricks=[("10.9.9.9", "/tmp/b")])])
    with pytest.raises(SpecError, match="exists already"):
        plan([volume(GlusterMachine(running=True, bricks=("rw",)))])
    with pytest.raises(SpecError, match="parent directory"):
        plan([volume(GlusterMachine(running=True, bricks=("noparent",)))])


@pytest.mark.parametrize("kw, words", [
    ({"name": "v 1"}, "volume name"),
    ({"name": ""}, "volume name"),
    ({"bricks": []}, "no bricks"),
    ({"bricks": [("10.0.2.15",)]}, "pair"),
    ({"bricks": [("127.0.0.1;x", "/b")]}, "brick host"),
    ({"bricks": [("10.0.2.15", "b")]}, "brick path"),
    ({"bricks": [("10.0.2.15", "/b"), ("10.0.2.15", "/b")]}, "twice"),
    ({"options": {"a b": "1"}}, "option"),
    ({"options": {"performance.cache-size": "1 GB"}}, "option"),
])
def test_bad_volumes_are_refused_before_any_fact(kw, words):
    machine = GlusterMachine(running=True)
    with pytest.raises(SpecError, match=words):
        plan([volume(machine, **kw)])
    assert machine.commands == []


def test_volume_info_and_status_are_read_from_the_cli_xml():
    info = glusterfs.parse_volume_info(INFO)
    assert (info.name, info.status, info.bricks) == ("v1", "Created", ("10.0.2.15:/tmp/b1",))
    assert info.options == {"storage.fips-mode-rchecksum": "on",
                            "transport.address-family": "inet", "nfs.disable": "on"}
    assert glusterfs.parse_volume_info(NO_VOLUME) is None
    with pytest.raises(SpecError, match="apply GlusterDaemon"):
        glusterfs.parse_volume_info(NOT_RUNNING)
    assert glusterfs.parse_status_pids(STATUS) == (263,)
    assert glusterfs.parse_status_pids(NOT_STARTED) == ()
    assert glusterfs.parse_status_pids(NOT_RUNNING) == ()


def gmount(node, **kw):
    base = dict(server="10.0.2.15", volume="v1", mountpoint="/mnt/g")
    return glusterfs.GlusterMount(node, **{**base, **kw})


def test_a_glusterfs_mount_loads_fuse_makes_its_mountpoint_and_mounts():
    module, point, mnt = plan([gmount(GlusterMachine())])
    assert module.command == "modprobe fuse" and module.undo == {"modules": ["fuse"]}
    assert point.command == "mkdir /mnt/g"
    assert mnt.command == "mount -t glusterfs 10.0.2.15:/v1 /mnt/g"
    assert mnt.undo_kind == "glusterfs-unmount" and mnt.undo == {
        "path": "/mnt/g", "fstype": "fuse.glusterfs", "source": "10.0.2.15:/v1", "made": True}
    module, _p, mnt = plan([gmount(GlusterMachine(fuse="builtin"), options=("log-level=WARNING",))])
    assert not module.changed and "-o log-level=WARNING" in mnt.command


def test_a_busy_mountpoint_is_refused_the_same_mount_is_as_asked():
    with pytest.raises(SpecError, match="in use"):
        plan([gmount(GlusterMachine(proc_mounts="tmpfs /mnt/g tmpfs rw 0 0",
                                    mountpoint="rw"))])
    (same,) = plan([gmount(GlusterMachine(
        proc_mounts="10.0.2.15:/v1 /mnt/g fuse.glusterfs rw,relatime 0 0", mountpoint="rw"))])
    assert not same.changed


def test_a_dry_run_of_a_machine_not_built():
    changes = plan([glusterfs.GlusterDaemon(GlusterMachine()), gmount(GlusterMachine())],
                   exists=lambda n: False)
    assert all(c.changed for c in changes) and changes[0].before is UNKNOWN
