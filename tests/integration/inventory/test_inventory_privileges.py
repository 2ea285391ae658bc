"""A whole study on a user's machines without root (issue 25, "Privileges on a user's cluster").

The study (``pmtu_study.py`` beside this file) measures the RTT between two machines and
a's path MTU after lowering its interface's MTU to 1400 bytes. The machines are S4's
(:mod:`..machines`), with one ordinary user who may ``sudo`` without a password on the
client only:

- reached as that user everywhere, without sudo: the run completes as found; nothing is
  changed (configuration empty, every machine's snapshot and /run identical), the MTU
  change it would have made is recorded with CAP_NET_ADMIN, the RTT claim is judged and the
  MTU claim is "not testable here" naming the privilege;
- the client reached as the user with ``sudo: true``: the MTU is set through ``sudo -n``,
  recorded, measured (path MTU 1400: the claim is met) and undone;
- ``sudo: true`` on the server, where the user has no rule: refused with sudo's own words
  before anything runs.

The three runs took 70 s at load 2.1-2.4 (2026-11-27), 170 s at load 9-13.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import needs_root, needs_tools

from ..machines import running_machines, s4_machines, s4_networks, skip_reason

pytestmark = [pytest.mark.integration, needs_root, needs_tools("sudo", "ping")]

NOTEBOOK = Path(__file__).resolve().with_name("pmtu_study.ipynb")


@pytest.fixture(scope="module")
def machines():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    with running_machines(s4_networks(), s4_machines(), unprivileged_user=True,
                          sudo_on=("client",)) as m:
        yield m


def write_inventory(m, path: Path, users: dict[str, str], sudo: dict[str, bool]) -> Path:
    """The study's a and b on S4's client and server."""
    data = m.inventory({"client": users.get("a", "root"), "server": users.get("b", "root")},
                       {"client": sudo.get("a", False), "server": sudo.get("b", False)})
    nodes = data["nodes"]
    for node in nodes.values():
        node["interfaces"] = {"eth0": node["interfaces"]["eth0"]}
    data["nodes"] = {"a": nodes["client"], "b": nodes["server"]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def state(m) -> dict:
    """Every machine's snapshot, its /run files (sudo's own timestamps left out) and its
    processes other than sshd."""
    from .test_inventory_run import machine_run_dir

    return {n: (m.snapshot(n), [f for f in machine_run_dir(m, n) if not f.startswith("/run/sudo")],
                sorted(m.processes(n))) for n in m.machines}


def unchanged(m, before: dict) -> None:
    """Each machine as ``before``; a difference is named by machine and item."""
    import difflib

    after = state(m)
    for name, (snap, files, procs) in before.items():
        now_snap, now_files, now_procs = after[name]
        for key, text in snap.items():
            assert now_snap[key] == text, f"{name} {key}:\n" + "\n".join(
                difflib.unified_diff(text.splitlines(), now_snap[key].splitlines(), lineterm=""))
        assert (now_files, now_procs) == (files, procs), name


def run(m, data: Path, inventory: Path):
    out = m.harness("run", "-q", str(NOTEBOOK), "--inventory", str(inventory),
                    "--share-machine", "-p", "repetitions", "2", "-p", "seed", "7",
                    env={"HARNESS_DATA": str(data)})
    runs = list((data / "runs" / "pmtu-demo").iterdir()) if (data / "runs").exists() else []
    return out, runs


def claims(run_dir: Path) -> dict[str, pd.Series]:
    frame = pd.read_csv(run_dir / "claims.csv")
    return {row.claim_id: row for row in frame.itertuples()}


def test_an_ordinary_user_without_sudo_measures_the_machines_as_found(machines, tmp_path):
    m = machines
    inventory = write_inventory(m, tmp_path / "user.yaml", {"a": m.user, "b": m.user}, {})
    before = state(m)
    out, (run_dir,) = run(m, tmp_path, inventory)
    assert out.returncode == 0, out.stderr[-4000:]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete"
    assert {n: (a["user"], a["root"]) for n, a in meta["access"].items()} == \
        {"a": (m.user, False), "b": (m.user, False)}
    found = meta["as_found"]
    assert found["mode"] == "as found" and "CAP_SYS_ADMIN" in found["features"]
    assert [(r["node"], r["kind"], r["target"], r["before"], r["after"], r["privilege"])
            for r in found["not_made"]] == \
        [("a", "mtu", "eth0", "1500", "1400", "CAP_NET_ADMIN (ip link set mtu)")]
    assert not meta["configuration"] and not meta["not_undone"]
    assert {meta["machine_lock"][n]["mode"] for n in ("a", "b")} == {"not taken"}
    assert meta["testbed"]["machines"]["a"]["hostname"] == m.machines["client"].hostname
    frame = pd.read_parquet(run_dir / "results.parquet")
    assert (frame.path_mtu == 1500).all() and (frame.rtt_ms > 0).all()  # as found: 1500
    verdicts = claims(run_dir)
    assert verdicts["pmtu.rtt"].outcome == "met"
    mtu = verdicts["pmtu.mtu"]
    assert mtu.outcome == "not testable here"
    assert "CAP_NET_ADMIN" in mtu.reason and f"a as {m.user}" in mtu.reason
    report = (run_dir / "report.html").read_text()
    assert "not testable here" in report and "Measured as found" in report
    assert "eth0 1500 -&gt; 1400" in report or "eth0 1500 -> 1400" in report
    unchanged(m, before)


def test_sudo_where_the_inventory_allows_it_makes_records_and_undoes_the_change(machines,
                                                                              tmp_path):
    m = machines
    inventory = write_inventory(m, tmp_path / "sudo.yaml", {"a": m.user}, {"a": True})
    before = state(m)
    out, (run_dir,) = run(m, tmp_path, inventory)
    assert out.returncode == 0, out.stderr[-4000:]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "complete" and not meta.get("as_found")
    assert meta["access"]["a"] == {"node": "a", "user": m.user, "uid": 0, "root": True,
                                   "via": "sudo -n", "problem": None}
    assert meta["testbed"]["nodes"]["a"]["sudo"] is True
    changes = [(c["node"], c["kind"], c["target"], c["before"], c["after"])
               for c in meta["configuration"]]
    assert ("a", "mtu", "eth0", "1500", "1400") in changes
    assert not meta["not_undone"]
    assert meta["machine_lock"]["a"]["mode"] == "exclusive"  # taken through sudo
    frame = pd.read_parquet(run_dir / "results.parquet")
    assert (frame.path_mtu == 1400).all()
    verdicts = claims(run_dir)
    assert verdicts["pmtu.mtu"].outcome == "met" and verdicts["pmtu.rtt"].outcome == "met"
    unchanged(m, before)


def test_sudo_allowed_by_the_inventory_but_refused_by_the_machine_stops_before_anything(
        machines, tmp_path):
    m = machines
    inventory = write_inventory(m, tmp_path / "nosudo.yaml", {"b": m.user}, {"b": True})
    before = state(m)
    out, runs = run(m, tmp_path, inventory)
    assert out.returncode != 0
    assert "`sudo -n` does not give root" in out.stderr and "password" in out.stderr, \
        out.stderr[-3000:]
    assert "NOPASSWD" in out.stderr
    for run_dir in runs:
        meta = json.loads((run_dir / "run.json").read_text())
        assert meta["status"] != "complete" and not meta.get("configuration")
        assert not set(meta.get("machine_lock") or {}) & {"a", "b"}
    unchanged(m, before)
