"""Hostile journals and stop files (issue 26): each is refused or neutralised, nothing outside
the harness's own folders is touched, and no other process is signalled.

Every undo handler gets a row. Rows whose record must be refused before any command run
against a recording machine (nothing executes; the row asserts no command was sent). Rows
that act on files or processes run for real on this machine, with a temporary folder as the
only folder the harness may act in (:func:`harness.journal.undo_checks.only_roots`), sentinel files
outside it and a sentinel process that must still run at the end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from harness.journal import journal as journal_mod
from harness.journal import tracked
from harness.journal.journal import _HANDLERS, Journal, UndoFailed, load_undo_handlers
from harness.journal.machineid import local_identity
from harness.journal.trust import without_trust
from harness.journal.undo_checks import RefusedRecord, only_roots
from harness.nodes import LocalNode
from harness.nodes.base import Node
from harness.nodes.procfs import group_running, process_start_ticks, read_stat

load_undo_handlers()  # every handler of the harness, as `harness lab clean` may need them


class Recorder(Node):
    """This machine as a handler sees it, but commands are recorded, never run."""

    def __init__(self, name: str = "rec", local: bool = True):
        self.name = name
        self.local = local
        self.commands: list[str] = []

    @property
    def is_local(self) -> bool:
        return self.local

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        return 0, "", ""

    def spawn(self, cmd, *, cgroup=None):
        raise AssertionError("no process may be started by an undo")

    def put(self, local_path, remote_path):
        raise AssertionError("no copy expected")

    def get(self, remote_path, local_path):
        raise AssertionError("no copy expected")


@pytest.fixture(scope="module")
def sentinel_process():
    """A process of someone else's: it must outlive every row."""
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    yield proc
    assert proc.poll() is None, "an undo signalled a process it did not start"
    proc.kill()
    proc.wait()


@pytest.fixture
def root(tmp_path):
    """The only folder the harness may act in; sentinels beside it."""
    own = tmp_path / "own"
    own.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "sentinel").write_text("keep")
    (outside / "harness-sentinel").mkdir()  # named like ours, but outside the folder
    with only_roots(str(own)):
        yield own


def sentinels_intact(root) -> bool:
    outside = root.parent / "outside"
    return (outside / "sentinel").read_text() == "keep" and (outside / "harness-sentinel").is_dir()


