"""S2 on a user's own file system (machines from an inventory): real fio, a real mount.

A tmpfs mounted by the test plays the user's parallel file system (a GPFS mount on a
real cluster), with a file of "theirs" in it. The run checks it, writes and reads
with fio only inside a directory of its own (cleared after each point, removed at
the end), and leaves the user's file system exactly as it found it.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from conftest import needs_root, needs_tools

from harness.errors import CapabilityMissing
from harness.journal.journal import Journal
from harness.nodes import LocalNode
from harness.run.session import open_session
from harness.studies.s2 import fs as s2_fs
from harness.studies.s2 import study as s2

pytestmark = [pytest.mark.integration, needs_root, needs_tools("fio", "findmnt")]

MIB = 1 << 20


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def users_fs(tmp_path):
    mount = tmp_path / "pfs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=755", "harness-test-pfs",
                    str(mount)], check=True)
    (mount / "their-project").mkdir()
    (mount / "their-project" / "results.csv").write_text("run,value\n1,42\n")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_fio_on_a_users_file_system_writes_only_in_the_runs_own_directory(
        users_fs, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_LOCK_DIR", str(tmp_path / "locks"))
    before = tree(users_fs)
    params = s2.Params.resolve(pfs_mount=str(users_fs), drop_caches=False)
    node = LocalNode()
    s2_fs.check_existing(node, node, params)  # mounted (not the root file system), writable
    with open_session("ts2x", params.to_dict(), root=tmp_path / "data") as session:
        conf = s2_fs.existing(session, node, params)["pfs"]
        with s2_fs.mounted(session, node, "pfs", "198.18.2.1", conf) as workdir:
            own = Path(workdir)
            assert own.parent == users_fs and own.is_dir()
            assert own.name == f"harness-{session.run.run_id}"
            wrote = s2_fs.fio(session, node, workdir, "write", 2, MIB, 4 * MIB, "pt-1",
                              cold=False, others=(), clear=True)
            assert wrote["bytes"] == 8 * MIB and len(list(own.iterdir())) == 2
            read = s2_fs.fio(session, node, workdir, "read", 2, MIB, 4 * MIB, "pt-1",
                             cold=False, others=(), clear=True)
            assert read["bytes"] == 8 * MIB and read["mbyte_s"] > 0
            assert not list(own.iterdir()), "the point's files stay after its read"
        assert not own.exists(), "the run's directory outlived its scope"
        journal = Journal(session.run.path / "journal.jsonl")
        assert [e.kind for e in journal.entries()].count("file") == 1
    assert tree(users_fs) == before  # theirs untouched, nothing of ours left


def test_a_plain_directory_is_not_taken_for_a_mounted_file_system(tmp_path):
    plain = tmp_path / "not-mounted"
    plain.mkdir()
    if subprocess.run(["findmnt", "-n", "-o", "TARGET", "-T", str(plain)], capture_output=True,
                      text=True).stdout.strip() != "/":
        pytest.skip(f"{tmp_path} is on a file system of its own here, not on /")
    params = s2.Params.resolve(pfs_mount=str(plain))
    with pytest.raises(CapabilityMissing, match="on the root file system"):
        s2_fs.check_existing(LocalNode(), LocalNode(), params)
