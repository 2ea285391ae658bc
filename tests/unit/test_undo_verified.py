"""An undo is verified, never assumed (issue 40): every undo handler looks after it acts.

The stand-in is a real shell whose tools fail and leave their object there (``rmdir``
answers EBUSY, ``ip link delete`` is refused, ``rmmod`` finds the module in use, ...),
with the kernel's files (/sys/fs/cgroup, /proc/modules, /proc/mounts, /run/netns,
/proc/fs/nfsd) in a temp folder. Each handler must then raise
:class:`~harness.journal.undo_left.UndoLeft` naming what is still there; before issue 40
each ran its command behind ``|| true`` (or ``check=False``) and returned as if it were
done. "Already gone" stays success, a dependency module someone else uses a note.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import alive

# Kinds in other modules: imported so their handlers are registered.
import harness.config.bridge  # noqa: F401, E402
import harness.config.glusterfs  # noqa: F401, E402
import harness.config.kmod  # noqa: F401, E402
import harness.config.labdisk  # noqa: F401, E402
import harness.config.mounts  # noqa: F401, E402
import harness.config.nat  # noqa: F401, E402
import harness.config.nfs  # noqa: F401, E402
import harness.config.rdma  # noqa: F401, E402
import harness.config.tipc  # noqa: F401, E402
import harness.net.backend  # noqa: F401, E402
import harness.vm.checks  # noqa: F401, E402
from harness.config import cgroup, interface, mptcp, sysctl
from harness.config import cpu as cpu_config
from harness.journal import undo_left
from harness.journal.journal import _HANDLERS, Journal, UndoFailed, undo_handler
from harness.journal.undo_checks import only_roots, recorded_here
from harness.journal.undo_left import UndoLeft
from harness.nodes import LocalNode
from harness.nodes.procfs import process_start_ticks

KERNEL_FILES = ("/sys/fs/cgroup", "/proc/modules", "/proc/mounts", "/run/netns", "/proc/fs/nfsd",
                "/run/harness-gsyncd-stub")
GSYNCD = "/usr/lib/x86_64-linux-gnu/glusterfs/gsyncd"
CG = "/sys/fs/cgroup/harness-sender-cpu0.01-0123abcd"


class StandIn(LocalNode):
    """This machine's shell with ``tools`` (name -> script body) first on PATH and the
    kernel's files under ``root``: a machine where those tools leave their objects there."""

    def __init__(self, root: Path, tools: dict[str, str]):
        super().__init__("standin")
        self.root, self.commands = root, []
        (root / "bin").mkdir(parents=True, exist_ok=True)
        for name, body in tools.items():
            tool = root / "bin" / name
            tool.write_text(f"#!/bin/sh\n{body}\n")
            tool.chmod(0o755)

    def kernel(self, path: str) -> Path:
        """Where the stand-in keeps the kernel's ``path``."""
        return self.root / "kernel" / path.lstrip("/")

    def _argv(self, cmd: str) -> list[str]:
        for path in KERNEL_FILES:
            cmd = cmd.replace(path, str(self.kernel(path)))
        self.commands.append(cmd)
        return ["env", f"PATH={self.root / 'bin'}:{os.environ['PATH']}", "sh", "-c", cmd]


def busy(tool: str, message: str) -> str:
    """A tool that refuses whatever it is asked to change."""
    return f'echo "{tool}: {message}" >&2; exit 1'