INJECT = "x; touch /tmp/harness-hostile-$$"
# kind -> records that its handler must refuse before it sends any command
REFUSED = {
    "netns": [{"name": INJECT}, {"name": "../../etc"}, {}, {"name": 7}],
    "nic": [{"ifname": INJECT}, {"ifname": "a" * 16}],
    "root-nic": [{"ifname": "eth0", "name": "$(reboot)", "mtu": 1500},
                 {"ifname": "eth0", "name": "ens3", "mtu": "1500; reboot"}],
    "veth": [{"ifname": "a`reboot`"}, {"ifname": "-rf"}],
    "qdisc": [{"ifname": "eth0 root; reboot"}],
    "route": [{"destination": "10.0.0.0/8; reboot"}, {"destination": "default", "table": "x"}],
    "rule": [{"source": "all", "table": 100, "priority": 1},
             {"source": "10.0.0.1", "table": 100, "priority": "1 y"}],
    "process": [{"pid": 1, "start_ticks": 0}, {"pid": -1, "start_ticks": 0},
                {"pid": "1; reboot", "start_ticks": 0},
                # no command line the harness started (issue 37): as written before, or forged
                {"pid": 4242, "start_ticks": 0}, {"pid": 4242, "start_ticks": 0, "command": ""},
                {"pid": 4242, "start_ticks": 0, "command": "a\x00b"},
                {"pid": 4242, "start_ticks": 0, "command": "x" * 20000}],
    "file": [{"path": "/etc"}, {"path": "/"}, {"path": "relative/harness-x"},
             {"path": "/tmp/../etc/harness-x"}, {"path": "/etc/harness-x"}],
    "tracked": [{"name": "../../../etc/passwd"}, {"name": "harness-tracked-zz"}],
    "cgroup": [{"path": "/sys/fs/cgroup/../../etc"}, {"path": "/sys/fs/cgroup/user.slice"}],
    "cgroup-controller": [{"root": "/sys/fs/cgroup", "controller": "cpu; reboot"},
                          {"root": "/etc", "controller": "cpu"}],
    "gluster-volume": [{"name": "v", "bricks": ["/etc"]}, {"name": "v; reboot", "bricks": []},
                       {"name": "v", "bricks": "/etc"}],
    "gluster-volume-start": [{"name": "$(reboot)"}],
    "gsyncd-stub": [{"path": "/etc/passwd"}],
    "glusterfs-unmount": [{"path": "/mnt/x", "fstype": "fuse; reboot", "source": "s:/v"},
                          {"path": "/home", "fstype": "fuse.glusterfs", "source": "s:/v"}],
    "unmount": [{"path": "/mnt/../", "fstype": "tmpfs", "source": "x"},
                {"path": "/mnt/x", "fstype": "tmpfs", "source": "a b"},
                # a mountpoint the record does not say the harness made (issue 37)
                {"path": "/home", "fstype": "nfs4", "source": "fs:/home"},
                {"path": "/home", "fstype": "nfs4", "source": "fs:/home", "made": "yes"},
                {"path": "/proc/fs/nfsd", "fstype": "tmpfs", "source": "harness-state"},
                {"path": "/var/lib/nfs", "fstype": "nfs4", "source": "fs:/x"}],
    "mountpoint": [{"path": "mnt"}, {"path": "/run/sshd"}, {"path": "/run/sshd", "made": 1}],
    "lab-disk": [{"mountpoint": "/run/s2/../../etc", "made": True}, {"mountpoint": "/home"},
                 {"mountpoint": "/run/s2/disk-nfs", "made": False}],
    "sysctl": [{"key": "kernel.core_pattern", "before": "|/tmp/evil"},
               {"key": "net.ipv4.ip_forward", "before": "1\nkernel.core_pattern=|/x"}],
    "mtu": [{"ifname": "eth0", "before": "1500; reboot"}],
    "cpu-online": [{"path": "/etc/passwd", "before": 1},
                   {"path": "/sys/devices/system/cpu/cpu1/online", "before": "1; rm"}],
    "offload": [{"ifname": "eth0", "feature": "tso; reboot", "before": True}],
    "tipc-bearer": [{"media": "udp", "name": "$(reboot)"}, {"media": "ib", "dev": "x"}],
    "tipc_bearer": [{"media": "eth", "dev": "eth0; reboot"}],
    "l2-switch": [{"name": "s3sw; reboot", "addresses": {}}, {"name": "s3sw", "addresses": "red"},
                  {"name": "s3sw", "addresses": {"red; reboot": ["198.19.0.1/24"]}},
                  {"name": "s3sw", "addresses": {"red": ["198.19.0.1/24; reboot"]}}],
    "mptcp-limits": [{"before": {"subflows": "2; reboot", "add_addr_accepted": 0}}],
    "mptcp-endpoint": [{"id": "1; reboot", "address": "10.0.0.1"},
                       {"id": 1, "address": "10.0.0.1; reboot"}],
    "nat-table": [{"family": "ip", "table": "filter"}, {"family": "inet; x", "table": "harness_a"}],
    "kernel-module": [{"modules": ["ext4; reboot"]}, {"modules": "ext4"}],
    "rdma-link": [{"name": "rxe0; reboot"}],
    "nfs-export": [{"spec": "nocolon"}, {"spec": "a b:/srv"}],
    "gpfs-config": [{"attribute": "pagepool;x", "before": "1G", "nodes": [], "immediate": False}],
    "gpfs-grant": [{"cluster": "c; x", "device": "fs1", "before": None}],
    "gpfs-auth": [{"cluster": "$(reboot)"}],
    "gpfs-mount": [{"device": "fs1", "nodes": "all"}],
    "gpfs-remotefs": [{"device": "fs1", "remote_device": "a b", "cluster": "c"}],
    "gpfs-remotecluster": [{"cluster": "c\nx"}],
}
# handlers whose record carries nothing to check (the machine's identity guards them)
NOTHING_TO_CHECK = {"nfsd-threads"}


def test_every_undo_handler_has_a_row():
    harness_kinds = {k for k, m in journal_mod._MODULES.items() if m.startswith("harness.")}
    assert len(harness_kinds) > 30 and harness_kinds - NOTHING_TO_CHECK <= set(REFUSED), \
        f"new undo handlers need their hostile rows here: {harness_kinds - set(REFUSED)}"


