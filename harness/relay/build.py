"""Compile the relay daemon (srd.c) on first use, into a cache keyed by its source.

The daemon is C because a relay in Python is slower than socat here (see
srd.c). Shipping a binary would tie the package to one libc and architecture;
compiling the 1000-line source with the node's own compiler takes about a
second once, and the cache key (a hash of source, flags and compiler) means a
changed source or compiler is rebuilt, never silently reused.

Where: ``$HARNESS_CACHE_DIR/srd/<key>/srd``, else
``${XDG_CACHE_HOME:-~/.cache}/harness/srd/<key>/srd``. Local nodes (the
controlling machine and namespaces on it) share the controller's cache;
other nodes build in their own cache, from a copy of the source put there.
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

SOURCE = Path(__file__).with_name("srd.c")
CFLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-D_FORTIFY_SOURCE=2"]
COMPILERS = ("gcc", "cc")
_INSTALL_HINT = "install a C compiler: `apt-get install gcc` (Debian/Ubuntu) or `dnf install gcc`"


class BuildFailed(HarnessError):
    """The daemon's source did not compile."""


def source_bytes() -> bytes:
    try:
        return SOURCE.read_bytes()
    except FileNotFoundError:
        raise HarnessError(
            f"relay source {SOURCE} is missing",
            "reinstall the harness package (srd.c must be installed as package data)",
        ) from None


def cache_key(source: bytes, compiler_id: str) -> str:
    """16 hex digits identifying (source, flags, compiler version)."""
    digest = hashlib.sha256()
    for part in (source, " ".join(CFLAGS).encode(), compiler_id.encode()):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()[:16]


def local_cache_root() -> Path:
    if os.environ.get("HARNESS_CACHE_DIR"):
        return Path(os.environ["HARNESS_CACHE_DIR"]) / "srd"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "harness" / "srd"


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
    """Return the path of a compiled daemon on this machine, compiling it if needed."""
    source = source_bytes()
    cc = _local_compiler()
    key = cache_key(source, _compiler_id(cc))
    root = cache_root or local_cache_root()
    binary = root / key / "srd"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    # Compile into a private temp dir, then rename: concurrent builders never see half a file.
    with tempfile.TemporaryDirectory(dir=binary.parent, prefix=".build-") as tmp:
        src = Path(tmp) / "srd.c"
        src.write_bytes(source)
        out = Path(tmp) / "srd"
        proc = subprocess.run(
            [cc, *CFLAGS, "-o", str(out), str(src)], check=False, capture_output=True, text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            raise BuildFailed(
                f"compiling the relay daemon failed ({cc}):\n{proc.stderr.strip()[-2000:]}",
                "report this with the compiler output; a compiler older than gcc 8 may lack"
                " features srd.c uses",
            )
        os.chmod(out, 0o755)
        os.replace(out, binary)
    return binary


def is_local(node: Node) -> bool:
    """True if ``node`` runs on the controlling machine's filesystem (local or its namespaces)."""
    desc = node.describe()
    while desc.get("type") == "netns":
        desc = desc["parent"]
    return desc.get("type") == "local"


def build_on(node: Node) -> str:
    """Path *on node* of a compiled daemon, compiling it there (once) if needed."""
    if is_local(node):
        return str(build_local())
    return _build_remote(node)


def _build_remote(node: Node) -> str:
    probe = node.run(
        'for c in gcc cc; do command -v "$c" && "$c" --version | head -n1 && break; done;'
        ' printf "%s\\n" "${XDG_CACHE_HOME:-$HOME/.cache}"',
        check=False, timeout=30,
    )
    lines = probe.stdout.splitlines()
    if len(lines) < 3:
        raise CapabilityMissing(f"no C compiler (gcc or cc) on {node.name}", _INSTALL_HINT)
    cc, version, cache = lines[0], lines[1], lines[-1]
    source = source_bytes()
    key = cache_key(source, version)
    directory = f"{cache}/harness/srd/{key}"
    binary = f"{directory}/srd"
    if node.run(["test", "-x", binary], check=False, timeout=30).ok:
        return binary
    node.run(["mkdir", "-p", directory], timeout=30)
    with tempfile.NamedTemporaryFile(suffix=".c") as local_src:
        local_src.write(source)
        local_src.flush()
        remote_src = f"{directory}/srd.c"
        node.put(local_src.name, remote_src)
    tmp_bin = f"{binary}.tmp.{os.getpid()}"
    result = node.run(
        f"{shlex.join([cc, *CFLAGS, '-o', tmp_bin, remote_src])} && mv -f {shlex.quote(tmp_bin)}"
        f" {shlex.quote(binary)}",
        check=False, timeout=180,
    )
    if not result.ok:
        raise BuildFailed(
            f"compiling the relay daemon on {node.name} failed:\n{result.stderr.strip()[-2000:]}",
            "check the node's compiler (gcc >= 8) and that its cache directory is writable",
        )
    return binary
