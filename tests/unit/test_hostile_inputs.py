"""Hostile inputs the harness reads (issue 26): run.json, notebook metadata, sweep files,
cached binaries and the values validators check. One row per kind: each is refused or
neutralised, nothing outside the test's own folder is touched, and no code from the input
runs -- a sentinel module (or program) writes a file when imported (or run), and that file
must not exist at the end. (Journals and stop files: tests/unit/test_hostile_journal.py.)"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from harness import cbuild
from harness.archive.archive import ArchiveError, Run, archived_notebook, project_root
from harness.errors import SpecError
from harness.run.rerun import checkout_notebook, plan
from harness.studies.registry import study_for

ROOT = project_root()


@pytest.fixture
def sentinel(tmp_path):
    """A module and a program that leave ``tmp_path/EXECUTED`` if anything runs them."""
    mark = tmp_path / "EXECUTED"
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "sentinel.py").write_text(f"open({str(mark)!r}, 'w').write('imported')\n")
    (evil / "sentinel.sh").write_text(f"#!/bin/sh\necho ran > {mark}\necho planted\n")
    (evil / "sentinel.sh").chmod(0o755)
    yield evil
    assert not mark.exists(), "code from a hostile input ran"


def notebook(folder: Path, study: str, module=None, name: str = "nb.ipynb") -> Path:
    meta = {"study": study, **({"module": module} if module is not None else {})}
    path = folder / name
    path.write_text(json.dumps({"cells": [], "nbformat": 4, "nbformat_minor": 5,
                                "metadata": {"harness": meta}}))
    return path


# -- notebook metadata: what `harness params`, `lab show` and `run --dry-run` read ----------

@pytest.mark.parametrize("module", [
    "../evil/sentinel.py",              # leaves the notebook's folder
    "{evil}/sentinel.py",               # an absolute path
    "sub/../../evil/sentinel.py",       # a path at all
    "os",                               # a module that is not the harness's studies
    "harness.studies.x;import os",      # not a module name
    ["sentinel.py"],                    # not text
    "link.py",                          # a symlink beside the notebook, to the sentinel
])
def test_notebook_metadata_names_a_module_outside_its_folder(tmp_path, sentinel, module):
    folder = tmp_path / "nbs"
    folder.mkdir()
    (folder / "link.py").symlink_to(sentinel / "sentinel.py")
    if isinstance(module, str):
        module = module.format(evil=sentinel)
    path = notebook(folder, "no-such-study", module)
    with pytest.raises(SpecError, match="harness.module"):
        study_for(str(path))


@pytest.mark.parametrize("content", [
    "[1, 2]", '{"metadata": []}', '{"metadata": {"harness": "s0"}}',
    '{"metadata": {"harness": {"study": ["s0"]}}}', '{"metadata": {"harness": {"study": 7}}}',
    b"\xff\xfe not text",
])
def test_notebook_metadata_of_the_wrong_shape_is_one_error(tmp_path, content):
    """Each was an AttributeError or TypeError traceback out of `harness params`/`lab show`."""
    path = tmp_path / "nb.ipynb"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(SpecError, match="notebook|harness.study"):
        study_for(str(path))


# -- run.json: what `harness rerun` reads ----------------------------------------------------

@pytest.mark.parametrize("meta, field", [
    ("[]", "not a mapping"), ("{", "cannot be read"),
    ({"study": ["s0"], "notebook": "notebooks/s0_relay.ipynb"}, "'study'"),
    ({"study": "s0", "notebook": ["x"]}, "'notebook'"),
    ({"study": "s0", "notebook": "x.ipynb", "parameters": [1]}, "'parameters'"),
    ({"study": "s0", "notebook": "x.ipynb", "provenance": "x"}, "'provenance'"),
    ({"study": "s0", "notebook": "x.ipynb", "provenance": {"git": []}}, "'provenance.git'"),
    ({"study": "s0", "notebook": "x.ipynb", "placement": {"scaling": 2}}, "'placement.scaling'"),
])
def test_a_run_json_of_the_wrong_shape_is_refused_naming_the_field(tmp_path, meta, field):
    """A run folder from elsewhere: one error before anything runs (these were tracebacks)."""
    run = Run.create("s0", {}, tmp_path / "data")
    (run.path / "run.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    with pytest.raises(SpecError, match=field):
        plan(Run(run.path))


def make_original(data: Path, study: str, named: str) -> Run:
    run = Run.create(study, {}, data)
    meta = json.loads((run.path / "run.json").read_text())
    meta["notebook"] = named  # as a run folder from elsewhere may say
    (run.path / "run.json").write_text(json.dumps(meta))
    return Run(run.path)


@pytest.mark.parametrize("named", [
    "{evil}/s1_via.ipynb",                    # absolute, elsewhere, named like the study's
    "../../../../{evil}/s1_via.ipynb",        # relative, leaving the checkout
    "notebooks/../../{evil}/s1_via.ipynb",
])
def test_run_json_naming_a_notebook_elsewhere_reruns_the_checkouts(tmp_path, sentinel, named):
    notebook(sentinel, "s1", "../evil/sentinel.py", name="s1_via.ipynb")
    original = make_original(tmp_path / "data", "s1", named.format(evil=sentinel))
    found, note = checkout_notebook(original)
    assert found == ROOT / "notebooks" / "s1_via.ipynb" and note is None


def test_run_json_of_a_study_without_a_notebook_here_is_refused_naming_it(tmp_path, sentinel):
    hostile = notebook(sentinel, "ping-demo", "../evil/sentinel.py")
    original = make_original(tmp_path / "data", "ping-demo", str(hostile))
    with pytest.raises(SpecError, match=r"notebooks of study 'ping-demo': none"):
        plan(original)


def test_the_committed_reference_runs_rerun_their_studys_notebook():
    """They name folders of the machine that made them (/tmp/ref/..., /work/main/...)."""
    refs = sorted((ROOT / "data" / "reference").glob("*/*/run.json"))
    assert refs
    runs = [p.parent for p in refs if not (p.parent / "members").is_dir()]
    runs += [m for p in refs for m in sorted((p.parent / "members").glob("*")) if m.is_dir()]
    for folder in runs:  # a pooled reference has no notebook: its members do
        run = Run(folder)
        found, _note = checkout_notebook(run)
        assert found.parent == ROOT / "notebooks" and archived_notebook(run.meta).name == found.name


def test_new_runs_name_their_notebook_relative_to_the_project(tmp_path):
    run = Run.create("s1", {}, tmp_path, notebook=str(ROOT / "notebooks" / "s1_via.ipynb"))
    assert run.meta["notebook"] == "notebooks/s1_via.ipynb"
    assert archived_notebook(run.meta) == ROOT / "notebooks" / "s1_via.ipynb"


# -- sweep files: `harness batch` --------------------------------------------------------------

def test_a_sweep_whose_notebook_imports_from_elsewhere_is_refused(tmp_path, sentinel):
    from harness.run.execute import check_parameters
    from harness.run.sweep import Sweep

    folder = tmp_path / "nbs"
    folder.mkdir()
    notebook(folder, "no-such-study", "../evil/sentinel.py")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("notebook: nbs/nb.ipynb\nsweep: {count: [2, 3]}\n")
    loaded = Sweep.load(sweep)
    with pytest.raises(SpecError, match="harness.module"):
        check_parameters(loaded.notebook, loaded.points()[0])


def test_a_sweep_is_counted_before_its_points_are_built(tmp_path):
    """9 axes of 10 values in a two-line file were 10^9 points: a MemoryError after filling
    the machine's memory. Counted first, it is one error."""
    from harness.run.sweep import Sweep

    folder = tmp_path / "nbs"
    folder.mkdir()
    notebook(folder, "s4")
    axes = ", ".join(f"{name}: [{', '.join(map(str, range(10)))}]" for name in "abcdefghi")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"notebook: nbs/nb.ipynb\nsweep: {{{axes}}}\n")
    with pytest.raises(SpecError, match="1000000000 points, more than 10000"):
        Sweep.load(sweep)