def seed(node: StandIn, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = node.kernel(path) if path.startswith(KERNEL_FILES) else Path(path)
        if text is None:
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


IP_STUBBORN = r"""
case "$*" in
  *"link show"*|*"-o link show"*) echo "5: vx0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 state UP"; exit 0;;
  *"addr show"*) echo "5: vx0    inet 10.0.0.1/24 scope global vx0"; exit 0;;
  *"route show"*) echo "10.9.0.0/24 via 10.0.0.2 dev vx0"; exit 0;;
  *"rule show"*) printf '0:\tfrom all lookup local\n100:\tfrom 10.0.0.1 lookup 7\n'; exit 0;;
  *) echo "RTNETLINK answers: Device or resource busy" >&2; exit 2;;
esac"""

#: kind -> (record data, the stand-in's tools, its kernel files, a word the failure names)
STUBBORN = {
    "cgroup": ({"path": CG}, {"rmdir": busy("rmdir", "Device or resource busy")},
               {CG: None, CG + "/cgroup.procs": "4242\n"}, "cgroup"),
    "cgroup-controller": (
        {"root": "/sys/fs/cgroup", "controller": "cpu"}, {},
        {"/sys/fs/cgroup/cgroup.subtree_control": "cpu memory\n"}, "controller"),
    "tipc-bearer": (
        {"media": "eth", "dev": "eth1", "identity": "1"},
        {"tipc": 'case "$*" in "bearer list") echo eth:eth1;; *) echo "error: Device busy" >&2;'
                 ' exit 1;; esac'}, {}, "TIPC bearer eth:eth1"),
    "tipc_bearer": (
        {"media": "eth", "dev": "eth1"},
        {"tipc": 'case "$*" in "bearer list") echo eth:eth1;; *) exit 1;; esac'}, {},
        "TIPC bearer eth:eth1"),
    "netns": ({"name": "harness-h1"}, {"ip": IP_STUBBORN}, {"/run/netns/harness-h1": ""},
              "namespace harness-h1"),
    "nic": ({"ifname": "vx0"}, {"ip": IP_STUBBORN}, {}, "NIC vx0"),
    "root-nic": ({"ifname": "vx0", "name": "vx0", "mtu": 1500}, {"ip": IP_STUBBORN}, {},
                 "NIC vx0"),
    "veth": ({"ifname": "vx0"}, {"ip": IP_STUBBORN}, {}, "link vx0"),
    "qdisc": ({"ifname": "vx0"}, {"ip": IP_STUBBORN, "tc": 'case "$*" in *show*) echo '
              '"qdisc htb 1: root refcnt 2 r2q 10 default 0x10";; *) exit 2;; esac'}, {},
              "qdisc on vx0"),
    "route": ({"destination": "10.9.0.0/24"}, {"ip": IP_STUBBORN}, {}, "route 10.9.0.0/24"),
    "rule": ({"source": "10.0.0.1/32", "table": 7, "priority": 100}, {"ip": IP_STUBBORN}, {},
             "rule from 10.0.0.1/32"),
    # the module asked for is gone; the dependency the run loaded, used by nothing, stays
    "kernel-module": (
        {"modules": ["udp_tunnel", "tipc"]}, {"rmmod": busy("rmmod", "ERROR: Module is in use")},
        {"/proc/modules": "udp_tunnel 32 0 - Live 0x0\n"}, "udp_tunnel"),
    "unmount": (
        {"path": "/tmp/harness-mnt", "fstype": "nfs4", "source": "10.0.0.1:/x", "made": True},
        {"umount": busy("umount", "/tmp/harness-mnt: target is busy.")},
        {"/proc/mounts": "10.0.0.1:/x /tmp/harness-mnt nfs4 rw 0 0\n"}, "nfs4 mount"),
    "lab-disk": (
        {"mountpoint": "/tmp/harness-disk", "made": True},
        {"umount": busy("umount", "target is busy")},
        {"/proc/mounts": "/dev/vdb /tmp/harness-disk ext4 rw 0 0\n"}, "lab disk mount"),
    "gsyncd-stub": ({"path": GSYNCD}, {"umount": busy("umount", "target is busy")},
                    {"/proc/mounts": f"tmpfs {GSYNCD} tmpfs ro 0 0\n",
                     "/run/harness-gsyncd-stub": "#!/bin/sh\n"}, "gsyncd stub"),
    "glusterfs-unmount": (
        {"path": "/tmp/harness-gmnt", "fstype": "fuse.glusterfs", "source": "10.0.0.1:/v1",
         "made": True}, {"umount": busy("umount", "target is busy")},
        {"/proc/mounts": "10.0.0.1:/v1 /tmp/harness-gmnt fuse.glusterfs rw 0 0\n"},
        "glusterfs mount"),
    "nfsd-threads": ({}, {"rpc.nfsd": busy("rpc.nfsd", "unable to set threads")},
                     {"/proc/fs/nfsd/threads": "8\n"}, "nfsd threads"),
    "nat-table": ({"family": "ip", "table": "harness_nat_abc123"},
                  {"nft": 'case "$*" in "list table"*) exit 0;; *) echo "Error: busy" >&2; exit 1;;'
                   ' esac'}, {}, "nft table"),
    "rdma-link": ({"name": "rxe0", "netdev": "eth1"},
                  {"rdma": 'case "$*" in "link show"*) exit 0;; *) exit 1;; esac'}, {},
                  "RDMA link rxe0"),
    "l2-switch": ({"name": "hbr0", "addresses": {}}, {"ip": IP_STUBBORN}, {}, "bridge hbr0"),
    "nfs-export": ({"spec": "10.0.0.2:/srv/harness-x"},
                   {"exportfs": 'case "$*" in -v) printf "/srv/harness-x\\t10.0.0.2(rw)\\n";; '
                    '*) exit 1;; esac'}, {}, "NFS export"),
}


def stubborn_node(tmp_path, kind):
    data, tools, files, _word = STUBBORN[kind]
    node = StandIn(tmp_path, tools)
    seed(node, {p.replace("/tmp", str(tmp_path)) if p.startswith("/tmp/") else p:
                t if t is None else t.replace(" /tmp/", f" {tmp_path}/") for p, t in files.items()})
    return node, data


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    """A bounded wait of at most 1 s instead of 5: the bound is what is tested, not its size."""
    real = undo_left.settle

    def settle(node, **kwargs):
        kwargs["wait"] = min(kwargs.get("wait", 0.0), 1.0)
        return real(node, **kwargs)

    for module in (cgroup, harness.config.mounts, harness.config.labdisk, harness.config.nfs,
                   harness.config.kmod, harness.config.glusterfs):
        if hasattr(module, "settle"):
            monkeypatch.setattr(module, "settle", settle)


@pytest.mark.parametrize("kind", sorted(STUBBORN))
def test_an_undo_whose_command_leaves_the_object_there_says_so(kind, tmp_path):
    """Before issue 40 each of these returned as if undone (`|| true`, check=False, or a
    command that exits 0 while the object stays)."""
    node, data = stubborn_node(tmp_path, kind)
    data = {k: (v.replace("/tmp", str(tmp_path)) if isinstance(v, str) and v.startswith("/tmp/")
                else v) for k, v in data.items()}
    with recorded_here():
        with pytest.raises(UndoLeft) as caught:
            _HANDLERS[kind](node, data)
    assert STUBBORN[kind][3] in str(caught.value)
    assert caught.value.finish  # the command that would finish it


@pytest.mark.parametrize("kind", ["cgroup", "netns", "veth", "tipc-bearer", "kernel-module",
                                  "route", "unmount"])
def test_already_gone_is_success(kind, tmp_path):
    """The same tools failing, but the object is not there: as found, nothing raised."""
    data, tools, _files, _word = STUBBORN[kind]
    gone = {"ip": 'case "$*" in *show*) exit 1;; *) exit 2;; esac',
            "tipc": 'case "$*" in "bearer list") exit 0;; *) exit 1;; esac'}
    node = StandIn(tmp_path, {**tools, **{k: v for k, v in gone.items() if k in tools}})
    seed(node, {"/proc/modules": "", "/proc/mounts": "", "/sys/fs/cgroup/x": ""})
    data = {k: (v.replace("/tmp", str(tmp_path)) if isinstance(v, str) and v.startswith("/tmp/")
                else v) for k, v in data.items()}
    with recorded_here():
        assert _HANDLERS[kind](node, data) is None


def test_a_dependency_another_module_uses_is_a_note_not_a_failure(tmp_path):
    node = StandIn(tmp_path, {"rmmod": 'sed -i "/^$1 /d" "$MODS"'.replace(
        "$MODS", str(tmp_path / "kernel/proc/modules"))})
    seed(node, {"/proc/modules": "tipc 200 0 - Live 0x0\nudp_tunnel 32 1 vxlan, Live 0x0\n"})
    note = _HANDLERS["kernel-module"](node, {"modules": ["udp_tunnel", "tipc"]})
    assert note and "udp_tunnel used by vxlan" in note
    assert "tipc" not in node.kernel("/proc/modules").read_text()


def test_a_cgroup_whose_processes_are_leaving_is_tried_again_until_gone(tmp_path):
    """rmdir answers EBUSY once (the sender still leaving), then removes it: undone; the
    cgroup's CPU limit was lifted first (a process at 0.01 CPUs leaves slowly)."""
    counter = tmp_path / "tries"
    node = StandIn(tmp_path, {"rmdir": f'n=$(cat {counter} 2>/dev/null || echo 0); '
                              f'echo $((n + 1)) > {counter}; '
                              f'[ "$n" -ge 1 ] && rm -f "$1"/* && exec /bin/rmdir "$@"; '
                              'echo "rmdir: Device or resource busy" >&2; exit 1'})
    seed(node, {CG: None, CG + "/cpu.max": "1000 100000\n"})
    limits = []
    real_settle = cgroup.settle

    def watching(node, **kwargs):  # what cpu.max holds when the handler retries
        between = kwargs["between"]
        kwargs["between"] = lambda res: (limits.append(
            node.kernel(CG + "/cpu.max").read_text().strip()), between(res))
        return real_settle(node, **kwargs)

    cgroup.settle, saved = watching, cgroup.settle
    try:
        assert _HANDLERS["cgroup"](node, {"path": CG}) is None
    finally:
        cgroup.settle = saved
    assert not node.kernel(CG).exists() and counter.read_text().strip() == "2"
    assert limits == ["max"]


def test_the_runs_own_process_in_the_cgroup_is_stopped_by_its_record_never_another(
        tmp_path, monkeypatch):
    """A process the run recorded and that is still in the cgroup is stopped by its record;
    a process the run did not start is never signalled, and the cgroup is then left, named."""
    monkeypatch.setattr(cgroup, "settle", undo_left.settle)
    # not this test's children (a child stopped stays a zombie until waited for): init's
    ours, theirs = (int(subprocess.run(["sh", "-c", "setsid sleep 60 >/dev/null 2>&1 & echo $!"],
                                       capture_output=True, text=True, check=True).stdout)
                    for _ in range(2))
    try:
        procs = tmp_path / "kernel" / CG.lstrip("/") / "cgroup.procs"
        # rmdir works once no process listed in cgroup.procs is alive
        node = StandIn(tmp_path, {"rmdir": (
            f'for p in $(cat {procs}); do if kill -0 $p 2>/dev/null && '
            f'[ "$(cut -d" " -f3 /proc/$p/stat)" != Z ]; then '
            'echo "rmdir: Device or resource busy" >&2; exit 1; fi; done; '
            f'rm -f {procs}; exec /bin/rmdir "$@"')})
        seed(node, {CG: None})
        journal = Journal(tmp_path / "journal.jsonl")
        journal.record("cgroup", node, path=CG)
        journal.record("process", node, pid=ours, start_ticks=process_start_ticks(ours),
                       command=["sleep", "60"], log="", host="standin")

        procs.write_text(f"{ours}\n")
        # the process's own undo left aside (as if it had not ended it): the cgroup's undo
        # finds it inside, stops it by its record, then removes the cgroup
        journal.undo_all(leave=lambda e: e.kind == "process")
        assert not node.kernel(CG).exists() and not alive(ours)

        seed(node, {CG: None})
        procs.write_text(f"{theirs}\n")
        journal.record("cgroup", node, path=CG)
        monkeypatch.setattr(cgroup, "LEAVE_WAIT", 1.0)
        with pytest.raises(UndoFailed, match=f"cgroup {CG} is still there.*processes in it: {theirs}"):
            journal.undo_all()
        assert alive(theirs) and node.kernel(CG).is_dir()
    finally:
        for pid in (ours, theirs):
            if alive(pid):
                os.killpg(pid, signal.SIGKILL)


def test_a_failed_undo_is_recorded_as_failed_and_lab_clean_retries_exactly_it(
        tmp_path, monkeypatch, capsys):
    """The journal says undo-failed (never undone); the record stays pending; the run's
    record names it; `harness lab clean` retries it: still there -> exit 3; gone -> 0."""
    from harness import cli
    from harness.archive.archive import Run

    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))
    node = StandIn(tmp_path / "m", {"rmdir": busy("rmdir", "Device or resource busy")})
    seed(node, {CG: None})
    monkeypatch.setattr("harness.journal.journal.node_from_description", lambda desc: node)
    run = Run.create("s4", {}, tmp_path / "data")
    journal = run.journal
    entry = journal.record("cgroup", node, path=CG)
    with pytest.raises(UndoFailed, match="is still there"):
        journal.undo_all()
    lines = (run.path / "journal.jsonl").read_text()
    assert '"op": "undo-failed"' in lines and '"op": "undone"' not in lines
    again = run.journal
    assert [e.seq for e in again.left()] == [entry.seq]
    assert again.left_behind()[0]["why"].startswith(f"cgroup {CG} is still there")

    assert cli.main(["lab", "clean", "--data", str(tmp_path / "data")]) == 3
    out, err = capsys.readouterr()
    assert "its undo failed before" in out and "left on the machine: 1 change" in err

    (tmp_path / "m" / "bin" / "rmdir").unlink()  # what held it is gone
    assert cli.main(["lab", "clean", "--data", str(tmp_path / "data")]) == 0
    assert not node.kernel(CG).exists() and run.journal.pending() == []