@pytest.mark.parametrize("kind, data", [(k, d) for k, rows in REFUSED.items() for d in rows],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_a_hostile_record_is_refused_before_any_command(kind, data, root, sentinel_process,
                                                        monkeypatch):
    monkeypatch.setattr(tracked, "STOP_DIR", str(root / "stop"))
    for local in (True, False):
        node = Recorder(local=local)
        with pytest.raises(RefusedRecord, match=f"kind {kind!r}|refused"):
            _HANDLERS[kind](node, dict(data))
        assert node.commands == [], f"{kind}: a command was sent for a refused record"
    assert sentinels_intact(root)


# -- rows that run for real on this machine ----------------------------------------------------

def test_paths_are_removed_only_inside_the_own_folder_and_never_through_a_link(root):
    remove = _HANDLERS["file"]
    outside = root.parent / "outside"
    ours = root / "harness-made"
    ours.mkdir()
    (ours / "data").write_text("x")
    remove(LocalNode(), {"path": str(ours)})
    assert not ours.exists()
    link = root / "harness-link"
    link.symlink_to(outside)  # a link someone left where the harness makes things
    with pytest.raises(RefusedRecord, match="symlink"):
        remove(LocalNode(), {"path": str(link)})
    through = root / "harness-via"
    through.symlink_to(outside)
    with pytest.raises(RefusedRecord, match="symlink"):
        remove(LocalNode(), {"path": str(through / "harness-sentinel")})
    for path in (outside / "harness-sentinel", outside / "sentinel"):
        with pytest.raises(RefusedRecord):
            remove(LocalNode(), {"path": str(path)})
    assert link.is_symlink() and sentinels_intact(root)


def test_a_path_of_another_user_is_left(root):
    theirs = root / "harness-theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(RefusedRecord, match="owned by another user"):
        _HANDLERS["file"](LocalNode(), {"path": str(theirs)})
    assert theirs.is_dir()


def test_a_brick_is_removed_only_if_empty_or_a_brick(root, monkeypatch):
    from harness.config import glusterfs

    monkeypatch.setattr(glusterfs, "parse_volume_info", lambda text: None)  # no glusterd
    full = root / "disk" / "notabrick"
    full.mkdir(parents=True)
    (full / "thesis.tex").write_text("keep")
    brick = root / "disk" / "brick"
    (brick / ".glusterfs").mkdir(parents=True)
    _HANDLERS["gluster-volume"](LocalNode(), {"name": "v", "bricks": [str(brick)]})
    assert not brick.exists()
    with pytest.raises(Exception, match="neither empty nor holding .glusterfs"):
        _HANDLERS["gluster-volume"](LocalNode(), {"name": "v", "bricks": [str(full)]})
    assert (full / "thesis.tex").read_text() == "keep"


def test_a_process_record_signals_only_its_own_process(root, sentinel_process):
    ticks = process_start_ticks(sentinel_process.pid)
    log = root / "harness-proc-abc123"
    log.write_text("")
    elsewhere = root / "harness-made" / "harness-proc-abc123"  # not right in an own folder
    elsewhere.parent.mkdir()
    elsewhere.write_text("")
    # the sentinel's pid with another start tick: a reused pid, never signalled
    _HANDLERS["process"](LocalNode(), {"pid": sentinel_process.pid, "start_ticks": ticks + 1,
                                       "command": "sleep 600", "log": str(log)})
    assert sentinel_process.poll() is None and not log.exists()
    for other in ("/etc/passwd", str(elsewhere), str(root.parent / "outside" / "sentinel")):
        node = Recorder()
        _HANDLERS["process"](node, {"pid": 4242, "start_ticks": 0, "command": "x", "log": other})
        (cmd,) = node.commands
        assert "rm -f" not in cmd and " 4242 0" in cmd  # stopped all the same, its log left
    assert elsewhere.exists() and sentinels_intact(root)
    mine = subprocess.Popen(["sleep", "60"], start_new_session=True)
    reaper(mine)
    _HANDLERS["process"](LocalNode(), {"pid": mine.pid, "command": "sleep 60",
                                       "start_ticks": process_start_ticks(mine.pid)})
    assert mine.wait(timeout=10) == -signal.SIGTERM
    assert sentinel_process.poll() is None


def reaper(proc: subprocess.Popen) -> None:
    """Reap ``proc`` the moment it dies, as its parent would: a zombie still counts as a
    member of its group, and the stop would wait its whole grace period for it."""
    import threading

    threading.Thread(target=proc.wait, daemon=True).start()


# -- stop files of tracked commands --------------------------------------------------------------

@pytest.fixture
def stop_dir(root, monkeypatch):
    folder = root / "stop"
    folder.mkdir(mode=0o700)
    monkeypatch.setattr(tracked, "STOP_DIR", str(folder))
    return folder


NAME = tracked.PREFIX + "0123456789abcdef"


@pytest.mark.parametrize("local", [True, False], ids=["python", "shell"])
def test_a_stop_file_that_is_a_symlink_is_refused(stop_dir, sentinel_process, local, root):
    target = root.parent / "outside" / "sentinel"
    (stop_dir / NAME).symlink_to(target)
    node = LocalNode() if local else _ShellLocal()
    with pytest.raises(RefusedRecord, match="symlink|link"):
        _HANDLERS["tracked"](node, {"name": NAME})
    assert (stop_dir / NAME).is_symlink() and sentinels_intact(root)


@pytest.mark.parametrize("local", [True, False], ids=["python", "shell"])
def test_a_stop_file_in_a_folder_others_can_write_is_refused(stop_dir, local, sentinel_process):
    stop_dir.chmod(0o777)
    ticks = process_start_ticks(sentinel_process.pid)
    (stop_dir / NAME).write_text(f"{sentinel_process.pid} {ticks} {sentinel_process.pid}\n")
    node = LocalNode() if local else _ShellLocal()
    with pytest.raises(RefusedRecord, match="0700"):
        _HANDLERS["tracked"](node, {"name": NAME})
    assert sentinel_process.poll() is None


@pytest.mark.parametrize("local", [True, False], ids=["python", "shell"])
def test_a_stop_file_naming_another_group_signals_nobody(stop_dir, local, sentinel_process):
    """The pid and its start tick are right, but the group is someone else's: the recorded
    group must be that pid's own."""
    wrapper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        (stop_dir / NAME).write_text(f"{wrapper.pid} {process_start_ticks(wrapper.pid)} "
                                     f"{sentinel_process.pid}\n")
        _HANDLERS["tracked"](LocalNode() if local else _ShellLocal(), {"name": NAME})
        time.sleep(0.2)
        assert sentinel_process.poll() is None and wrapper.poll() is None
        assert not (stop_dir / NAME).exists()
    finally:
        wrapper.kill()
        wrapper.wait()


@pytest.mark.parametrize("local", [True, False], ids=["python", "shell"])
def test_a_sound_stop_file_stops_its_group(stop_dir, local, sentinel_process):
    wrapper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    (stop_dir / NAME).write_text(f"{wrapper.pid} {process_start_ticks(wrapper.pid)} "
                                 f"{wrapper.pid}\n")
    reaper(wrapper)
    _HANDLERS["tracked"](LocalNode() if local else _ShellLocal(), {"name": NAME})
    assert wrapper.wait(timeout=10) == -signal.SIGTERM
    assert not (stop_dir / NAME).exists() and sentinel_process.poll() is None


class _ShellLocal(LocalNode):
    """This machine taken for a remote one: the handler's shell path (STOP_TRACKED)."""

    @property
    def is_local(self) -> bool:
        return False


# -- journal records: machine, boot, soundness, modules ------------------------------------------

def do_line(seq: int, path: str, **extra) -> dict:
    line = {"op": "do", "seq": seq, "kind": "file", "node": {"type": "local", "name": "local"},
            "data": {"path": path}, "module": "harness.journal.journal", "time": 0, "pid": 4242,
            "machine": local_identity().to_dict()}
    line.update(extra)
    return line


def write(path, *lines) -> None:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))


