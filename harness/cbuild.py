"""Compile one of the project's C programs on first use, into a cache keyed by its source.

The relay daemon (srd.c) and the fan-in generator (fanin.c) are C: the
studies measure costs an interpreter would blur. Shipping binaries would tie
the package to one libc and architecture; compiling with the node's own
compiler takes about a second once, and the cache key (a hash of source,
flags and compiler) means a changed source or compiler is rebuilt, never
silently reused.

Where: ``$HARNESS_CACHE_DIR/<name>/<key>/<name>``, else
``${XDG_CACHE_HOME:-~/.cache}/harness/<name>/<key>/<name>``. Local nodes (the
controlling machine and its namespaces) share the controller's cache. VM
nodes of this project share the host's root file system read-only, so a
binary built here is already there: :meth:`CProgram.build_on` first asks the
node whether the host's binary is visible at the same path *with the same
content* (sha256) and uses it; only otherwise does it compile on the node,
in its cache or, if that is read-only, under /tmp.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import CapabilityMissing, HarnessError
from .nodes.base import Node

COMPILERS = ("gcc", "cc")
INSTALL_HINT = "install a C compiler: `apt-get install gcc` (Debian/Ubuntu) or `dnf install gcc`"


class BuildFailed(HarnessError):
    """A program's source did not compile."""


@dataclass(frozen=True)
class CProgram:
    name: str  # of the binary and of its cache folder
    source: Path
    cflags: tuple[str, ...]
    what: str  # for messages: "the relay daemon"

    def source_bytes(self) -> bytes:
        try:
            return self.source.read_bytes()
        except FileNotFoundError:
            raise HarnessError(f"{self.what}'s source {self.source} is missing",
                               f"reinstall the harness package ({self.source.name} is "
                               "package data)") from None

    def cache_key(self, source: bytes, compiler_id: str) -> str:
        """16 hex digits identifying (source, flags, compiler version)."""
        digest = hashlib.sha256()
        for part in (source, " ".join(self.cflags).encode(), compiler_id.encode()):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
        return digest.hexdigest()[:16]

    def local_cache_root(self) -> Path:
        if os.environ.get("HARNESS_CACHE_DIR"):
            return Path(os.environ["HARNESS_CACHE_DIR"]) / self.name
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        return Path(base) / "harness" / self.name

    def build_local(self, cache_root: Path | None = None) -> Path:
        """Path of the compiled program on this machine, compiling it if needed."""
        source = self.source_bytes()
        cc = local_compiler()
        binary = (cache_root or self.local_cache_root()) / self.cache_key(
            source, compiler_id(cc)) / self.name
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
        binary.parent.mkdir(parents=True, exist_ok=True)
        # Compile in a private temp dir, then rename: concurrent builders never see half a file.
        with tempfile.TemporaryDirectory(dir=binary.parent, prefix=".build-") as tmp:
            src = Path(tmp) / self.source.name
            src.write_bytes(source)
            out = Path(tmp) / self.name
            proc = subprocess.run([cc, *self.cflags, "-o", str(out), str(src)], check=False,
                                  capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                raise BuildFailed(f"compiling {self.what} failed ({cc}):\n"
                                  f"{proc.stderr.strip()[-2000:]}",
                                  "report this with the compiler output (gcc >= 8 is needed)")
            os.chmod(out, 0o755)
            os.replace(out, binary)
        return binary

    def build_on(self, node: Node, reuse_host_build: bool = True) -> str:
        """Path *on node* of the compiled program (built once per source and compiler)."""
        if node.is_local:
            return str(self.build_local())
        if reuse_host_build:
            try:
                host_binary = self.build_local()
            except (CapabilityMissing, BuildFailed):
                host_binary = None
            if host_binary is not None:
                # A VM sharing our root file system sees the very same file.
                res = node.run(f"sha256sum {shlex.quote(str(host_binary))} 2>/dev/null",
                               check=False, timeout=60)
                digest = hashlib.sha256(host_binary.read_bytes()).hexdigest()
                if res.ok and res.stdout.split()[:1] == [digest]:
                    return str(host_binary)
        return self._build_remote(node)

    def _build_remote(self, node: Node) -> str:
        probe = node.run(
            'for c in gcc cc; do command -v "$c" && "$c" --version | head -n1 && break; done;'
            ' printf "%s\\n" "${XDG_CACHE_HOME:-$HOME/.cache}"',
            check=False, timeout=60,
        )
        lines = probe.stdout.splitlines()
        if len(lines) < 3:
            raise CapabilityMissing(f"no C compiler (gcc or cc) on {node.name}", INSTALL_HINT)
        cc, version, cache = lines[0], lines[1], lines[-1]
        source = self.source_bytes()
        key = self.cache_key(source, version)
        for root in (f"{cache}/harness/{self.name}", f"/tmp/harness-cache-{self.name}"):
            directory = f"{root}/{key}"
            binary = f"{directory}/{self.name}"
            if node.run(["test", "-x", binary], check=False, timeout=30).ok:
                return binary
            if node.run(["mkdir", "-p", directory], check=False, timeout=30).ok and \
                    node.run(["test", "-w", directory], check=False, timeout=30).ok:
                break
        else:
            raise BuildFailed(f"no writable cache directory on {node.name}",
                              "make $XDG_CACHE_HOME or /tmp writable on the node")
        remote_src = f"{directory}/{self.source.name}"
        node.run(f"cat > {shlex.quote(remote_src)}", stdin=source, timeout=60)
        tmp_bin = f"{binary}.tmp.{os.getpid()}"
        result = node.run(
            f"{shlex.join([cc, *self.cflags, '-o', tmp_bin, remote_src])} && "
            f"mv -f {shlex.quote(tmp_bin)} {shlex.quote(binary)}", check=False, timeout=300)
        if not result.ok:
            raise BuildFailed(f"compiling {self.what} on {node.name} failed:\n"
                              f"{result.stderr.strip()[-2000:]}",
                              "check the node's compiler (gcc >= 8) and its cache directory")
        return binary


def local_compiler() -> str:
    for name in COMPILERS:
        path = shutil.which(name)
        if path:
            return path
    raise CapabilityMissing("no C compiler (gcc or cc) on the controlling machine", INSTALL_HINT)


@functools.cache
def compiler_id(cc: str) -> str:
    """First line of ``cc --version`` (asked once per process: it keys every cache lookup)."""
    out = subprocess.run([cc, "--version"], check=False, capture_output=True, text=True,
                         timeout=30)
    return (out.stdout.splitlines() or [cc])[0]


