"""harness.ownpath and the caches that use it (issue 26): what root runs or boots from a cache
that another user could change is never used -- `sudo -E` hands root that user's $HOME and
$XDG_CACHE_HOME."""

from __future__ import annotations

import json
import lzma
import os
import struct

import pytest

from harness.ownpath import not_own_reason, own_file
from harness.vm import accel, kimage

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
NOBODY = 65534


def test_a_folder_of_ours_below_root_and_sticky_tmp_is_own(tmp_path):
    folder = tmp_path / "a" / "b"
    assert not_own_reason(folder) is None  # not there yet: judged by what is above it
    folder.mkdir(parents=True)
    assert not_own_reason(folder) is None
    assert not_own_reason("/tmp") is None  # sticky: each entry stays its owner's


@needs_root
@pytest.mark.parametrize("how, words", [("owner", "belongs to uid 65534"),
                                        ("writable", "may write"), ("link", "belongs to uid")])
def test_a_folder_another_user_could_change_is_not_own(tmp_path, how, words):
    theirs = tmp_path / "theirs"
    (theirs / "cache").mkdir(parents=True)
    target = theirs / "cache"
    if how == "owner":
        os.chown(theirs, NOBODY, NOBODY)
    elif how == "writable":
        theirs.chmod(0o777)
    else:  # a link of ours into their folder: judged where it leads
        os.chown(theirs, NOBODY, NOBODY)
        (tmp_path / "link").symlink_to(target)
        target = tmp_path / "link"
    assert words in not_own_reason(target)


@needs_root
def test_own_file_is_a_regular_file_of_ours_no_one_else_may_write(tmp_path):
    mine = tmp_path / "mine"
    mine.write_text("x")
    mine.chmod(0o600)
    assert own_file(mine)
    link = tmp_path / "link"
    link.symlink_to(mine)
    theirs = tmp_path / "theirs"
    theirs.write_text("x")
    os.chown(theirs, NOBODY, NOBODY)
    shared = tmp_path / "shared"
    shared.write_text("x")
    shared.chmod(0o666)
    assert not any(own_file(p) for p in (link, theirs, shared, tmp_path, tmp_path / "none"))


def _pvh_bzimage() -> bytes:
    """A bzImage stand-in whose XZ payload is a 64-bit ELF with the PVH note."""
    name, desc = b"Xen\0", b"\0" * 4
    note = struct.pack("<III", len(name), len(desc), kimage.XEN_ELFNOTE_PHYS32_ENTRY) + name + desc
    header, ph = bytearray(64), bytearray(56)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 32, 64)
    struct.pack_into("<HH", header, 54, 56, 1)
    struct.pack_into("<I", ph, 0, 4)
    struct.pack_into("<Q", ph, 8, 120)
    struct.pack_into("<Q", ph, 32, len(note))
    return b"setup" * 20 + lzma.compress(bytes(header) + bytes(ph) + note, format=lzma.FORMAT_XZ)


@needs_root
def test_a_vm_kernel_cache_another_user_could_change_is_not_booted(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    vmlinuz = tmp_path / "vmlinuz"
    vmlinuz.write_bytes(_pvh_bzimage())
    st = os.stat(vmlinuz)
    planted = home / "cache" / "harness" / f"vmlinux-9.9-{st.st_size}-{st.st_mtime_ns}"
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"their kernel")
    os.chown(planted, NOBODY, NOBODY)  # a file of theirs in a folder of ours: not booted,
    path, how = kimage.bootable_kernel(str(vmlinuz), "9.9")  # extracted again over it
    assert how == "pvh" and path == str(planted) and planted.read_bytes() != b"their kernel"
    os.chown(home, NOBODY, NOBODY)  # the folder is theirs: the bzImage itself, nothing written
    planted.write_bytes(b"their kernel")
    assert kimage.bootable_kernel(str(vmlinuz), "9.9") == (str(vmlinuz), "bzimage")
    assert planted.read_bytes() == b"their kernel"


@needs_root
def test_an_accelerator_verdict_another_user_wrote_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = accel.cache_path("1.0")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"accel": "kvm", "reason": "planted"}))
    path.chmod(0o600)
    assert accel._read_cache(path).reason == "planted"  # ours: read
    os.chown(path, NOBODY, NOBODY)
    assert accel._read_cache(path) is None