def test_the_run_names_what_is_left_and_exits_3(tmp_path, capsys):
    from harness import cli
    from harness.archive.archive import Run
    from harness.run.execute import NotebookRun

    left = [{"seq": 3, "kind": "cgroup", "node": "local", "data": {"path": CG},
             "why": f"cgroup {CG} is still there: rmdir: Device or resource busy"}]
    run = Run.create("s4", {}, tmp_path / "data")
    result = NotebookRun(run, "incomplete", None, 1.0, "interrupted (SIGINT/SIGTERM)", left)
    code = cli.print_left_behind(result.left, run.path)
    err = capsys.readouterr().err
    assert code == 3 and f"cgroup on local: cgroup {CG} is still there" in err


def test_a_batch_whose_point_left_something_names_it_and_exits_3(tmp_path, monkeypatch, capsys):
    import harness.archive.compare as compare
    import harness.archive.index as index
    import harness.run.sweep as sweep
    from harness import cli
    from harness.archive.archive import Run

    run = Run.create("s4", {}, tmp_path / "data")
    run.update(left_behind=[{"seq": 3, "kind": "cgroup", "node": "local", "data": {"path": CG},
                             "why": f"cgroup {CG} is still there: rmdir: busy"}])
    clean = Run.create("s4", {}, tmp_path / "data")
    monkeypatch.setattr(sweep, "run_sweep", lambda path, progress=True: [
        ("incomplete", {"streams": 1}, run.path), ("complete", {"streams": 2}, clean.path)])
    monkeypatch.setattr(compare, "sweep_summary", lambda path: ("", "1 of 2 complete"))
    monkeypatch.setattr(index, "refresh", lambda: None)
    assert cli.main(["batch", "sweep.yaml"]) == 3
    err = capsys.readouterr().err
    assert f"left on the machine by {run.path}" in err and str(clean.path) not in err


