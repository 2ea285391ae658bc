"""Whether a folder or file on this machine can be changed by no user but this one and root.

Why: the harness runs as root and keeps things it later *runs* or *boots* in caches under
``$HOME`` or ``$XDG_CACHE_HOME`` (compiled helpers, an extracted VM kernel). Under
``sudo -E`` those variables are another user's, and that user could put a program there
that root then runs (issue 26). So a cache is trusted only if every folder from ``/``
down to it (symlinks resolved) is owned by this user or root and writable by no one else
-- a sticky folder such as ``/tmp`` aside, where each entry stays its owner's -- which is
what OpenSSH's ``StrictModes`` asks of ``~/.ssh``; and a file in it only if it is a regular
file of this user that no one else may write.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def not_own_reason(folder: str | os.PathLike) -> str | None:
    """Why another user could change ``folder`` or a folder above it; None if no one can.
    A folder that does not exist (yet) is judged by the folders above it."""
    uid = os.geteuid()
    real = Path(os.path.realpath(folder))
    for current in (*reversed(real.parents), real):
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None  # what is above it was checked; it will be made by us
        if st.st_uid not in (0, uid):
            return f"{current} belongs to uid {st.st_uid}"
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return f"group or others may write {current} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def own_file(path: str | os.PathLike) -> bool:
    """A regular file (not a symlink) of this user that no one else may write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022