@pytest.mark.parametrize("content", ["[]", "{", "\"text\"", '{"no": "status"}'])
def test_a_damaged_run_json_is_passed_over_by_listings(tmp_path, monkeypatch, capsys, content):
    """One run.json that is not a run's record (a list, torn JSON): `harness runs`, `batch`
    and `compare` list the others (a TypeError out of each before)."""
    from harness import cli
    from harness.archive.archive import COMPLETE, list_runs

    data = tmp_path / "data"
    damaged = Run.create("s0", {}, data)
    (damaged.path / "run.json").write_text(content)
    good = Run.create("s0", {}, data)
    good.finish(COMPLETE)
    assert list_runs("s0", data, COMPLETE) == [good]
    monkeypatch.setenv("HARNESS_DATA", str(data))
    assert cli.main(["runs"]) == 0
    out = capsys.readouterr().out
    assert f"unreadable {damaged.path}" in out and f"complete   {good.path}" in out


@pytest.mark.parametrize("value, message", [
    ("1-10000000000", "out of range"),  # was a list of 10^10 integers before the check
    ("5-1", "backwards"),
])
def test_a_swept_range_is_checked_before_it_is_expanded(value, message):
    from harness.studies.parameters import int_list

    with pytest.raises(SpecError, match=message):
        int_list("streams", value, 1, 64)
    with pytest.raises(SpecError, match="more than 10000 values"):
        int_list("sizes", "1-10000000000", 1, None)
    with pytest.raises(SpecError, match="more than 10000 values"):  # each range in bounds
        int_list("sizes", ",".join(["1-9999"] * 300), 1, None)
    assert len(int_list("sizes", "1-5000,5001-10000", 1, None)) == 10000


