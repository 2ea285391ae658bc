"""An SSH node lost mid-run: its sshd killed while the run holds changes on two machines.

Two real sshds (Debian's OpenSSH) in one fresh network namespace stand in for
two inventory machines, each with a private /run (so each has its own machine
lock). The run takes both machines, makes a recorded change on each, then
loses ``bravo``: the run stops with one error naming it, everything on
``alpha`` is undone, run.json lists what could not be undone on ``bravo``, and
``harness lab clean`` finishes that once bravo's sshd is back.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from harness.archive.archive import INCOMPLETE, Run
from harness.cli import main
from harness.errors import NodeError
from harness.journal.journal import Journal
from harness.nodes.procfs import process_start_ticks
from harness.run.session import open_session
from harness.topology.topology import TopologyBuilder

try:  # as a package (tests/integration/__init__.py) or as a rootdir-relative module
    from .sshd_fixture import PORT, SSHD, in_sshd_netns, sshd_server
except ImportError:
    from sshd_fixture import PORT, SSHD, in_sshd_netns, sshd_server  # noqa: F401  (fixtures)

pytestmark = pytest.mark.integration

BRAVO_PORT = PORT + 1


def start_second_sshd(server, port: int) -> subprocess.Popen:
    """Another sshd in the fixture's namespace (its teardown stops every process there)."""
    config = server.workdir / f"sshd_config.{port}"
    config.write_text((server.workdir / "sshd_config").read_text()
                      .replace(f"Port {server.port}", f"Port {port}"))
    log = server.workdir / f"sshd.{port}.log"
    log.write_text("")
    inner = (f"mount -t tmpfs -o mode=755,size=1m harness-sshd-{port} /run && "
             f"mkdir -m 755 /run/sshd && exec {SSHD} -D -e -f {config}")
    with open(log, "ab") as out:
        proc = subprocess.Popen(["nsenter", f"--net={server.netns_path}", "unshare", "--mount",
                                 "--propagation", "private", "sh", "-c", inner],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + 15
    while f"Server listening on 127.0.0.1 port {port}" not in log.read_text(errors="replace"):
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return proc


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_sshd(proc: subprocess.Popen) -> None:
    """The machine is lost: its sshd and every connection it serves die at once."""
    for pid in [proc.pid, *descendants(proc.pid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(10)


def inventory(server, tmp_path) -> str:
    keytype, blob = server.host_key_pub.split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{server.port} {keytype} {blob}\n"
                     f"[127.0.0.1]:{BRAVO_PORT} {keytype} {blob}\n")
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({
        "ssh": {"user": "root", "key": server.user_key, "known_hosts": str(known)},
        "nodes": {
            "alpha": {"host": "127.0.0.1", "port": server.port,
                      "interfaces": {"eth0": {"device": "lo", "address": "198.18.10.1/24"}}},
            "bravo": {"host": "127.0.0.1", "port": BRAVO_PORT,
                      "interfaces": {"eth0": {"device": "lo", "address": "198.18.10.2/24"}}},
        }}))
    return str(path)


def test_a_lost_node_stops_the_run_naming_it_and_lab_clean_finishes_later(in_sshd_netns,
                                                                          tmp_path):
    server = in_sshd_netns
    bravo_sshd = start_second_sshd(server, BRAVO_PORT)
    topology = (TopologyBuilder("tlost").node("alpha").node("bravo")
                .link(("alpha", "eth0", "198.18.10.1/24"), ("bravo", "eth0", "198.18.10.2/24"))
                .build("node-lost test"))
    token = secrets.token_hex(4)
    made = {name: f"/tmp/harness-lost-{token}-{name}" for name in ("alpha", "bravo")}
    data = tmp_path / "data"
    try:
        with pytest.raises(NodeError) as lost:
            with open_session("tlost", {}, inventory=inventory(server, tmp_path),
                              root=data) as session:
                bed = session.testbed(topology)
                locks = session.machine_locks
                assert locks["alpha"]["mode"] == locks["bravo"]["mode"] == "exclusive"
                for name, path in made.items():
                    session.journal.record("file", bed.node(name), path=path)
                    bed.node(name).run(["mkdir", path])
                assert all(Path(p).is_dir() for p in made.values())
                kill_sshd(bravo_sshd)
                bed.node("bravo").run(["true"])
        assert "bravo" in lost.value.message and "alpha" not in lost.value.message
        assert not Path(made["alpha"]).exists(), "the change on the reachable node stays"
        assert Path(made["bravo"]).is_dir()  # unreachable: it could not be undone ...
        run = Run.open(session.run.path)
        meta = run.meta
        assert meta["status"] == INCOMPLETE and "bravo" in meta["error"]
        left = meta["not_undone"]  # ... and run.json says so
        assert any(made["bravo"] in line for line in left)
        assert all("bravo" in line for line in left)
        holders = [e for e in Journal(run.path / "journal.jsonl").pending()
                   if e.kind == "process"]
        assert [e.node["name"] for e in holders] == ["bravo"]  # bravo's lock holder lives on
        pid, ticks = int(holders[0].data["pid"]), int(holders[0].data["start_ticks"])
        assert process_start_ticks(pid) == ticks

        bravo_sshd = start_second_sshd(server, BRAVO_PORT)  # the machine is back
        assert main(["lab", "clean", "--data", str(data)]) == 0
        assert not Path(made["bravo"]).exists()
        assert process_start_ticks(pid) != ticks
        assert Journal(run.path / "journal.jsonl").pending() == []
    finally:
        if bravo_sshd.poll() is None:
            kill_sshd(bravo_sshd)
        for path in made.values():
            subprocess.run(["rm", "-rf", "--one-file-system", path], check=False)
