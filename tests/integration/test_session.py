"""open_session on a two-node namespace lab: the run folder, its records, and teardown on errors."""

from __future__ import annotations

import os
import subprocess

import pandas as pd
import pytest
from conftest import needs_root, needs_tools, netns_names

from harness.archive.archive import COMPLETE, INCOMPLETE, Run, project_root
from harness.run.session import open_session
from harness.topology.topology import TopologyBuilder

pytestmark = [pytest.mark.integration, needs_root, needs_tools("ping")]


def two_nodes():
    """Unshaped, so link verification measures RTT only (no iperf3 rate test): quick."""
    return (TopologyBuilder("ts").node("a").node("b")
            .link(("a", "eth0", "198.18.7.1/24"), ("b", "eth0", "198.18.7.2/24"))
            .build("session test: a -- b"))


def lab_namespaces(prefix: str) -> set[str]:
    """Namespaces in `ip netns list` that belong to the lab with ``prefix``.

    Only the lab's own: other labs (other tests, other users of a shared
    machine) may come and go meanwhile.
    """
    return {n for n in netns_names() if n.startswith(prefix + "-")}


def only_run(root):
    (path,) = list((root / "runs" / "tsess").iterdir())
    return Run.open(path)


def test_clean_block_finishes_complete_with_its_records(tmp_path):
    frame = pd.DataFrame({"size": [1, 2], "half_rtt_us": [10.5, 11.25]})
    with open_session("tsess", {"x": 1}, root=tmp_path) as session:
        bed = session.testbed(two_nodes())
        prefix = bed.record()["prefix"]
        assert lab_namespaces(prefix) == set(bed.record()["namespaces"].values())
        assert len(lab_namespaces(prefix)) == 2
        checks = session.verify(seconds=1)
        session.raw("tool-output.txt", "hello")
        session.results(frame)
        session.results(frame.head(1), "extra")
        assert session.run.status == INCOMPLETE  # not finished inside the block
    run = only_run(tmp_path)
    meta = run.meta
    assert meta["status"] == COMPLETE and meta["error"] is None and meta["ended"]
    assert meta["measurement_error"] is None
    assert meta["parameters"] == {"x": 1}
    head = subprocess.run(["git", "-C", str(project_root()), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert meta["provenance"]["git"]["commit"] == head
    assert meta["testbed"]["kind"] == "namespace-lab"
    assert set(meta["testbed"]["namespaces"]) == {"a", "b"}
    assert meta["testbed"]["teardown_s"] is not None  # recorded after the lab was removed
    assert meta["placement"]["where"] == "host"
    # tool versions and the kernel of the machine the lab ran on, as that machine says
    caps = meta["capabilities"]["local"]
    assert caps["kernel"] == os.uname().release
    ip_version = subprocess.run(["ip", "-V"], capture_output=True, text=True).stdout.strip()
    assert caps["tools"]["ip"] == ip_version
    # an unshaped link is checked one way, by RTT only
    assert [(c["link"], c["direction"]) for c in meta["link_verification"]] \
        == [(c.link, c.direction) for c in checks] == [("a:eth0--b:eth0", "a->b")]
    for check in meta["link_verification"]:
        assert check["configured_mbit"] is None and check["rtt_ms"] > 0
    assert (run.path / "raw" / "tool-output.txt").read_text() == "hello"
    pd.testing.assert_frame_equal(pd.read_parquet(run.path / "results.parquet"), frame)
    assert len(pd.read_parquet(run.path / "extra.parquet")) == 1
    assert (run.path / "results.csv").exists()
    assert not (run.path / "results.parquet").stat().st_mode & 0o222  # frozen
    assert lab_namespaces(prefix) == set()
    assert run.journal.pending() == []


def test_error_in_block_leaves_run_incomplete_with_error_and_no_namespace(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with open_session("tsess", {}, root=tmp_path) as session:
            prefix = session.testbed(two_nodes()).record()["prefix"]
            assert len(lab_namespaces(prefix)) == 2
            session.raw("partial.txt", "kept")
            raise RuntimeError("boom")
    assert lab_namespaces(prefix) == set()
    run = only_run(tmp_path)
    meta = run.meta
    assert meta["status"] == INCOMPLETE and meta["ended"]
    assert meta["error"] == meta["measurement_error"] == "RuntimeError: boom"
    assert meta["testbed"]["kind"] == "namespace-lab"  # what was built is still on record
    assert (run.path / "raw" / "partial.txt").read_text() == "kept"
    assert run.journal.pending() == []
    run.update(note="still writable")  # incomplete runs are not frozen


def test_session_on_a_given_run_dir_leaves_finishing_to_its_owner(tmp_path):
    """`harness run` creates the folder and finishes it after the notebook; the session must not."""
    run = Run.create("tsess", {"y": 2}, tmp_path)
    with open_session("tsess", {"y": 2}, run_dir=str(run.path)) as session:
        assert session.run.path == run.path
        session.note(seen=True)
        session.results(pd.DataFrame({"a": [1]}))
    meta = run.meta
    assert meta["status"] == INCOMPLETE and meta["ended"] is None
    assert meta["seen"] is True and meta["provenance"]["git"]["commit"]
    assert meta["measurement_error"] is None
    with pytest.raises(ValueError, match="bad"):
        with open_session("tsess", {"y": 2}, run_dir=str(run.path)):
            raise ValueError("bad")
    meta = run.meta
    assert meta["status"] == INCOMPLETE and meta["ended"] is None
    assert meta["measurement_error"] == "ValueError: bad"  # recorded for the owner to see
    run.finish(COMPLETE)  # the owner still can
    assert run.status == COMPLETE
    assert [p.name for p in (tmp_path / "runs" / "tsess").iterdir()] == [run.path.name]