# -- cached binaries: a helper compiled on a remote node ---------------------------------------

@pytest.mark.skipif(not (shutil.which("gcc") or shutil.which("cc")), reason="no C compiler")
def test_a_planted_cached_binary_is_not_run(tmp_path, sentinel, monkeypatch):
    from harness.nodes.local import LocalNode

    class Remote(LocalNode):
        is_local = False

    monkeypatch.setattr(cbuild, "SHARED_TMP", str(tmp_path))
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\nint main(void){puts("hello");return 0;}\n')
    program = cbuild.CProgram("hello", src, ("-O0",), "the test program")
    cache = tmp_path / "cache"
    key = program.cache_key(src.read_bytes(), cbuild.compiler_id(cbuild.local_compiler()))
    for where in (cache / "harness" / "hello" / key,  # the node's cache, and the old shared
                  tmp_path / "harness-cache-hello" / key):  # fallback anyone could name
        where.mkdir(parents=True)
        shutil.copy(sentinel / "sentinel.sh", where / "hello")
    (cache / "harness" / "hello" / key / "hello.sha256").write_text("0" * 64 + "\n")
    binary = program.build_on(Remote("r", prefix=["env", f"XDG_CACHE_HOME={cache}"]),
                              reuse_host_build=False)
    import subprocess

    assert subprocess.run([binary], capture_output=True, text=True).stdout == "hello\n"


# -- validators: one value each that only passed because of a trailing newline -----------------

def _patterns():
    from harness.config import glusterfs, gpfs, gpfs_remote, mounts, nfs
    from harness.tools import fio

    return [("gpfs name", gpfs._NAME, "fs1"), ("gpfs size", gpfs._SIZE, "4M"),
            ("gpfs value", gpfs._VALUE_WORD, "yes"), ("gpfs remote path", gpfs_remote._PATH, "/g"),
            ("gpfs remote name", gpfs_remote._GPFS_NAME, "fs1"),
            ("mount host", mounts._HOST, "server1"), ("mount ipv6", mounts._HOST, "fd00::1"),
            ("mount option", mounts._OPTION, "vers=4.2"), ("mount path", mounts._PATH, "/mnt/x"),
            ("mount fstype", mounts._FSTYPE, "nfs4"), ("mount source", mounts._SOURCE, "h:/x"),
            ("gluster volume", glusterfs._VOLUME, "gv0"), ("gluster key", glusterfs._KEY, "a.b"),
            ("gluster value", glusterfs._VALUE, "on"), ("nfs client", nfs._CLIENT, "10.0.0.0/24"),
            ("fio name", fio._NAME, "job1"), ("fio path", fio.PATH, "/data/f"),
            *_patterns_since()]


