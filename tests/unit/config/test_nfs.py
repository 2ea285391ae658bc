"""NFSv4 server, export and mount operations against fake machines: facts, plans, parsers, undo."""

from __future__ import annotations

import shlex

import pytest
from conftest import CommandOnlyNode

from harness.config import mounts, nfs, operation
from harness.config.kmod import KernelModules
from harness.config.operation import UNKNOWN, plan
from harness.errors import CapabilityMissing, SpecError
from harness.nodes.netns import NamespaceNode

# `modprobe --show-depends nfsd` on Debian 12's 6.1.0-56-amd64 (lines end in a space).
NFSD_CHAIN = "".join(f"insmod /lib/modules/6.1.0-56-amd64/kernel/{p}.ko \n" for p in (
    "net/sunrpc/sunrpc", "fs/nfs_common/grace", "fs/lockd/lockd", "fs/nfs_common/nfs_acl",
    "lib/oid_registry", "net/sunrpc/auth_gss/auth_rpcgss")).replace(
    "auth_rpcgss.ko \n", "auth_rpcgss.ko \nbuiltin md5\n") + \
    "insmod /lib/modules/6.1.0-56-amd64/kernel/fs/nfsd/nfsd.ko \n"  # as captured: md5 built in
NFSV4_CHAIN = "".join(f"insmod /lib/modules/6.1.0-56-amd64/kernel/{p}.ko \n" for p in (
    "net/sunrpc/sunrpc", "fs/nfs_common/grace", "fs/lockd/lockd", "fs/netfs/netfs",
    "fs/fscache/fscache", "fs/nfs/nfs", "fs/nfs/nfsv4"))
KRB5_CHAIN = "".join(f"insmod /lib/modules/6.1.0-56-amd64/kernel/{p}.ko \n" for p in (
    "net/sunrpc/sunrpc", "lib/oid_registry", "net/sunrpc/auth_gss/auth_rpcgss",
    "net/sunrpc/auth_gss/rpcsec_gss_krb5"))
# The lab VM's: its root is the host's, over 9p
PROC_MOUNTS = """\
/dev/root / 9p ro,relatime,cache=loose,access=client,msize=512000,trans=virtio 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /run tmpfs rw,nosuid,nodev,mode=755 0 0
tmpfs /tmp tmpfs rw,nosuid,nodev 0 0
"""
# `exportfs -v` of nfs-utils 2.6.2: a short path and its client on one line, a long one wraps.
EXPORTFS_V = """\
/tmp/exp      \t10.0.2.15(sync,wdelay,hide,no_subtree_check,fsid=1,sec=sys,rw,secure,no_root_squash,no_all_squash)
/srv/a/much/longer/export/path
\t\t10.0.0.0/8(async,wdelay,hide,no_subtree_check,sec=sys,ro,secure,root_squash,no_all_squash)
/srv/a/much/longer/export/path
\t\t*(sync,wdelay,hide,no_subtree_check,sec=sys,ro,secure,root_squash,no_all_squash)
"""


@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch):
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


class NfsMachine(CommandOnlyNode):
    """A machine that answers the NFS operations' probes from a few state variables."""

    def __init__(self, name="vm1", threads=0, mountd=False, state="ro", proc_mounts=PROC_MOUNTS,
                 loaded=(), tools=("rpc.nfsd", "rpc.mountd", "exportfs", "mount.nfs4"),
                 exports="", dirs=None):
        self.name, self.threads, self.mountd, self.state = name, threads, mountd, state
        self.proc_mounts, self.loaded, self.tools, self.exports = proc_mounts, loaded, tools, exports
        self.dirs = dirs or {}
        self.commands: list[str] = []

    def describe(self):
        return {"type": "local", "name": self.name}

    def _dir(self, name):
        return self.dirs.get(name, "missing")

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        out = ["@tools", *self.tools]
        if cmd == nfs._SERVER_PROBE:
            out += ["@threads", str(self.threads), "@mountd", "812" if self.mountd else "",
                    "@state", self.state]
        else:
            for name in ("path", "state", "mountpoint"):
                if f"echo @{name};" in cmd:
                    out += [f"@{name}", self.state if name == "state" else self._dir(name)]
        if "echo @exports" in cmd:
            out += ["@exports", self.exports]
        out += ["@mounts", self.proc_mounts, "@loaded", *self.loaded]
        for module, chain in (("nfsd", NFSD_CHAIN), ("nfsv4", NFSV4_CHAIN),
                              ("rpcsec_gss_krb5", KRB5_CHAIN)):
            if f"show-depends {module} " in cmd + " ":
                out += [f"@builtin_{module}", f"@chain_{module}", chain]
        return 0, "\n".join(out) + "\n", ""


def kinds(changes):
    return [(c.kind, c.changed) for c in changes]


