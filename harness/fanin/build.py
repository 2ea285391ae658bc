"""Compile the fan-in generator (fanin.c) on first use, into a cache keyed by its source.

Why C: the study compares the CPU cost of three transports; an interpreter's
own cost would blur exactly that difference. Why built on first use: as for
the relay daemon (harness/relay/build.py), a shipped binary would tie the
package to one libc; the key (source, flags, compiler) never reuses a stale build.

Where: ``$HARNESS_CACHE_DIR/fanin/<key>/fanin``, else
``${XDG_CACHE_HOME:-~/.cache}/harness/fanin/<key>/fanin``.

VM nodes of this project share the host's root file system read-only, so a
binary built on the controlling machine is already there: :func:`build_on`
first asks the node whether the host's binary is visible at the same path
*with the same content* (sha256) and uses it; only otherwise does it compile
on the node, in its cache or, if that is read-only, under /tmp.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import CapabilityMissing, HarnessError
from ..nodes.base import Node

SOURCE = Path(__file__).with_name("fanin.c")
CFLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-D_FORTIFY_SOURCE=2", "-pthread"]
COMPILERS = ("gcc", "cc")
NAME = "fanin"
_INSTALL_HINT = "install a C compiler: `apt-get install gcc` (Debian/Ubuntu) or `dnf install gcc`"


class BuildFailed(HarnessError):
    """The generator's source did not compile."""


def source_bytes() -> bytes:
    try:
        return SOURCE.read_bytes()
    except FileNotFoundError:
        raise HarnessError(f"generator source {SOURCE} is missing",
                           "reinstall the harness package (fanin.c is package data)") from None


def cache_key(source: bytes, compiler_id: str) -> str:
    """16 hex digits identifying (source, flags, compiler version)."""
    digest = hashlib.sha256()
    for part in (source, " ".join(CFLAGS).encode(), compiler_id.encode()):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()[:16]


def local_cache_root() -> Path:
    if os.environ.get("HARNESS_CACHE_DIR"):
        return Path(os.environ["HARNESS_CACHE_DIR"]) / NAME
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "harness" / NAME


def _local_compiler() -> str:
    for name in COMPILERS:
        path = shutil.which(name)
        if path:
            return path
    raise CapabilityMissing("no C compiler (gcc or cc) on the controlling machine", _INSTALL_HINT)


def _compiler_id(cc: str) -> str:
    out = subprocess.run([cc, "--version"], check=False, capture_output=True, text=True, timeout=30)
    return (out.stdout.splitlines() or [cc])[0]


def build_local(cache_root: Path | None = None) -> Path:
    """Path of a compiled generator on this machine, compiling it if needed."""
    source = source_bytes()
    cc = _local_compiler()
    key = cache_key(source, _compiler_id(cc))
    binary = (cache_root or local_cache_root()) / key / NAME
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    # Compile in a private temp dir, then rename: concurrent builders never see half a file.
    with tempfile.TemporaryDirectory(dir=binary.parent, prefix=".build-") as tmp:
        src = Path(tmp) / "fanin.c"
        src.write_bytes(source)
        out = Path(tmp) / NAME
        proc = subprocess.run([cc, *CFLAGS, "-o", str(out), str(src)], check=False,
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise BuildFailed(f"compiling the fan-in generator failed ({cc}):\n"
                              f"{proc.stderr.strip()[-2000:]}",
                              "report this with the compiler output (gcc >= 8 is needed)")
        os.chmod(out, 0o755)
        os.replace(out, binary)
    return binary


def is_local(node: Node) -> bool:
    """True if ``node`` runs on the controlling machine (local, or a namespace of it)."""
    desc = node.describe()
    while desc.get("type") == "netns":
        desc = desc["parent"]
    return desc.get("type") == "local"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_on(node: Node) -> str:
    """Path *on node* of a compiled generator (built once per source and compiler)."""
    if is_local(node):
        return str(build_local())
    try:
        host_binary = build_local()
    except (CapabilityMissing, BuildFailed):
        host_binary = None
    if host_binary is not None:
        # A VM sharing our root file system sees the very same file.
        res = node.run(f"sha256sum {shlex.quote(str(host_binary))} 2>/dev/null", check=False,
                       timeout=60)
        if res.ok and res.stdout.split()[:1] == [_sha256(host_binary)]:
            return str(host_binary)
    return _build_remote(node)


def _build_remote(node: Node) -> str:
    probe = node.run(
        'for c in gcc cc; do command -v "$c" && "$c" --version | head -n1 && break; done;'
        ' printf "%s\\n" "${XDG_CACHE_HOME:-$HOME/.cache}"',
        check=False, timeout=60,
    )
    lines = probe.stdout.splitlines()
    if len(lines) < 3:
        raise CapabilityMissing(f"no C compiler (gcc or cc) on {node.name}", _INSTALL_HINT)
    cc, version, cache = lines[0], lines[1], lines[-1]
    source = source_bytes()
    key = cache_key(source, version)
    for root in (f"{cache}/harness/{NAME}", f"/tmp/harness-cache-{NAME}"):
        directory = f"{root}/{key}"
        binary = f"{directory}/{NAME}"
        if node.run(["test", "-x", binary], check=False, timeout=30).ok:
            return binary
        if node.run(["mkdir", "-p", directory], check=False, timeout=30).ok and \
                node.run(["test", "-w", directory], check=False, timeout=30).ok:
            break
    else:
        raise BuildFailed(f"no writable cache directory on {node.name}",
                          "make $XDG_CACHE_HOME or /tmp writable on the node")
    remote_src = f"{directory}/fanin.c"
    node.run(f"cat > {shlex.quote(remote_src)}", stdin=source, timeout=60)
    tmp_bin = f"{binary}.tmp.{os.getpid()}"
    result = node.run(
        f"{shlex.join([cc, *CFLAGS, '-o', tmp_bin, remote_src])} && mv -f {shlex.quote(tmp_bin)}"
        f" {shlex.quote(binary)}", check=False, timeout=300)
    if not result.ok:
        raise BuildFailed(f"compiling the fan-in generator on {node.name} failed:\n"
                          f"{result.stderr.strip()[-2000:]}",
                          "check the node's compiler (gcc >= 8) and its cache directory")
    return binary