# -- kinds whose look is a fact read again: the write is accepted and the value stays ------------

class Sticky(LocalNode):
    """Answers a fact's read with the value the run set, whatever was written since."""

    def __init__(self, answers: dict[str, str]):
        super().__init__("sticky")
        self.answers = answers

    def _execute(self, cmd, timeout, stdin):
        for prefix, out in self.answers.items():
            if cmd.startswith(prefix):
                return 0, out, ""
        return 0, "", ""  # every write "succeeds"


@pytest.mark.parametrize("kind,data,answers", [
    ("sysctl", {"key": "net.ipv4.tcp_congestion_control", "before": "cubic", "after": "bbr"},
     {"sysctl -n": "bbr\n"}),
    ("mtu", {"ifname": "vx0", "before": 1500}, {"ip -j link show": '[{"mtu": 9000}]'}),
    ("offload", {"ifname": "vx0", "feature": "tso", "before": True},
     {"ethtool -k": "tcp-segmentation-offload: off\ntso: off\n"}),
    ("mptcp-limits", {"before": {"subflows": 2, "add_addr_accepted": 0}},
     {"ip mptcp limits show": "subflows 8 add_addr_accepted 8\n"}),
    ("mptcp-endpoint", {"id": 3, "address": "10.0.0.1"},
     {"ip -j mptcp endpoint show": '[{"address": "10.0.0.1", "id": 3}]',
      "ip mptcp endpoint show": "10.0.0.1 id 3 subflow dev vx0\n"}),
    ("cpu-online", {"path": "/sys/devices/system/cpu/cpu1/online", "before": 1},
     {"cat /sys/devices/system/cpu/cpu1/online": "0\n"}),
])
def test_a_setting_written_back_that_did_not_take_says_so(kind, data, answers):
    assert all((sysctl, interface, mptcp, cpu_config))  # imported: their handlers registered
    with recorded_here():
        with pytest.raises(UndoLeft, match="before the run"):
            _HANDLERS[kind](Sticky(answers), data)