def test_a_fresh_lab_vm_gets_every_piece_of_the_server():
    vm = NfsMachine()
    changes = plan([nfs.NfsServer(vm, threads=4)])
    assert kinds(changes) == [("state-dir", True), ("kernel-module", True), ("mount", True),
                              ("nfs-mountd", True), ("nfs-server", True)]
    state, module, nfsd_fs, mountd, threads = changes
    assert state.before == "read-only" and "mount -t tmpfs -o mode=0755 harness-state " \
        "/var/lib/nfs" in state.command and state.undo == {
            "path": "/var/lib/nfs", "fstype": "tmpfs", "source": "harness-state"}
    assert module.command == "modprobe nfsd" and module.undo["modules"] == [
        "sunrpc", "grace", "lockd", "nfs_acl", "oid_registry", "auth_rpcgss", "nfsd"]
    assert nfsd_fs.command == "mount -t nfsd nfsd /proc/fs/nfsd"
    assert nfsd_fs.undo == {"path": "/proc/fs/nfsd", "fstype": "nfsd", "source": "nfsd"}
    assert mountd.background and mountd.command == "exec rpc.mountd -F -N 2 -N 3"
    assert "nfsd.export" in mountd.ready
    assert threads.command.startswith("rpc.nfsd -N 3 4 && ") and "v4_end_grace" in \
        threads.command and threads.undo_kind == "nfsd-threads"
    assert len(vm.commands) == 1  # every fact in one probe


def test_what_is_there_already_is_kept_and_not_undone():
    vm = NfsMachine(state="rw", mountd=True, loaded=["nfsd"],
                    proc_mounts=PROC_MOUNTS + "nfsd /proc/fs/nfsd nfsd rw,relatime 0 0\n")
    changes = plan([nfs.NfsServer(vm, end_grace=False)])
    assert kinds(changes) == [("state-dir", False), ("kernel-module", False), ("mount", False),
                              ("nfs-mountd", False), ("nfs-server", True)]
    assert changes[-1].command == "rpc.nfsd -N 3 8"


def test_a_running_server_is_left_as_found():
    changes = plan([nfs.NfsServer(NfsMachine(threads=16, mountd=True))])
    assert [(c.kind, c.before, c.changed) for c in changes] == [
        ("nfs-server", "running (16 threads)", False)]


@pytest.mark.parametrize("threads", [0, -1, 5000, True, "8"])
def test_bad_thread_counts_are_refused_before_any_fact(threads):
    vm = NfsMachine()
    with pytest.raises(SpecError, match="threads"):
        plan([nfs.NfsServer(vm, threads=threads)])
    assert vm.commands == []


def test_a_namespace_cannot_be_the_server():
    ns = NamespaceNode("srv", NfsMachine())
    with pytest.raises(SpecError, match="network namespace"):
        plan([nfs.NfsServer(ns)])


def test_missing_programs_or_module_say_how_to_get_them():
    with pytest.raises(CapabilityMissing, match="lacks rpc.mountd") as err:
        plan([nfs.NfsServer(NfsMachine(tools=("rpc.nfsd", "exportfs")))])
    assert "nfs-kernel-server" in err.value.hint
    vm = NfsMachine()
    vm._execute = lambda cmd, t, s: (0, "@tools\nrpc.nfsd\nrpc.mountd\nexportfs\n@threads\n"
                                     "@mountd\n@state\nro\n@mounts\n@loaded\n@builtin_nfsd\n"
                                     "@chain_nfsd\nmodprobe: FATAL: Module nfsd not found\n", "")
    with pytest.raises(CapabilityMissing, match="no nfsd module"):
        plan([nfs.NfsServer(vm)])


def test_a_dry_run_of_a_vm_not_built_plans_everything():
    changes = plan([nfs.NfsServer(NfsMachine())], exists=lambda n: False)
    assert all(c.changed for c in changes) and changes[0].before is UNKNOWN


def test_parse_exportfs_v():
    assert nfs.parse_exportfs_v(EXPORTFS_V) == (
        nfs.Export("/tmp/exp", "10.0.2.15", ("sync", "wdelay", "hide", "no_subtree_check",
                                             "fsid=1", "sec=sys", "rw", "secure",
                                             "no_root_squash", "no_all_squash")),
        nfs.Export("/srv/a/much/longer/export/path", "10.0.0.0/8",
                   ("async", "wdelay", "hide", "no_subtree_check", "sec=sys", "ro", "secure",
                    "root_squash", "no_all_squash")),
        nfs.Export("/srv/a/much/longer/export/path", "*",
                   ("sync", "wdelay", "hide", "no_subtree_check", "sec=sys", "ro", "secure",
                    "root_squash", "no_all_squash")))
    assert nfs.parse_exportfs_v("") == ()


