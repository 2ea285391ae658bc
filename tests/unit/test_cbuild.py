"""harness.cbuild on a remote-like node: a private cache, and no binary trusted by its name.

A local shell that says it is remote takes the copy-and-compile path with a real compiler
(a one-line C program, ~0.1 s per build)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess

import pytest

from harness import cbuild
from harness.cbuild import BuildFailed, CProgram
from harness.nodes.local import LocalNode

needs_cc = pytest.mark.skipif(not (shutil.which("gcc") or shutil.which("cc")),
                              reason="no C compiler")


class RemoteLikeNode(LocalNode):
    @property
    def is_local(self) -> bool:
        return False

    def describe(self) -> dict:
        return {"type": "remote-like", "name": self.name}


@pytest.fixture
def program(tmp_path):
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\nint main(void){puts("hello");return 0;}\n')
    return CProgram("hello", src, ("-O0",), "the test program")


@pytest.fixture
def tmp_base(tmp_path, monkeypatch):
    base = tmp_path / "tmp"
    base.mkdir()
    base.chmod(0o1777)
    monkeypatch.setattr(cbuild, "SHARED_TMP", str(base))
    return base


def node_with_cache(cache):
    return RemoteLikeNode("remote", prefix=["env", f"XDG_CACHE_HOME={cache}"])


def runs(binary):
    return subprocess.run([binary], capture_output=True, text=True, timeout=10).stdout


@needs_cc
def test_built_in_a_private_folder_and_reused_only_with_its_recorded_hash(tmp_path, program,
                                                                          tmp_base):
    cache = tmp_path / "cache"
    node = node_with_cache(cache)
    binary = program.build_on(node, reuse_host_build=False)
    assert binary.startswith(f"{cache}/harness/hello/") and runs(binary) == "hello\n"
    assert stat.S_IMODE(os.stat(cache / "harness").st_mode) == 0o700
    stamp = os.stat(binary).st_mtime_ns
    assert program.build_on(node, reuse_host_build=False) == binary
    assert os.stat(binary).st_mtime_ns == stamp  # reused: hash as recorded
    # A binary changed after its build is not run: it is rebuilt.
    os.chmod(binary, 0o700)
    with open(binary, "wb") as fh:
        fh.write(b"#!/bin/sh\necho planted\n")
    assert program.build_on(node, reuse_host_build=False) == binary
    assert runs(binary) == "hello\n"
    assert list(tmp_base.iterdir()) == []  # the node's own cache sufficed


@needs_cc
def test_a_planted_binary_without_a_record_is_not_trusted(tmp_path, program, tmp_base):
    cache = tmp_path / "cache"
    node = node_with_cache(cache)
    key = program.cache_key(program.source_bytes(), cbuild.compiler_id(cbuild.local_compiler()))
    planted = cache / "harness" / "hello" / key / "hello"
    planted.parent.mkdir(parents=True)
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    assert runs(program.build_on(node, reuse_host_build=False)) == "hello\n"


@needs_cc
def test_a_symlinked_or_foreign_cache_is_refused_and_the_private_fallback_used(
        tmp_path, program, tmp_base):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "harness").symlink_to(elsewhere)
    binary = program.build_on(node_with_cache(cache), reuse_host_build=False)
    uid = os.getuid()
    assert binary.startswith(f"{tmp_base}/harness-cache-{uid}/hello/")
    assert stat.S_IMODE(os.stat(tmp_base / f"harness-cache-{uid}").st_mode) == 0o700
    assert list(elsewhere.iterdir()) == []  # nothing written through the link


@needs_cc
@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_folders_of_another_user_are_refused_naming_their_owner(tmp_path, program, tmp_base):
    cache = tmp_path / "cache"
    (cache / "harness").mkdir(parents=True)
    os.chown(cache / "harness", 65534, 65534)
    foreign = tmp_base / f"harness-cache-{os.getuid()}"  # someone computed our fallback's name
    foreign.mkdir()
    os.chown(foreign, 65534, 65534)
    with pytest.raises(BuildFailed) as err:
        program.build_on(node_with_cache(cache), reuse_host_build=False)
    assert "belongs to uid 65534" in str(err.value) and str(foreign) in str(err.value)
    assert list(foreign.iterdir()) == [] and list((cache / "harness").iterdir()) == []


# -- the controller's own cache ---------------------------------------------------------------

@needs_cc
def test_the_local_cache_runs_only_a_binary_with_its_recorded_hash(tmp_path, program):
    cache = tmp_path / "local"
    binary = program.build_local(cache)
    assert runs(binary) == "hello\n"
    stamp = os.stat(binary).st_mtime_ns
    assert program.build_local(cache) == binary and os.stat(binary).st_mtime_ns == stamp
    binary.chmod(0o755)
    binary.write_text("#!/bin/sh\necho planted\n")  # changed after its build: rebuilt
    assert runs(program.build_local(cache)) == "hello\n"
    binary.with_name("hello.sha256").unlink()  # no record (a cache of before): rebuilt
    binary.write_text("#!/bin/sh\necho planted\n")
    assert runs(program.build_local(cache)) == "hello\n"


@needs_cc
@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
@pytest.mark.parametrize("how", ["owner", "writable", "parent"])
def test_a_local_cache_another_user_could_change_is_refused(tmp_path, program, how):
    """root under `sudo -E` (another user's $XDG_CACHE_HOME) or with a shared
    $HARNESS_CACHE_DIR: a binary planted there, even with a matching record, never runs."""
    home = tmp_path / "home"
    cache = home / "cache"
    key = program.cache_key(program.source_bytes(), cbuild.compiler_id(cbuild.local_compiler()))
    planted = cache / key / "hello"
    planted.parent.mkdir(parents=True)
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    (planted.parent / "hello.sha256").write_text(cbuild.local_digest(planted) + "\n")
    if how == "owner":
        os.chown(cache, 65534, 65534)
    elif how == "writable":
        cache.chmod(0o777)
    else:
        os.chown(home, 65534, 65534)  # that user can swap the folders below
    with pytest.raises(BuildFailed, match="uid 65534|may write"):
        program.build_local(cache)
    assert planted.read_text() == "#!/bin/sh\necho planted\n"  # left, never run