@pytest.mark.parametrize("machine, words", [
    ({"hostname": "elsewhere", "boot_id": local_identity().boot_id}, "another machine"),
    ({"hostname": local_identity().hostname, "boot_id": "0" * 8 + "-0000-0000-0000-" + "0" * 12},
     "earlier boot"),
    (None, "before journal records named their machine"),
    ({}, "could not say who it was"),
    ("not a dict", "before journal records named their machine"),
])
def test_a_record_of_another_machine_or_boot_or_none_is_refused_saying_so(root, tmp_path,
                                                                           machine, words):
    target = root / "harness-x"
    target.mkdir()
    line = do_line(1, str(target))
    if machine is None:
        del line["machine"]
    else:
        line["machine"] = machine
    write(tmp_path / "j.jsonl", line)
    journal = Journal(tmp_path / "j.jsonl")
    with pytest.raises(UndoFailed, match=words):
        journal.undo_all()
    assert target.is_dir() and [e.seq for e in journal.pending()] == [1]


def test_unsound_lines_are_reported_and_skipped_and_the_rest_is_cleaned(root, tmp_path):
    made = [root / f"harness-{i}" for i in range(3)]
    for path in made:
        path.mkdir()
    write(tmp_path / "j.jsonl",
          do_line(1, str(made[0])),
          '{"op": "do", "seq": 2, "kind": "file", "node"',  # torn
          "[1, 2]", '{"op": "do"}', '{"op": "do", "seq": "3", "kind": "file"}',
          {"op": "undone", "seq": 99}, {"op": "frob", "seq": 1},
          do_line(1, str(root.parent / "outside")),  # the same seq again
          {**do_line(4, str(made[1])), "data": ["not", "a", "dict"]},
          do_line(5, str(made[2])))
    journal = Journal(tmp_path / "j.jsonl")
    assert len(journal.problems) == 8 and all("skipped" in p for p in journal.problems)
    journal.undo_all()
    assert not made[0].exists() and not made[2].exists() and made[1].exists()
    assert sentinels_intact(root)


def test_a_record_is_never_glued_onto_a_torn_line(tmp_path, root):
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps(do_line(1, str(root / "harness-a"))) + "\n" + '{"op": "do", "se')
    journal = Journal(path)
    assert len(journal.problems) == 1
    journal.record("file", LocalNode(), path=str(root / "harness-b"))
    again = Journal(path)
    assert [e.data["path"] for e in again.pending()] == [str(root / "harness-a"),
                                                         str(root / "harness-b")]
    assert len(again.problems) == 1  # the torn line alone


@pytest.mark.parametrize("module", ["os", "harness.cli", "harness_evil.x", "harness.journal.journal\n",
                                    "harness..x"])
def test_a_record_naming_a_module_other_than_a_handler_module_is_refused(tmp_path, module):
    line = {**do_line(1, "/tmp/harness-never"), "kind": "no-such-kind", "module": module}
    write(tmp_path / "j.jsonl", line)
    journal = Journal(tmp_path / "j.jsonl")
    with pytest.raises(UndoFailed, match="module"):
        journal.undo_all()


def test_an_ssh_node_of_a_journal_never_accepts_an_unknown_host_key():
    desc = {"type": "netns", "netns": "n", "name": "n",
            "parent": {"type": "ssh", "name": "h", "host": "192.0.2.1", "accept_unknown_host": True}}
    assert without_trust(desc)["parent"]["accept_unknown_host"] is False