EXT4_ROOT = "/dev/sda1 / ext4 rw,relatime 0 0\n"


def export(vm, **kw):
    base = dict(path="/tmp/exp", client="10.0.2.15", options=("rw", "sync", "fsid=1"))
    return nfs.NfsExport(vm, **{**base, **kw})


def test_an_export_under_a_root_nfsd_cannot_export_must_be_the_pseudo_root():
    vm = NfsMachine(state="rw", dirs={"path": "rw"})  # the lab VM: / is 9p
    with pytest.raises(SpecError, match="root file system is 9p") as err:
        plan([export(vm)])
    assert "fsid=0" in err.value.hint and "SERVER:/" in err.value.hint
    (change,) = plan([export(vm, options=("rw", "fsid=0"))])
    assert change.command == "exportfs -o rw,fsid=0 10.0.2.15:/tmp/exp"


def test_an_export_is_exportfs_o_and_undone_by_exportfs_u():
    vm = NfsMachine(state="rw", dirs={"path": "rw"}, proc_mounts=EXT4_ROOT)
    (change,) = plan([export(vm)])
    assert change.command == "exportfs -o rw,sync,fsid=1 10.0.2.15:/tmp/exp"
    assert change.undo == {"spec": "10.0.2.15:/tmp/exp"} and change.before is None


def test_an_identical_export_is_as_asked_and_a_different_one_refused():
    vm = NfsMachine(state="rw", dirs={"path": "rw"}, exports=EXPORTFS_V, proc_mounts=EXT4_ROOT)
    (change,) = plan([export(vm)])
    assert not change.changed and change.before == "rw,sync,fsid=1"
    with pytest.raises(SpecError, match="already exports 10.0.2.15:/tmp/exp with") as err:
        plan([export(vm, options=("rw", "async", "fsid=1"))])
    assert "exportfs -u 10.0.2.15:/tmp/exp" in err.value.hint


def test_an_export_needs_its_directory_and_the_server_state_first():
    with pytest.raises(SpecError, match="not a directory"):
        plan([export(NfsMachine(state="rw", proc_mounts=EXT4_ROOT))])
    with pytest.raises(SpecError, match="apply NfsServer on this node first"):
        plan([export(NfsMachine(state="ro", dirs={"path": "rw"}, proc_mounts=EXT4_ROOT))])


@pytest.mark.parametrize("kw, words", [
    ({"path": "relative"}, "plain absolute path"),
    ({"path": "/tmp/../etc"}, "plain absolute path"),
    ({"path": "/tmp/a b"}, "plain absolute path"),
    ({"path": "/"}, "plain absolute path"),
    ({"client": "10.0.2.15 *(rw)"}, "NFS client"),
    ({"client": "a;reboot"}, "NFS client"),
    ({"options": ("rw,insecure",)}, "not valid"),
    ({"options": "rw"}, "list of words"),
])
def test_bad_exports_are_refused_before_any_fact(kw, words):
    vm = NfsMachine()
    with pytest.raises(SpecError, match=words):
        plan([export(vm, **kw)])
    assert vm.commands == []


def mount(vm, **kw):
    base = dict(server="10.0.2.15", export_path="/tmp/exp", mountpoint="/mnt/nfs")
    return nfs.NfsMount(vm, **{**base, **kw})


def test_a_mount_loads_nfsv4_makes_its_mountpoint_and_mounts():
    vm = NfsMachine(loaded=["sunrpc", "grace", "lockd"])
    changes = plan([mount(vm, options=("vers=4.2", "rsize=1048576"))])
    assert kinds(changes) == [("kernel-module", True), ("kernel-module", True),
                              ("mountpoint", True), ("nfs-mount", True)]
    module, krb5, point, mnt = changes
    assert module.undo == {"modules": ["netfs", "fscache", "nfs", "nfsv4"]}
    assert krb5.undo == {"modules": ["oid_registry", "auth_rpcgss", "rpcsec_gss_krb5"]}
    assert point.command == "mkdir /mnt/nfs" and point.undo == {"path": "/mnt/nfs", "made": True}
    assert mnt.command == ("mount -t nfs4 -o vers=4.2,rsize=1048576 10.0.2.15:/tmp/exp "
                           "/mnt/nfs")
    assert mnt.undo == {"path": "/mnt/nfs", "fstype": "nfs4", "source": "10.0.2.15:/tmp/exp",
                        "made": True}
    ipv6 = plan([mount(vm, server="fd00::1")])[-1]
    assert "[fd00::1]:/tmp/exp" in ipv6.command


