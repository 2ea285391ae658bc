"""Boot the stock kernel without making TCG decompress it.

Debian's ``vmlinuz`` is a bzImage whose payload is XZ-compressed. Under TCG
the guest spends 7-14 s (measured here, host load ~4) just decompressing
itself before printing a line. The same kernel is also a PVH-capable ELF
(CONFIG_PVH=y), which QEMU boots directly with ``-kernel vmlinux``. So we
decompress the payload once on the host (~2 s, Python's lzma), check that it
is an ELF with the PVH entry note, and cache it as
``~/.cache/harness/vmlinux-<version>-<size>-<mtime>``. It is byte for byte
the kernel Debian built; only the self-extracting wrapper is skipped.

Anything unexpected (other compression, no PVH note) falls back to booting
the bzImage as is: slower, never wrong.
"""

from __future__ import annotations

import lzma
import os
import struct
import tempfile
from pathlib import Path

from ..ownpath import not_own_reason, own_file
from .accel import cache_dir

XZ_MAGIC = b"\xfd7zXZ\x00"
XEN_ELFNOTE_PHYS32_ENTRY = 18  # the PVH entry point QEMU looks for


def has_pvh_note(elf: bytes) -> bool:
    """True if ``elf`` is a 64-bit little-endian ELF with a Xen PHYS32_ENTRY note."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return False
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    for i in range(phnum):
        base = phoff + i * phentsize
        p_type, = struct.unpack_from("<I", elf, base)
        if p_type != 4:  # PT_NOTE
            continue
        offset, = struct.unpack_from("<Q", elf, base + 8)
        size, = struct.unpack_from("<Q", elf, base + 32)
        pos, end = offset, offset + size
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12: pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def extract_vmlinux(bzimage: bytes) -> bytes | None:
    """The ELF kernel inside an XZ-compressed bzImage, or None if not that."""
    start = bzimage.find(XZ_MAGIC)
    if start < 0:
        return None
    try:
        decomp = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        elf = decomp.decompress(bzimage[start:])
    except lzma.LZMAError:
        return None
    if not decomp.eof or not has_pvh_note(elf):
        return None
    return elf


def bootable_kernel(vmlinuz: str, version: str) -> tuple[str, str]:
    """(path to boot, how): the cached PVH vmlinux if possible, else ``vmlinuz``.

    The cache is used only if no other user can change it (:mod:`harness.ownpath`: under
    ``sudo -E`` it is another user's ``~/.cache``, and root would boot their kernel);
    otherwise the bzImage itself is booted, slower and never wrong."""
    st = os.stat(vmlinuz)
    cached = cache_dir() / f"vmlinux-{version}-{st.st_size}-{st.st_mtime_ns}"
    if not_own_reason(cached.parent) is not None:
        return vmlinuz, "bzimage"
    if own_file(cached):
        return str(cached), "pvh"
    with open(vmlinuz, "rb") as fh:
        elf = extract_vmlinux(fh.read())
    if elf is None:
        return vmlinuz, "bzimage"
    _write_atomic(cached, elf)
    return str(cached), "pvh"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".vmlinux-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o600)  # like /boot/vmlinuz-*
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