def test_a_writer_is_alive_only_with_its_start_tick_on_this_machine(tmp_path, sentinel_process):
    ticks = process_start_ticks(sentinel_process.pid)
    here = local_identity().to_dict()
    for writer, alive in (({"pid_start": ticks, "controller": here}, True),
                          ({"pid_start": ticks + 1, "controller": here}, False),
                          ({"pid_start": ticks, "controller": {**here, "hostname": "x"}}, False),
                          ({}, False)):  # no start tick recorded: cannot be checked
        write(tmp_path / "j.jsonl", do_line(1, "/tmp/harness-x", pid=sentinel_process.pid,
                                            **writer))
        found = Journal(tmp_path / "j.jsonl").live_writers()
        assert found == ([sentinel_process.pid] if alive else []), writer


# -- property: lab clean's reader on random and truncated lines ----------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
KINDS = ("file", "process", "tracked", "netns", "veth", "route", "sysctl", "cgroup")
WORDS = st.one_of(st.text(max_size=30), st.integers(-5, 2**40), st.sampled_from(
    ["/etc", "/tmp/harness-x", "..", "eth0", "x; reboot", "/", "harness-tracked-0123456789abcdef"]))


@st.composite
def journals(draw):
    """(lines, sound): sound records (seq 1..n, paths in the own folder) among garbage --
    random text, random JSON, sound lines cut short, and hostile records of real kinds."""
    n = draw(st.integers(0, 6))
    sound = [do_line(seq, f"{{ROOT}}/harness-{seq}") for seq in range(1, n + 1)]
    lines = [json.dumps(x) for x in sound]
    garbage = st.one_of(
        st.text(max_size=60).map(lambda t: t.replace("\n", " ")),
        JSON.filter(lambda v: not (isinstance(v, dict) and v.get("seq") in range(1, n + 1)))
            .map(json.dumps),
        st.builds(lambda line, cut: line[:cut], st.sampled_from(lines or ["{}"]),
                  st.integers(1, 80)).filter(lambda t: not t.endswith("}")),
        st.builds(lambda seq, kind, data: json.dumps(
            {**do_line(seq, "/x"), "kind": kind, "data": data}),
            st.integers(1000, 2000), st.sampled_from(KINDS),
            st.dictionaries(st.sampled_from(["path", "pid", "start_ticks", "name", "ifname",
                                             "destination", "key", "before", "log"]),
                            WORDS, max_size=4)),
    )
    for item in draw(st.lists(garbage, max_size=12)):
        lines.insert(draw(st.integers(0, len(lines))), item)
    return lines, n


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=journals())
def test_lab_clean_reads_any_journal_as_far_as_it_is_sound(case, tmp_path, monkeypatch):
    """Never raises out (only UndoFailed, which `lab clean` reports per run), never acts
    outside the own folder, and undoes every sound record."""
    lines, sound = case
    folder = tmp_path / f"case-{os.urandom(4).hex()}"
    own = folder / "own"
    own.mkdir(parents=True)
    monkeypatch.setattr(tracked, "STOP_DIR", str(own / "stop"))
    recorder = Recorder()
    monkeypatch.setattr(journal_mod, "node_from_description", lambda desc: recorder)
    path = folder / "journal.jsonl"
    path.write_text("\n".join(lines).replace("{ROOT}", str(own)) + "\n")
    with only_roots(str(own)):
        journal = Journal(path)
        try:
            journal.undo_all()
        except UndoFailed:
            pass
    removed = []
    for cmd in recorder.commands:
        if cmd.startswith("p="):  # guarded_remove: the one way a path is removed
            removed.append(cmd[2:].split(";", 1)[0].strip("'"))
    assert all(p.startswith(str(own) + "/") for p in removed), removed
    assert {f"{own}/harness-{seq}" for seq in range(1, sound + 1)} <= set(removed)
    undone = {e.seq for e in journal.entries() if e.undone}
    assert set(range(1, sound + 1)) <= undone
    assert not any("kill" in c and " -1 " in c for c in recorder.commands)


def test_a_folder_the_run_chose_is_undone_by_the_run_but_never_from_a_file(tmp_path, root):
    """S2's server_disk_dir: harness-RUN in a folder the user named, outside the own folders.
    The run that recorded it removes it; a journal read back from disk may not."""
    chosen = root.parent / "outside" / "harness-run-1"
    chosen.mkdir()
    journal = Journal(tmp_path / "j.jsonl")
    journal.record("file", LocalNode(), path=str(chosen))
    again = Journal(tmp_path / "j.jsonl")
    with pytest.raises(UndoFailed, match="outside the folders"):
        again.undo_all()
    assert chosen.is_dir()
    journal.undo_all()
    assert not chosen.exists() and sentinels_intact(root)


# -- journal files that are not files, and kinds that are not names ------------------------------

