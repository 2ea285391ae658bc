"""Compile one of the project's C programs on first use, into a cache keyed by its source.

The relay daemon (srd.c) and the fan-in generator (fanin.c) are C: the
studies measure costs an interpreter would blur. Shipping binaries would tie
the package to one libc and architecture; compiling with the node's own
compiler takes about a second once, and the cache key (a hash of source,
flags and compiler) means a changed source or compiler is rebuilt, never
silently reused.

Where: ``$HARNESS_CACHE_DIR/<name>/<key>/<name>``, else
``${XDG_CACHE_HOME:-~/.cache}/harness/<name>/<key>/<name>``. Local nodes (the
controlling machine and its namespaces) share the controller's cache, used only if no
user but this one (and root) can change it and run only with the sha256 recorded at its
build (:func:`check_own_path`, :func:`local_digest`). VM
nodes of this project share the host's root file system read-only, so a
binary built here is already there: :meth:`CProgram.build_on` first asks such a
node (:attr:`~harness.nodes.base.Node.sees_host_root`) whether the host's binary is
visible at the same path *with the same content* (sha256) and uses it. Never on an SSH
machine: there the same path is the node's own file, which anyone able to write it
there could have made match, and swap between the check and the run. Every other node
compiles, in a private folder (owned by the node's user, 0700, no symlink, no folder above it
that another user may write): its cache or, if that
is read-only, ``/tmp/harness-cache-<uid>``. A binary found there runs only if its sha256
is the one recorded when it was built.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import CapabilityMissing, HarnessError
from .nodes.base import Node
from .ownpath import not_own_reason

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
        """Path of the compiled program on this machine, compiling it if needed.

        The cache is checked like a remote node's (issue 26): its folder and every folder
        above it must be writable by no user but this one and root (:func:`check_own_path`),
        and a binary found there runs only if its sha256 is the one recorded at its build.
        Why: root with another user's environment (``sudo -E``, a shared
        ``$HARNESS_CACHE_DIR``) would otherwise run whatever that user put at
        ``~/.cache/harness/srd/KEY/srd``."""
        source = self.source_bytes()
        cc = local_compiler()
        binary = (cache_root or self.local_cache_root()) / self.cache_key(
            source, compiler_id(cc)) / self.name
        check_own_path(binary.parent, self.what)  # before anything is made there
        old_umask = os.umask(0o022)
        try:
            binary.parent.mkdir(parents=True, exist_ok=True)
        finally:
            os.umask(old_umask)
        check_own_path(binary.parent, self.what)
        digest_file = binary.with_name(self.name + DIGEST_SUFFIX)
        if local_digest(binary) is not None and local_digest(binary) == _read_text(digest_file):
            return binary
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
            record = Path(tmp) / digest_file.name
            record.write_text(hashlib.sha256(out.read_bytes()).hexdigest() + "\n")
            os.replace(record, digest_file)
            os.replace(out, binary)
        return binary

    def build_on(self, node: Node, reuse_host_build: bool = True) -> str:
        """Path *on node* of the compiled program (built once per source and compiler)."""
        if node.is_local:
            return str(self.build_local())
        if reuse_host_build and node.sees_host_root:
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
        """Compile on ``node`` into a private cache folder; a binary found there runs only
        if its sha256 is the one recorded when it was built.

        Private: the cache root is a real folder (no symlink) owned by the node's user,
        mode 0700 (see :data:`PRIVATE_DIR`). The old fallback, a shared
        ``/tmp/harness-cache-<name>`` whose name anyone could compute, let another user
        plant a binary there that root then ran; the fallback now is
        ``/tmp/harness-cache-<uid>`` and passes the same checks (someone else's folder of
        that name is refused, never used)."""
        probe = node.run(
            'for c in gcc cc; do command -v "$c" && "$c" --version | head -n1 && break; done;'
            ' id -u; printf "%s\\n" "${XDG_CACHE_HOME:-$HOME/.cache}"',
            check=False, timeout=60,
        )
        lines = probe.stdout.splitlines()
        if len(lines) < 4:
            raise CapabilityMissing(f"no C compiler (gcc or cc) on {node.name}", INSTALL_HINT)
        cc, version, uid, cache = lines[0], lines[1], lines[-2], lines[-1]
        source = self.source_bytes()
        key = self.cache_key(source, version)
        root = private_root(node, (f"{cache}/harness", f"{SHARED_TMP}/harness-cache-{uid}"))
        directory = f"{root}/{self.name}/{key}"
        binary = f"{directory}/{self.name}"
        if remote_digest(node, binary) is not None:
            return binary
        node.run(f"umask 077 && mkdir -p -- {shlex.quote(directory)}", timeout=30)
        remote_src = f"{directory}/{self.source.name}"
        node.run(f"umask 077 && cat > {shlex.quote(remote_src)}", stdin=source, timeout=60)
        tmp_bin = f"{binary}.tmp.{os.getpid()}"
        q = shlex.quote
        result = node.run(
            f"umask 077 && {shlex.join([cc, *self.cflags, '-o', tmp_bin, remote_src])} && "
            f"chmod 0700 {q(tmp_bin)} && sha256sum {q(tmp_bin)} | cut -d' ' -f1 > "
            f"{q(binary + DIGEST_SUFFIX)} && mv -f {q(tmp_bin)} {q(binary)}",
            check=False, timeout=300)
        if not result.ok:
            raise BuildFailed(f"compiling {self.what} on {node.name} failed:\n"
                              f"{result.stderr.strip()[-2000:]}",
                              "check the node's compiler (gcc >= 8) and its cache directory")
        if remote_digest(node, binary) is None:
            raise BuildFailed(f"{self.what} built on {node.name} at {binary} does not match "
                              "the sha256 recorded at its build",
                              "something else writes to that folder: remove it and run again")
        return binary


# The fallback cache's parent when the node's own cache is read-only (a VM sharing the
# host's root file system). A module constant so tests can point it at their own folder.
SHARED_TMP = "/tmp"
DIGEST_SUFFIX = ".sha256"

# Makes $d a private folder or says why it cannot be one (exit 1, reason on stderr). Every
# folder above it that exists (symlinks resolved) must be this user's or root's and writable
# by no one else -- a sticky folder such as /tmp aside -- before anything is made there: a
# folder another user may write lets that user rename ours away and put theirs, with a
# binary and its recorded sha256, in its place (the node's counterpart of harness.ownpath).
PRIVATE_DIR = r"""d=$1
u=$(id -u) || exit 1
[ -L "$d" ] && { echo "$d is a symlink" >&2; exit 1; }
r=$(realpath -m -- "$d") || { echo "cannot resolve $d (no realpath)" >&2; exit 1; }
p=$r
while [ "$p" != / ]; do
  p=${p%/*}; [ -n "$p" ] || p=/
  [ -e "$p" ] || continue
  o=$(stat -c %u -- "$p") && m=$(stat -c %a -- "$p") || exit 1
  [ "$o" = 0 ] || [ "$o" = "$u" ] || { echo "$p belongs to uid $o" >&2; exit 1; }
  [ $((0$m & 022)) = 0 ] || [ $((0$m & 01000)) != 0 ] \
    || { echo "group or others may write $p (mode $m)" >&2; exit 1; }
done
d=$r  # the path checked, not the one given (a link on its way could lead elsewhere later)
[ -L "$d" ] && { echo "$d is a symlink" >&2; exit 1; }
[ -e "$d" ] || (umask 077 && mkdir -p -- "$d") || exit 1
[ -L "$d" ] && { echo "$d is a symlink" >&2; exit 1; }
[ -d "$d" ] || { echo "$d is not a folder" >&2; exit 1; }
o=$(stat -c %u -- "$d") || exit 1
[ "$o" = "$u" ] || { echo "$d belongs to uid $o, not to uid $u" >&2; exit 1; }
chmod 0700 -- "$d" && [ "$(stat -c %a -- "$d")" = 700 ] && [ -w "$d" ] \
  || { echo "$d cannot be made private (0700) and writable" >&2; exit 1; }
printf '%s\n' "$d"
"""


def private_root(node: Node, candidates: tuple[str, ...]) -> str:
    """The first of ``candidates`` that is (or now is) a private folder on ``node``."""
    reasons = []
    for root in candidates:
        res = node.run(["sh", "-c", PRIVATE_DIR, "private_dir", root], check=False, timeout=30)
        if res.ok and res.stdout.strip():
            return res.stdout.strip().splitlines()[-1]
        reasons.append(res.stderr.strip() or f"{root}: exit {res.returncode}")
    raise BuildFailed(f"no private cache folder on {node.name}: " + "; ".join(reasons),
                      "make $XDG_CACHE_HOME writable on the node, or remove the folders "
                      "named above if they are not yours")


def remote_digest(node: Node, binary: str) -> str | None:
    """The sha256 of ``binary`` on ``node`` if it is a regular file (not a symlink) whose
    hash is the one recorded beside it at build time, else None (never trusted)."""
    q = shlex.quote
    res = node.run(f"[ -f {q(binary)} ] && [ ! -L {q(binary)} ] && "
                   f"sha256sum {q(binary)} && cat {q(binary + DIGEST_SUFFIX)}",
                   check=False, timeout=60)
    lines = res.stdout.split() if res.ok else []
    if len(lines) == 3 and len(lines[0]) == 64 and lines[0] == lines[2]:
        return lines[0]
    return None


def check_own_path(folder: Path, what: str) -> None:
    """Refuse (BuildFailed) a cache folder that someone other than this user or root could
    change (:func:`harness.ownpath.not_own_reason`): a binary is run from there as root."""
    why = not_own_reason(folder)
    if why is not None:
        raise BuildFailed(f"the cache of {what} is {folder}, and {why}: that user could "
                          f"replace what runs as uid {os.geteuid()}",
                          "point $HARNESS_CACHE_DIR at a folder of your own (sudo -E keeps "
                          "another user's $HOME and $XDG_CACHE_HOME), or chmod go-w the "
                          "folder named")


def local_digest(binary: Path) -> str | None:
    """The sha256 of ``binary`` if it is a regular file (no symlink) of this user that no one
    else may write; None otherwise (never trusted)."""
    try:
        fd = os.open(binary, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        return hashlib.sha256(fh.read()).hexdigest()


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


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