def _patterns_since():
    """Validators found still written ``^...$`` by the audit of 2026-11-27 (TIPC, RDMA, NAT,
    relay host names, topology names) and the patterns the undo checks use."""
    from harness.config import cgroup, interface, kmod, nat, rdma, sysctl, tipc
    from harness.journal import handlers as journal_handlers
    from harness.journal import tracked, undo_checks
    from harness.relay import spec
    from harness.topology import topology

    return [("tipc bearer", tipc._NAME, "b1"), ("tipc identity", tipc._IDENTITY, "n1"),
            ("rdma link", rdma._LINK_NAME, "rxe0"), ("rdma netdev", rdma._NETDEV, "eth0"),
            ("nat label", nat._LABEL, "nat"), ("nat device", nat._DEVICE, "eth0"),
            ("nat table", nat._OWN_TABLE, "harness_nat_1"),
            ("relay host label", spec._LABEL, "server1"),
            ("topology ifname", topology.IFNAME, "eth0"),
            ("topology node", topology.NODENAME, "h1"), ("topology disk", topology.DISKNAME, "d1"),
            ("undo ifname", undo_checks.IFNAME, "veth0"), ("undo name", undo_checks.NAME, "ns1"),
            ("undo sysctl", undo_checks.SYSCTL_KEY, "net.ipv4.ip_forward"),
            ("undo module", undo_checks.MODULE, "harness.journal.journal"),
            ("sysctl key", sysctl._KEY, "net.ipv4.ip_forward"), ("sysctl value", sysctl._VALUE, "1"),
            ("kernel module", kmod._MODULE_NAME, "tipc"), ("offload", interface._FEATURE, "tso"),
            ("own cgroup", cgroup._OWN_CGROUP, "harness-x-1"),
            ("cgroup controller", cgroup._CONTROLLER, "cpu"),
            ("process log", journal_handlers._PROCESS_LOG, "harness-proc-abc123"),
            ("stop file", tracked.NAME, tracked.PREFIX + "0" * 16)]


@pytest.mark.parametrize("what, pattern, good", _patterns(), ids=[p[0] for p in _patterns()])
def test_a_trailing_newline_no_longer_passes_a_validator(what, pattern, good):
    assert pattern.match(good) and not pattern.match(good + "\n")


def test_the_checks_built_on_them_refuse_it_with_one_error():
    from harness.config import gpfs, gpfs_remote, mounts

    for check, good in ((lambda v: gpfs.check_name("device", v), "fs1"),
                        (lambda v: gpfs_remote.check_path("path", v), "/gpfs/fs1"),
                        (lambda v: mounts.check_path("path", v), "/mnt/x"),
                        (lambda v: mounts.check_host("host", v), "server1"),
                        (lambda v: mounts.check_options("options", [v]), "vers=4.2")):
        check(good)
        with pytest.raises(SpecError):
            check(good + "\n")


# -- files the archive writes, and a cgroup path reaching a shell ------------------------------

def test_specs_with_a_trailing_newline_are_refused_with_one_error():
    """The checks on the patterns above, as a study or an inventory reaches them."""
    from harness.config import nat, rdma, tipc
    from harness.nodes.local import LocalNode
    from harness.relay.spec import check_host
    from harness.topology.topology import DataDisk, Link, LinkEnd, Topology
    from harness.topology.topology import TopologyNode as Node

    def topology(node="h1", ifname="eth0", disk=None):
        return Topology("t", (Node(node, machine="m1", whole_machine=disk is not None,
                                   disks=(DataDisk(disk, 64),) if disk else ()),
                              Node("h2")),
                        (Link(LinkEnd(node, ifname, "10.0.0.1/24"),
                              LinkEnd("h2", "eth0", "10.0.0.2/24")),))

    checks = [(lambda v: tipc.bearer_args("eth", dev=v), "eth0"),
              (lambda v: tipc.bearer_args("udp", name=v, localip="10.0.0.1"), "b1"),
              (lambda v: tipc.TipcNode(LocalNode(), v, "eth", {"dev": "eth0"}).check(), "n1"),
              (lambda v: rdma.RxeLink(LocalNode(), v, "eth0").check(), "rxe0"),
              (lambda v: rdma.RxeLink(LocalNode(), "rxe0", v).check(), "eth0"),
              (lambda v: nat._device(v), "eth0"),
              (lambda v: check_host(v, "relay target", numeric=False), "server1"),
              (lambda v: topology(node=v).validate(), "h1"),
              (lambda v: topology(ifname=v).validate(), "eth0"),
              (lambda v: topology(disk=v).validate(), "d1")]
    for check, good in checks:
        check(good)
        with pytest.raises(SpecError):
            check(good + "\n")