def test_lab_clean_refuses_a_journal_that_is_not_a_regular_file_and_cleans_the_others(
        tmp_path, root, monkeypatch, capsys):
    """A folder, a FIFO (reading it blocked for ever), a symlink, a file of another user or
    one every user may write, under the name journal.jsonl: that run is reported, the next
    run is still cleaned, the exit is 1."""
    from harness import cli
    from harness.archive.archive import Run

    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))
    data = tmp_path / "data"
    elsewhere = root / "harness-linked"  # what the linked journal would have removed
    elsewhere.mkdir()
    linked = tmp_path / "linked.jsonl"
    write(linked, do_line(1, str(elsewhere)))
    def theirs(path, mode=0o644, uid=65534):
        write(path, do_line(1, str(elsewhere)))  # this machine and boot, as anyone can read
        os.chown(path, uid, uid)
        path.chmod(mode)

    for make in (lambda p: p.mkdir(), lambda p: os.mkfifo(p), lambda p: p.symlink_to(linked),
                 theirs, lambda p: theirs(p, 0o666, os.geteuid())):
        make(Run.create("s0", {}, data).path / "journal.jsonl")
    made = root / "harness-sound"
    made.mkdir()
    write(Run.create("s0", {}, data).path / "journal.jsonl", do_line(1, str(made)))
    assert cli.main(["lab", "clean", "--data", str(data)]) == 1
    out = capsys.readouterr().out
    assert out.count("cannot be read") == 5, out
    assert "not a regular file" in out and "symlink is not followed" in out
    assert "another user wrote it" in out and "every user may write to it" in out
    assert not made.exists() and elsewhere.is_dir() and sentinels_intact(root)


@pytest.mark.parametrize("kind", ["file\x1b]0;owned\x07", "file\nwarning: all clean", "FILE",
                                  "x" * 65, ""])
def test_a_kind_that_is_no_handlers_name_is_an_unsound_line(tmp_path, root, kind):
    """`lab clean` prints each pending record's kind as it is: one with terminal escapes or
    a line break is skipped as unsound, never printed."""
    write(tmp_path / "j.jsonl", {**do_line(1, str(root / "harness-x")), "kind": kind})
    journal = Journal(tmp_path / "j.jsonl")
    assert journal.pending() == [] and len(journal.problems) == 1
    assert "\x1b" not in journal.problems[0] and "\n" not in journal.problems[0]


@pytest.mark.parametrize("vm", [{"ssh_port": []}, {}, {"ssh_port": {"a": 1}}, {"ssh_port": True}])
def test_a_vm_record_of_the_wrong_shape_names_no_vm_and_the_rest_is_cleaned(tmp_path, root, vm):
    """`lab clean` first drops the changes made inside a run's VMs (they end with QEMU); a
    QEMU record whose port is not a number (an unhashable list was a TypeError that left
    the run's every change undone) names no VM."""
    from harness.vm import forget_changes_in_vms

    made = root / "harness-made"
    made.mkdir()
    qemu = {**do_line(1, ""), "kind": "process", "module": "harness.journal.journal",
            "data": {"pid": 4242, "start_ticks": 1, "vm": vm}}
    inside = {**do_line(2, str(made)), "node": {"type": "ssh", "name": "vm", "host": "127.0.0.1",
                                                "port": 1}}
    write(tmp_path / "j.jsonl", qemu, inside, do_line(3, str(made)))
    journal = Journal(tmp_path / "j.jsonl")
    assert forget_changes_in_vms(journal) == 0
    assert [e.seq for e in journal.pending()] == [1, 2, 3]


def test_an_ssh_node_of_a_journal_is_asked_nothing_before_its_host_key_is_verified(tmp_path):
    """A record of an SSH node whose host key is not in its known_hosts (the record asks to
    accept unknown keys): its machine is never asked who it is -- the client stops at the
    key exchange, no login is tried, no command sent -- and the record is refused saying so."""
    import socket
    import threading

    import paramiko

    tried = []

    class Iface(paramiko.ServerInterface):
        def get_allowed_auths(self, username):
            tried.append(username)
            return "publickey"

        def check_auth_publickey(self, username, key):
            tried.append(username)
            return paramiko.AUTH_FAILED

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    transports = []

    def serve():
        conn, _ = server.accept()
        transport = paramiko.Transport(conn)
        transport.add_server_key(paramiko.RSAKey.generate(2048))
        transports.append(transport)
        try:
            transport.start_server(server=Iface())
        except (paramiko.SSHException, EOFError, OSError):
            pass

    threading.Thread(target=serve, daemon=True).start()
    known = tmp_path / "known_hosts"
    known.write_text("")
    node = {"type": "ssh", "name": "n", "host": "127.0.0.1", "port": server.getsockname()[1],
            "user": "root", "known_hosts": str(known), "accept_unknown_host": True,
            "connect_timeout": 10}
    write(tmp_path / "j.jsonl", {**do_line(1, "/tmp/harness-x"), "node": node})
    try:
        with pytest.raises(UndoFailed, match="could not be asked who it is.*not known"):
            Journal(tmp_path / "j.jsonl").undo_all()
    finally:
        server.close()
        for transport in transports:
            transport.close()
    assert tried == [] and known.read_text() == ""