def test_a_file_rm_could_not_remove_is_left_named(tmp_path):
    folder = tmp_path / "harness-run-x"
    folder.mkdir()
    node = StandIn(tmp_path / "m", {"rm": busy("rm", "cannot remove: Device or resource busy")})
    with only_roots(str(tmp_path)), pytest.raises(UndoLeft, match="harness-run-x"):
        _HANDLERS["file"](node, {"path": str(folder)})
    assert folder.is_dir()


def test_the_look_runs_in_the_same_round_trip_as_the_command(tmp_path):
    node, data = stubborn_node(tmp_path, "veth")
    with pytest.raises(UndoLeft):
        _HANDLERS["veth"](node, data)
    assert len(node.commands) == 1  # wait 0: one try, one command (a VM round trip each)
    assert "ip link delete dev vx0" in node.commands[0] and shlex.quote("vx0") in node.commands[0]


def test_settle_gives_up_after_its_bound(tmp_path):
    from harness.journal.undo_left import settle

    node = StandIn(tmp_path, {})
    started = time.monotonic()
    with pytest.raises(UndoLeft, match="after [0-9]+ tries in 0.5 s"):
        settle(node, act="true", look="false", what="x", finish="y", wait=0.5, interval=0.1)
    assert 0.5 <= time.monotonic() - started < 3