def test_archive_add_file_neither_follows_nor_replaces(tmp_path):
    run = Run.create("s1", {}, tmp_path / "data")
    secret = tmp_path / "secret"
    secret.write_text("not for the archive")
    link = tmp_path / "link.ipynb"
    link.symlink_to(secret)
    with pytest.raises(ArchiveError, match="symlink is not followed"):
        run.add_file("notebook.ipynb", link)
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (run.path / "planted.ipynb").symlink_to(victim)
    real = tmp_path / "real.ipynb"
    real.write_text("{}")
    with pytest.raises(ArchiveError, match="exists already"):
        run.add_file("planted.ipynb", real)
    with pytest.raises(ArchiveError, match="must not contain a path"):
        run.add_file("../escape.ipynb", real)
    assert victim.read_text() == "untouched" and not (tmp_path / "data" / "escape.ipynb").exists()
    assert run.add_file("notebook.ipynb", real).read_text() == "{}"


def test_a_cgroup_path_is_quoted_in_the_shell(tmp_path, sentinel):
    from harness.nodes.local import in_cgroup

    mark = tmp_path / "EXECUTED"
    cmd = in_cgroup("true", f"/sys/fs/cgroup/x; echo ran > {mark}; :")
    import subprocess

    subprocess.run(["sh", "-c", cmd], capture_output=True)
    assert not mark.exists()


# -- inventory: ssh-agent only where the inventory asks for it --------------------------------

@pytest.mark.parametrize("entry, offered", [({}, False), ({"ssh_agent": False}, False),
                                            ({"ssh_agent": True}, True)])
def test_the_agent_is_offered_only_to_a_node_whose_inventory_says_so(monkeypatch, entry, offered):
    """An agent offers every key it holds to whichever host asks (an impostor that passed a
    careless known_hosts too): paramiko's allow_agent follows the node's entry, default off;
    and a journal's description of the node never turns it on."""
    from harness.errors import NodeError
    from harness.machines.inventory import Inventory
    from harness.nodes import node_from_description, ssh_login

    seen = []

    class Client:
        def connect(self, *args, **kwargs):
            seen.append(kwargs["allow_agent"])
            raise OSError(111, "Connection refused")

        def get_transport(self):
            return None

        def close(self):
            pass

    monkeypatch.setattr(ssh_login.paramiko, "SSHClient", Client)
    monkeypatch.setattr(ssh_login, "check_host_keys", lambda *a, **k: None)
    inv = Inventory.from_dict({"ssh": {"known_hosts": "/nonexistent"},
                               "nodes": {"a": {"host": "192.0.2.1", **entry}}})
    node = inv.connect("a")
    assert node.allow_agent is offered
    for each in (node, node_from_description(node.describe())):
        with pytest.raises(NodeError):
            each.run("true")
    assert seen == [offered, False]


def test_ssh_agent_must_be_yes_or_no_in_yaml():
    from harness.machines.inventory import Inventory

    with pytest.raises(SpecError, match="ssh_agent must be true or false"):
        Inventory.from_dict({"nodes": {"a": {"host": "h", "ssh_agent": "yes"}}})


def test_finishing_a_run_never_changes_a_file_a_symlink_in_it_names(tmp_path):
    """A complete run is made read-only file by file; a link in its folder is not followed."""
    import os
    import stat

    victim = tmp_path / "victim"
    victim.write_text("stays writable")
    victim.chmod(0o644)
    run = Run.create("s0", {}, tmp_path / "data")
    (run.path / "raw" / "planted").symlink_to(victim)
    run.add_raw("out.txt", "x")
    run.finish("complete")
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert not os.stat(run.path / "raw" / "out.txt").st_mode & 0o222


# -- shared folders and nodes with other local users (issue 37) --------------------------------

def test_a_submission_record_never_writes_through_a_planted_link(tmp_path):
    """A sweep's DATA/slurm/submissions/JOBID.json was written through a fixed JOBID.tmp: in a
    shared data folder someone could plant that name as a link, and root's write went to the
    file it names."""
    from harness.slurm.submit import Submission, submissions_dir

    victim = tmp_path / "victim"
    victim.write_text("untouched")
    folder = submissions_dir(tmp_path / "data")
    folder.mkdir(parents=True)
    (folder / "4242.tmp").symlink_to(victim)
    saved = Submission("4242", "sweep.yaml", "nb.ipynb", [{"count": 1}], "#!/bin/sh\n",
                       "2026-11-28T00:00:00+00:00").save(tmp_path / "data")
    assert victim.read_text() == "untouched"
    assert saved == folder / "4242.json" and not saved.is_symlink()
    assert json.loads(saved.read_text())["job_id"] == "4242"
    assert sorted(p.name for p in folder.iterdir()) == ["4242.json", "4242.tmp"]