def test_an_unmount_record_never_runs_its_path_even_when_its_mount_is_hidden(tmp_path):
    """The path reaches the shell quoted in every branch: the message for a mount hidden
    by another put it inside double quotes, where $(...) and `...` run (a user may FUSE-mount
    on a path of that name). Run against a mounts table in which it is hidden."""
    from harness.config.mounts import unmount_script

    mark = tmp_path / "EXECUTED"
    path = f"/mnt/a`touch${{IFS}}{mark}`$(touch${{IFS}}{mark})"  # no space: one field
    table = tmp_path / "mounts"
    table.write_text(f"srv:/v {path} nfs4 rw 0 0\nother {path} tmpfs rw 0 0\n")
    script = unmount_script(path, "nfs4", "srv:/v").replace("/proc/mounts", str(table))
    res = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10)
    assert res.returncode == 1 and f"{path} is hidden by other tmpfs" in res.stderr
    assert not mark.exists()


# -- issue 37: records that reach beyond what the harness made -----------------------------------

def test_a_process_record_whose_command_is_not_what_runs_there_signals_nobody(sentinel_process):
    """The pid and start tick are the sentinel's (both world-readable), the command is not:
    refused with what runs there, nothing signalled. A record without a command (as a forger
    or older code may write it) is refused before any command is sent."""
    record = {"pid": sentinel_process.pid, "start_ticks": process_start_ticks(sentinel_process.pid)}
    with pytest.raises(RefusedRecord, match=r"process \d+ \(start tick \d+\) runs 'sleep 600', "
                                            r"not the command .*'iperf3 -s'"):
        _HANDLERS["process"](LocalNode(), {**record, "command": "iperf3 -s"})
    for local in (True, False):
        node = Recorder(local=local)
        with pytest.raises(RefusedRecord, match="no command line the harness started"):
            _HANDLERS["process"](node, dict(record))
        assert node.commands == []
    time.sleep(0.2)
    assert sentinel_process.poll() is None


def _zombie(command: str) -> subprocess.Popen:
    """A group leader that ran ``command`` and ended, left unreaped (as the srd of a harness
    killed by SIGKILL is, when the machine's init does not reap): its command line is empty."""
    leader = subprocess.Popen(["sh", "-c", command], start_new_session=True)
    deadline = time.monotonic() + 10
    while read_stat(leader.pid).state != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return leader


def test_a_leader_that_has_ended_is_gone_not_a_stranger():
    """CI 2026-11-29: a SIGKILL left the run's relay a zombie; its empty command line was
    read as another program's and `lab clean` refused the record (exit 1). An ended leader
    with no running member is nothing left to stop."""
    leader = _zombie("exit 0")
    _HANDLERS["process"](LocalNode(), {"pid": leader.pid, "command": "exit 0",
                                       "start_ticks": process_start_ticks(leader.pid)})
    leader.wait(timeout=5)


def test_an_ended_leader_whose_group_still_runs_is_refused_and_nobody_signalled():
    leader = _zombie("sleep 66 & exit 0")
    (member,) = group_running(leader.pid)
    try:
        with pytest.raises(RefusedRecord, match=rf"has ended, but processes of its group still "
                                                rf"run \({member}\)"):
            _HANDLERS["process"](LocalNode(), {"pid": leader.pid, "command": "sleep 66 & exit 0",
                                               "start_ticks": process_start_ticks(leader.pid)})
        assert group_running(leader.pid) == [member]
    finally:
        os.kill(member, signal.SIGKILL)
        leader.wait(timeout=5)


@pytest.mark.parametrize("command", [
    "sleep 61",  # the shell stays the leader (dash)
    "exec sleep 62",  # the shell execs the program
    "echo $$ >/dev/null && exec sh -c 'exec sleep 63 2>/dev/null'",  # harness.nodes.local.in_cgroup
    "nsenter --help >/dev/null; exec env A=1 sleep 64",
])
def test_a_process_the_harness_started_is_stopped_from_a_journal_read_back(tmp_path, command):
    """Journal.start records the command; read back (as `lab clean` does), the leader's
    command line -- the shell, or the program it exec'd -- matches, and the group is stopped."""
    journal = Journal(tmp_path / "j.jsonl")
    proc = journal.start(LocalNode(), command)
    reaper(proc._popen)
    time.sleep(0.3)  # let the shell exec
    again = Journal(tmp_path / "j.jsonl")
    (entry,) = again.pending()
    assert entry.loaded and entry.data["command"] == command
    again.undo_all()
    assert proc._popen.wait(timeout=10) in (-signal.SIGTERM, 128 + signal.SIGTERM)


def test_a_remote_processs_session_leader_matches_its_record(root):
    """A node's process (harness.nodes.remote_process) is led by a ``sh -c`` holding
    ``harness-proc`` and the command: stopped from its record, refused for another command."""
    from harness.nodes.remote_process import ShellProcess

    procs = [ShellProcess.start(LocalNode(), "sleep 65\necho done") for _ in range(2)]
    try:
        first, second = (p.info for p in procs)
        with pytest.raises(RefusedRecord, match="harness-proc"):
            _HANDLERS["process"](_ShellLocal(), {"pid": first.pid, "start_ticks": first.start_ticks,
                                                 "command": "sleep 65"})
        assert procs[0].poll() is None and procs[1].poll() is None
        _HANDLERS["process"](_ShellLocal(), {"pid": first.pid, "start_ticks": first.start_ticks,
                                             "command": first.command})
        assert procs[0].wait(10) is not None and procs[1].poll() is None
    finally:
        for proc in procs:
            proc.stop(grace=1)