def test_the_clients_modules_loaded_once_leave_each_mount_nothing_to_load():
    vm = NfsMachine(loaded=["sunrpc", "grace", "lockd"])
    first, krb5 = plan([KernelModules(vm, nfs.NfsMount.modules, nfs.CLIENT_HINT)])
    assert (first.kind, first.changed, first.command) == ("kernel-module", True, "modprobe nfsv4")
    assert first.undo == {"modules": ["netfs", "fscache", "nfs", "nfsv4"]}
    assert krb5.undo == {"modules": ["oid_registry", "auth_rpcgss", "rpcsec_gss_krb5"]}
    vm.loaded = ["sunrpc", "grace", "lockd", "netfs", "fscache", "nfs", "nfsv4",
                 "oid_registry", "auth_rpcgss", "rpcsec_gss_krb5"]
    assert kinds(plan([mount(vm)])) == [("kernel-module", False), ("kernel-module", False),
                                        ("mountpoint", True), ("nfs-mount", True)]
    with pytest.raises(CapabilityMissing, match="no nosuchfs module"):
        plan([KernelModules(vm, ("nosuchfs",), "install it")])


def test_a_mountpoint_in_use_is_refused_and_the_same_mount_is_as_asked():
    busy = PROC_MOUNTS + "tmpfs /mnt/nfs tmpfs rw 0 0\n"
    with pytest.raises(SpecError, match=r"/mnt/nfs is in use: tmpfs \(tmpfs\)"):
        plan([mount(NfsMachine(proc_mounts=busy, dirs={"mountpoint": "rw"}))])
    same = PROC_MOUNTS + "10.0.2.15:/tmp/exp /mnt/nfs nfs4 rw,vers=4.2 0 0\n"
    (change,) = plan([mount(NfsMachine(proc_mounts=same, dirs={"mountpoint": "rw"}))])
    assert not change.changed


def test_an_existing_mountpoint_and_a_file_are_refused():
    """The harness mounts only on a folder it makes (issue 37): its undo may then remove
    it, and a mount record never names a folder that was there before."""
    vm = NfsMachine(dirs={"mountpoint": "rw"})
    with pytest.raises(SpecError, match="mountpoint /mnt/nfs exists already"):
        plan([mount(vm)])
    assert len(vm.commands) == 1  # the probe alone: nothing loaded, made or mounted
    with pytest.raises(SpecError, match="not a directory"):
        plan([mount(NfsMachine(dirs={"mountpoint": "notdir"}))])


@pytest.mark.parametrize("kw, words", [
    ({"server": "10.0.2.15;id"}, "NFS server"),
    ({"mountpoint": "mnt"}, "mountpoint"),
    ({"options": ("vers=3",)}, "NFSv2/v3"),
    ({"options": ("nfsvers=2",)}, "NFSv2/v3"),
    ({"options": ("ro,nolock",)}, "not valid"),
])
def test_bad_mounts_are_refused_before_any_fact(kw, words):
    vm = NfsMachine()
    with pytest.raises(SpecError, match=words):
        plan([mount(vm, **kw)])
    assert vm.commands == []


def test_proc_mounts_are_parsed_with_their_escapes_and_the_last_mount_wins():
    parsed = mounts.parse_mounts(PROC_MOUNTS + "tmpfs /mnt/a\\040b tmpfs rw 0 0\n"
                                 "other /tmp ext4 rw 0 0\n")
    assert parsed[-2].target == "/mnt/a b"
    assert mounts.mounted_at(parsed, "/tmp").fstype == "ext4"
    assert mounts.mounted_at(parsed, "/nowhere") is None


class ShellNode(CommandOnlyNode):
    """Runs the undo scripts for real in a throw-away directory (``sh -c``), with
    /proc/mounts replaced by a file and umount/rmdir recorded instead of done."""

    def __init__(self, tmp_path, proc_mounts):
        self.name, self.tmp = "vm1", tmp_path
        (tmp_path / "mounts").write_text(proc_mounts)
        self.commands: list[str] = []

    def describe(self):
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        import subprocess

        self.commands.append(cmd)
        cmd = cmd.replace("/proc/mounts", shlex.quote(str(self.tmp / "mounts")))
        cmd = cmd.replace("umount ", "echo UMOUNT ")
        out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30)
        return out.returncode, out.stdout, out.stderr


@pytest.mark.parametrize("table, outcome", [
    ("harness-state /var/lib/nfs tmpfs rw 0 0\n", "UMOUNT /var/lib/nfs"),
    ("", ""),  # gone already: nothing to do
    ("harness-state /var/lib/nfs tmpfs rw 0 0\nother /var/lib/nfs ext4 rw 0 0\n", "hidden"),
])
def test_the_unmount_undo_removes_only_its_own_visible_mount(tmp_path, table, outcome):
    node = ShellNode(tmp_path, PROC_MOUNTS + table)
    script = mounts.unmount_script("/var/lib/nfs", "tmpfs", "harness-state")
    res = node.run(script, check=False)
    assert outcome in res.stdout + res.stderr
    assert res.ok == (outcome != "hidden")