def _plant_beside(log: Path, content) -> list[Path]:
    """What another local user of a node can do once ps shows a process's log: make the names
    a status file could have, in whichever of their folders is writable by everyone."""
    planted = []
    for path in (Path(f"{log}.status"), log.parent / "status"):
        if path.parent.stat().st_mode & 0o002 and not path.exists():
            content(path)
            planted.append(path)
    return planted


@pytest.mark.parametrize("plant", ["link", "fake status"])
def test_a_process_status_cannot_be_planted_in_a_nodes_shared_tmp(tmp_path, plant):
    """The exit status of a background process on a node (remote_process) was written beside
    its log in the node's /tmp, as root, under a name ps shows: a link planted there took
    root's write to the file it names, a file planted there was believed."""
    from harness.journal.handlers import remove_process_log
    from harness.nodes.local import LocalNode
    from harness.nodes.remote_process import ShellProcess

    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    node = LocalNode(prefix=["env", f"TMPDIR={shared}"])
    # the trap comes before "up", and stop() only after "up": a TERM that came before the
    # trap ended the command with 143, a status of its own (CI run of 2026-11-29)
    proc = ShellProcess.start(node, "trap '' TERM; echo up; sleep 30 & wait" if plant != "link"
                              else "echo up; sleep 0.3; exit 3")
    log = Path(proc.info.log)
    for _ in range(200):
        if "up" in proc.output():
            break
        time.sleep(0.05)
    assert log.is_relative_to(shared)
    planted = _plant_beside(log, (lambda p: p.symlink_to(victim)) if plant == "link"
                            else (lambda p: p.write_text("0\n")))
    try:
        if plant == "link":
            assert proc.wait(10) == 3
        else:  # killed: it wrote no status, so none may be read
            assert proc.stop(grace=0.2) == -9
        assert victim.read_text() == "untouched"
    finally:
        proc.stop()
        remove_process_log(node, proc.info.log)
    assert sorted(shared.iterdir()) == sorted(planted)  # the process's own files are gone


def test_lab_clean_stops_a_recorded_process_and_removes_its_folder(tmp_path):
    """After a crash, the journal's process record alone stops the process and takes its log
    folder away (log and status), as it took the log and status beside it before."""
    from harness.journal.journal import _HANDLERS, load_undo_handlers
    from harness.journal.undo_checks import only_roots
    from harness.nodes.local import LocalNode
    from harness.nodes.remote_process import ShellProcess

    load_undo_handlers()
    shared = tmp_path / "tmp"
    shared.mkdir()
    node = LocalNode(prefix=["env", f"TMPDIR={shared}"])
    proc = ShellProcess.start(node, "echo up; sleep 30")
    with only_roots(str(shared)):
        _HANDLERS["process"](LocalNode(), {"pid": proc.pid, "start_ticks": proc.info.start_ticks,
                                           "command": proc.info.command, "log": proc.info.log})
    assert proc.poll() is not None and list(shared.iterdir()) == []


@pytest.mark.skipif(not (shutil.which("gcc") or shutil.which("cc")), reason="no C compiler")
def test_a_host_build_is_reused_only_on_the_harness_own_vms(tmp_path, monkeypatch):
    """On an SSH machine the host binary's path is the node's own file: whoever can write it
    there could make its sha256 match, and swap it between that check and the run. The node
    builds its own, in its private cache; only a VM sharing the host's root reuses it."""
    from harness.nodes.local import LocalNode

    class SSHLike(LocalNode):  # another machine: same commands, none of the host's files
        is_local = False

    class VMLike(SSHLike):
        sees_host_root = True

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "host-cache"))
    monkeypatch.setattr(cbuild, "SHARED_TMP", str(tmp_path))
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\nint main(void){puts("hello");return 0;}\n')
    program = cbuild.CProgram("hello", src, ("-O0",), "the test program")
    host = str(program.build_local())
    node_cache = tmp_path / "node-cache"
    on_node = program.build_on(SSHLike("n", prefix=["env", f"XDG_CACHE_HOME={node_cache}"]))
    assert on_node != host and on_node.startswith(f"{node_cache}/harness/hello/")
    assert program.build_on(VMLike("vm")) == host