@pytest.mark.parametrize("kind, data, words", [
    ("unmount", {"path": "/mnt/harness-x", "fstype": "nfs4", "source": "s:/x", "made": True},
     "umount /mnt/harness-x"),
    ("unmount", {"path": "/proc/fs/nfsd", "fstype": "nfsd", "source": "nfsd"}, "umount /proc/fs/nfsd"),
    ("unmount", {"path": "/var/lib/nfs", "fstype": "tmpfs", "source": "harness-state"},
     "umount /var/lib/nfs"),
    ("glusterfs-unmount", {"path": "/mnt/g", "fstype": "fuse.glusterfs", "source": "s:/v",
                           "made": True}, "umount /mnt/g"),
    ("mountpoint", {"path": "/mnt/harness-x", "made": True}, "rmdir /mnt/harness-x"),
    ("lab-disk", {"mountpoint": "/run/s2/disk-nfs", "made": True}, "rmdir /run/s2/disk-nfs"),
])
def test_a_mount_record_of_a_mountpoint_the_harness_made_is_still_undone(kind, data, words):
    node = Recorder()
    _HANDLERS[kind](node, data)
    assert any(words in cmd for cmd in node.commands), node.commands


def test_journals_and_run_folders_are_private_under_a_group_umask_in_a_setgid_folder(tmp_path):
    """A Slurm job with umask 002 in a setgid project folder (issue 37): the run folder is
    0700 and its journal 0600 all the same, so no colleague can add a record to it."""
    from harness.archive.archive import Run

    project = tmp_path / "project"
    project.mkdir()
    project.chmod(0o2775)
    old = os.umask(0o002)
    try:
        run = Run.create("s0", {}, project)
        run.journal.record("file", LocalNode(), path="/tmp/harness-never-made")
    finally:
        os.umask(old)
    for path, mode in ((run.path, 0o700), (run.path / "raw", 0o700),
                       (run.path / "journal.jsonl", 0o600)):
        assert path.stat().st_mode & 0o777 == mode, (path, oct(path.stat().st_mode))


@pytest.mark.parametrize("mode", [0o664, 0o620, 0o660])
def test_lab_clean_refuses_a_journal_its_group_may_write_saying_how_to_fix_it(
        tmp_path, root, monkeypatch, capsys, mode):
    """The user's own journal, but the group may write to it: a colleague could have added a
    record. Refused, naming the file, its mode and the chmod; after the chmod it is cleaned."""
    from harness import cli
    from harness.archive.archive import Run

    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))
    data = tmp_path / "data"
    made = root / "harness-made"
    made.mkdir()
    journal = Run.create("s0", {}, data).path / "journal.jsonl"
    write(journal, do_line(1, str(made)))
    journal.chmod(mode)
    assert cli.main(["lab", "clean", "--data", str(data)]) == 1
    out = capsys.readouterr().out
    assert f"journal {journal} cannot be read: mode {mode:04o}: its group may write to it" in out
    assert f"chmod g-w,o-w {journal}" in out and made.is_dir()
    journal.chmod(0o600)
    assert cli.main(["lab", "clean", "--data", str(data)]) == 0
    assert not made.exists()


ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b1A"


def test_a_hostname_with_terminal_escapes_is_refused_and_never_printed(tmp_path, root,
                                                                       monkeypatch, capsys):
    """A record naming its machine with terminal escapes (issue 37): not a hostname, so the
    record is refused saying so, and what `lab clean` prints holds no escape -- nor does a
    run folder's name that holds some."""
    from harness import cli
    from harness.archive.archive import Run
    from harness.journal.machineid import MachineId, parse_identity

    boot = local_identity().boot_id
    assert MachineId.from_dict({"hostname": "h" + ESCAPES, "boot_id": boot}) is None
    assert parse_identity(f"harness-machine h{ESCAPES} {boot}\n") is None
    assert parse_identity(f"harness-machine host-1.example.org {boot}\n") is not None
    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))
    data = tmp_path / "data"
    made = root / "harness-made"
    made.mkdir()
    run = Run.create("s0", {}, data)
    write(run.path / "journal.jsonl",
          {**do_line(1, str(made)), "machine": {"hostname": "h" + ESCAPES, "boot_id": boot}})
    run.path.rename(run.path.with_name(run.path.name + ESCAPES))
    assert cli.main(["lab", "clean", "--data", str(data)]) == 1
    out = capsys.readouterr().out
    assert "which is not a hostname" in out and made.is_dir()
    assert not any(c in out for c in "\x1b\x07\x9b"), out
    assert "\\x1b]0;owned\\x07" in out