class KillIgnored(LocalNode):
    """A machine where SIGKILL does not end a process (one in uninterruptible sleep: D)."""

    IGNORE_KILL = 'kill() { [ "$2" = KILL ] || command kill "$@"; }\n'
    # the stop script runs in its own `sh -c SCRIPT`: it gets the same kill
    NESTED = ('sh() { if [ "$1" = -c ]; then s=$2; shift 2; '
              'command sh -c "$IGNORE_KILL$s" "$@"; else command sh "$@"; fi; }\n')

    def _argv(self, cmd: str) -> list[str]:
        return ["env", f"IGNORE_KILL={self.IGNORE_KILL}", "sh", "-c", self.NESTED + cmd]


def test_a_process_group_still_running_after_its_stop_is_left_named():
    """Before issue 40 the stop sent SIGKILL and returned; now it looks for a member of the
    group still running (zombies do not count) and says so."""
    pid = _ignoring_term()
    try:
        with recorded_here(), pytest.raises(UndoLeft, match=f"process group {pid}.*still running"):
            _HANDLERS["process"](KillIgnored(), {"pid": pid, "start_ticks": process_start_ticks(pid),
                                                 "command": ["sh"], "log": ""})
        assert alive(pid)
    finally:
        os.killpg(pid, signal.SIGKILL)


def test_the_note_of_a_module_left_to_its_new_user_is_on_its_undone_line(tmp_path, monkeypatch):
    node = StandIn(tmp_path, {"rmmod": f'sed -i "/^$1 /d" {tmp_path / "kernel/proc/modules"}'})
    seed(node, {"/proc/modules": "tipc 200 0 - Live 0x0\nudp_tunnel 32 1 vxlan, Live 0x0\n"})
    journal = Journal(tmp_path / "journal.jsonl")
    journal.record("kernel-module", node, modules=["udp_tunnel", "tipc"])
    journal.undo_all()
    again = Journal(tmp_path / "journal.jsonl")
    (entry,) = again.entries()
    assert entry.undone and "udp_tunnel used by vxlan" in entry.note and again.left() == []