@pytest.mark.skipif(not (shutil.which("gcc") or shutil.which("cc")), reason="no C compiler")
def test_a_nodes_cache_below_a_folder_others_may_write_is_not_used(tmp_path, monkeypatch):
    """The node's private cache folder was checked alone: below a folder that others may
    write (a group-writable home, a login's ~/.cache where root builds under sudo) its owner
    could rename it away and put a folder of their own, binary and recorded sha256, in its
    place. Such a cache is passed over for the private fallback in the node's /tmp."""
    from harness.nodes.local import LocalNode

    class SSHLike(LocalNode):
        is_local = False

    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setattr(cbuild, "SHARED_TMP", str(shared))
    opened = tmp_path / "home"
    opened.mkdir()
    opened.chmod(0o777)  # not sticky: anyone may rename what is in it
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\nint main(void){puts("hello");return 0;}\n')
    program = cbuild.CProgram("hello", src, ("-O0",), "the test program")
    binary = program.build_on(SSHLike("n", prefix=["env", f"XDG_CACHE_HOME={opened}/.cache"]))
    assert binary.startswith(f"{shared}/harness-cache-") and not (opened / ".cache").exists()
    with pytest.raises(cbuild.BuildFailed, match=f"group or others may write {opened} "
                                                  r"\(mode 777\)"):
        cbuild.private_root(SSHLike("n"), (f"{opened}/.cache/harness",))


def test_finishing_a_run_whose_folder_became_a_link_changes_nothing_it_names(tmp_path):
    """A run folder inside a folder someone else may write can be swapped for a link to their
    victim's folder before the freeze; the freeze works through descriptors and refuses it."""
    import os
    import stat

    run = Run.create("s0", {}, tmp_path / "data")
    victim = tmp_path / "alice"
    victim.mkdir()
    (victim / "thesis.tex").write_text("keep writable")
    (victim / "thesis.tex").chmod(0o644)
    real = run.path.with_name("moved")
    run.path.rename(real)
    run.path.symlink_to(victim)
    with pytest.raises(ArchiveError, match="symlink .not followed.: nothing was made read-only"):
        run._freeze()
    (victim / "run.json").write_text((real / "run.json").read_text())  # as the swapper would
    with pytest.raises(ArchiveError, match="nothing was made read-only"):
        run.finish("complete")
    assert stat.S_IMODE(os.stat(victim / "thesis.tex").st_mode) == 0o644
    assert json.loads((victim / "run.json").read_text())["status"] == "incomplete"  # not written
    run.path.unlink()
    real.rename(run.path)
    (run.path / "raw" / "sub").symlink_to(victim)
    run.add_raw("out.txt", "x")
    run.finish("complete")
    assert stat.S_IMODE(os.stat(victim / "thesis.tex").st_mode) == 0o644
    assert not os.stat(run.path / "raw" / "out.txt").st_mode & 0o222
    assert not os.stat(run.path / "run.json").st_mode & 0o222


def test_pingpong_is_copied_into_a_folder_only_the_command_user_may_enter(tmp_path):
    """On a sudo node pingpong was copied by SFTP as the login into /tmp and run as root: a
    file the login (or its group) could change before root ran it. It is written by the
    node's command user into a folder that user made, 0700, and goes with the journal."""
    import os

    from harness.journal.journal import Journal
    from harness.nodes.local import LocalNode
    from harness.tools import pingpong

    copied = []

    class Remote(LocalNode):
        is_local = False

        def put(self, local_path, remote_path):
            copied.append(remote_path)
            super().put(local_path, remote_path)

    journal = Journal(tmp_path / "journal.jsonl")
    argv = pingpong.program(journal, Remote())
    path = Path(argv[-1])
    try:
        assert copied == [] and path.read_bytes() == Path(pingpong.__file__).read_bytes()
        folder = os.stat(path.parent)
        assert path.parent != Path("/tmp") and folder.st_uid == os.geteuid()
        assert folder.st_mode & 0o777 == 0o700
    finally:
        journal.undo_all()
    assert not path.exists() and not path.parent.exists()


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_command_that_writes_without_end_is_stopped_at_the_cap(monkeypatch, stream):
    """An SSH command's output was read into memory without a bound: a node (or a program of
    another local user that a command reads from) could send until the controller ran out."""
    import threading
    import time

    from harness.errors import NodeError
    from harness.nodes import ssh

    chunk = b"x" * (1 << 16)  # one object, sent again and again: the test itself stays small

    class Flood:
        """A channel whose command writes ``chunk`` to one stream for as long as it is read."""

        def __init__(self):
            self.closed = False
            self.status_event = threading.Event()
            self.exit_status = -1
            self.marker_sent = False

        def exec_command(self, command):
            pass

        def _endless(self):
            return b"" if self.closed else chunk

        def _quiet(self):
            while not self.closed:
                time.sleep(0.01)
            return b""

        def recv(self, _size):
            return self._endless() if stream == "stdout" else self._quiet()

        def recv_stderr(self, _size):
            if not self.marker_sent:
                self.marker_sent = True
                return b"__harness_pgid__=4242\n"
            return self._endless() if stream == "stderr" else self._quiet()

        def sendall(self, _data):
            pass

        def shutdown_write(self):
            pass

        def exit_status_ready(self):
            return False

        def get_transport(self):
            return self

        def is_active(self):
            return True

        def close(self):
            self.closed = True

    monkeypatch.setattr(ssh, "OUTPUT_CAP", 1 << 20, raising=False)
    node = ssh.SSHNode("n", "192.0.2.1")
    flood, killed = Flood(), []
    monkeypatch.setattr(node, "_open_channel", lambda: flood)
    monkeypatch.setattr(node, "_kill_remote", lambda chan, err: killed.append(
        ssh.split_marker(b"".join(err))[0]))
    started = time.monotonic()
    with pytest.raises(NodeError, match=f"n.*`yes` wrote more than 1 MiB to its {stream}; it "
                                        "was stopped"):
        node.run("yes", timeout=5)
    assert time.monotonic() - started < 3 and killed == [4242] and flood.closed


def _fake_lab(monkeypatch, seconds: float):
    """JupyterLab's place taken by a program that listens on the lab's port for ``seconds``
    (or exits 1 if it cannot bind it), and an exec that must not happen."""
    import sys

    from harness.run import jupyterlab

    def argv(self):
        return [sys.executable, "-c", "import socket, sys, time\n"
                "s = socket.socket()\n"
                "try:\n    s.bind(('127.0.0.1', int(sys.argv[1])))\nexcept OSError:\n"
                "    sys.exit(1)\n"
                f"s.listen()\ntime.sleep({seconds})\n", str(self.port)]

    def no_exec(*_args):
        raise AssertionError("the test process was to be replaced by the server")

    monkeypatch.setattr(jupyterlab.LabServer, "argv", argv)
    monkeypatch.setattr(jupyterlab.os, "execve", no_exec)
    monkeypatch.setattr(jupyterlab.secrets, "token_hex", lambda _n: "t0ken" * 8)
    return jupyterlab


def test_the_lab_token_is_shown_only_once_its_own_server_listens(monkeypatch, capsys):
    """A port found free can be bound by another local user before JupyterLab binds it; the
    URL with the token, printed before, then sent the token to that user's listener."""
    import socket

    jupyterlab = _fake_lab(monkeypatch, 1.0)
    with socket.socket() as taker:  # the other user's listener, there first
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        port = taker.getsockname()[1]
        assert jupyterlab.main(["--port", str(port)]) == 1
    out = capsys.readouterr()
    assert "t0ken" not in out.out and "t0ken" not in out.err
    assert f"port {port} on 127.0.0.1 is taken by another process" in out.err
    free = jupyterlab.free_port(20000)
    assert jupyterlab.main(["--port", str(free)]) == 0  # its own: shown, then waited for
    assert f"http://127.0.0.1:{free}/lab?token={'t0ken' * 8}" in capsys.readouterr().out


def test_a_listener_of_another_process_on_the_port_is_named_not_trusted():
    import socket
    import subprocess

    from harness.errors import HarnessError
    from harness.run.jupyterlab import PortTaken, await_own_listener

    with socket.socket() as taker:
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        port = taker.getsockname()[1]
        server = subprocess.Popen(["sleep", "30"])
        try:
            with pytest.raises(PortTaken, match=f"port {port} on 127.0.0.1 is taken by another "
                                                r"process \(uid \d+\)"):
                await_own_listener(server, port, timeout=5)
        finally:
            server.kill()
            server.wait()
    with pytest.raises(HarnessError, match="ended .exit status -9. before it listened"):
        await_own_listener(server, port, timeout=5)