def _ignoring_term() -> int:
    """A process group (its own session) that ignores SIGTERM, not this test's child."""
    pid = int(subprocess.run(["sh", "-c", "setsid sh -c 'trap \"\" TERM; sleep 60' "
                              ">/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True).stdout)
    time.sleep(0.2)  # the trap set
    return pid


class RemoteKillIgnored(KillIgnored):
    """:class:`KillIgnored` taken for a remote machine: the tracked stop's shell path."""

    @property
    def is_local(self) -> bool:
        return False


@pytest.mark.parametrize("local", [True, False], ids=["python", "shell"])
def test_a_tracked_group_still_running_after_its_stop_is_left_and_its_file_kept(
        tmp_path, monkeypatch, local):
    """The stop file stays (so `lab clean` can try again) and the undo says what runs."""
    from harness.journal import tracked

    folder = tmp_path / "stop"
    folder.mkdir(mode=0o700)
    monkeypatch.setattr(tracked, "STOP_DIR", str(folder))
    name = tracked.PREFIX + "0123456789abcdef"
    pid = _ignoring_term()
    real_killpg = os.killpg
    try:
        (folder / name).write_text(f"{pid} {process_start_ticks(pid)} {pid}\n")
        with pytest.raises(UndoLeft, match=f"process group {pid}.*still running"):
            if local:
                monkeypatch.setattr(tracked.os, "killpg", lambda g, s: None if s == signal.SIGKILL
                                    else real_killpg(g, s))
                tracked.stop_local(str(folder), name, grace=0.3)
            else:
                _HANDLERS["tracked"](RemoteKillIgnored(), {"name": name})
        assert alive(pid) and (folder / name).exists()
    finally:
        real_killpg(pid, signal.SIGKILL)


def test_the_reports_banner_names_what_is_left():
    from harness.archive.report_sections import banner

    html = banner({"study": "s4", "status": "incomplete", "left_behind": [
        {"kind": "cgroup", "node": "local", "why": f"cgroup {CG} is still there: rmdir: busy "
         f"how to fix: finish it by hand: rmdir {CG}"}]}, "")
    assert "left on the machine 1" in html and f"rmdir {CG}" in html


HELD: dict[str, bool] = {}


@undo_handler("test-holder", gone_with_namespace=False)
def _undo_test_holder(node, data):
    HELD["held"] = False  # e.g. the cgroup's undo lifting the limit a leaving process needs


@undo_handler("test-held", gone_with_namespace=False)
def _undo_test_held(node, data):
    if HELD.get("held"):
        raise UndoLeft("the held thing", "an older change still holds it", "undo the holder")


def test_a_change_found_still_there_is_tried_once_more_after_the_older_ones(tmp_path):
    """The newer change is still there until an older change's undo frees it: one more try at
    the end finds it gone, so nothing is left and nothing is reported."""
    HELD["held"] = True
    journal = Journal(tmp_path / "journal.jsonl")
    node = LocalNode()
    journal.record("test-holder", node)
    journal.record("test-held", node)
    assert journal.undo_all() == []
    again = Journal(tmp_path / "journal.jsonl")
    assert again.pending() == [] and again.left() == []
    assert [e.undo_error is not None for e in again.entries()] == [False, True]  # on record


def test_a_tracked_sender_still_in_the_cgroup_is_stopped_by_its_stop_file(tmp_path, monkeypatch):
    """S4's sender is a tracked command (iperf3 run with track=True inside the cgroup): one
    still in the cgroup when its undo runs is stopped by its own stop file, then the cgroup
    goes."""
    from harness.journal import tracked

    monkeypatch.setattr(cgroup, "settle", undo_left.settle)
    folder = tmp_path / "stop"
    folder.mkdir(mode=0o700)
    monkeypatch.setattr(tracked, "STOP_DIR", str(folder))
    sender = int(subprocess.run(["sh", "-c", "setsid sleep 60 >/dev/null 2>&1 & echo $!"],
                                capture_output=True, text=True, check=True).stdout)
    try:
        procs = tmp_path / "kernel" / CG.lstrip("/") / "cgroup.procs"
        node = StandIn(tmp_path, {"rmdir": (
            f'for p in $(cat {procs}); do if kill -0 $p 2>/dev/null && '
            f'[ "$(cut -d" " -f3 /proc/$p/stat)" != Z ]; then '
            'echo "rmdir: Device or resource busy" >&2; exit 1; fi; done; '
            f'rm -f {procs}; exec /bin/rmdir "$@"')})
        seed(node, {CG: None})
        procs.write_text(f"{sender}\n")
        name = tracked.PREFIX + "0123456789abcdef"
        (folder / name).write_text(f"{sender} {process_start_ticks(sender)} {sender}\n")
        journal = Journal(tmp_path / "journal.jsonl")
        journal.record("cgroup", node, path=CG)
        journal.record("tracked", node, name=name)
        journal.undo_all(leave=lambda e: e.kind == "tracked")
        assert not node.kernel(CG).exists() and not alive(sender)
        assert not (folder / name).exists()
    finally:
        if alive(sender):
            os.killpg(sender, signal.SIGKILL)
