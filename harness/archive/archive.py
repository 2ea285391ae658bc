"""The run archive: ``data/runs/<study>/<run-id>/`` per run, immutable once complete.

A run folder holds ``run.json`` (status, parameters, provenance, capabilities,
topology, link verification, configuration records, times), ``journal.jsonl``
(every change and its undo), ``raw/`` (tool outputs as they came), tidy
``results.parquet`` + ``results.csv``, and, for notebook runs, the executed
notebook and its rendered HTML.

A run starts ``incomplete`` and becomes ``complete`` only at a clean finish;
a crash or Ctrl-C leaves it ``incomplete`` and analyses skip it. Folders are
created exclusively, files are never overwritten, and a complete run's files
are made read-only.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ArchiveError, SpecError, write_failed
from ..journal.journal import Journal

RUN_FILE = "run.json"
COMPLETE = "complete"
INCOMPLETE = "incomplete"


def project_root() -> Path:
    here = Path(__file__).resolve().parents[2]
    return here if (here / "pyproject.toml").exists() else Path.cwd()


def refuse_existing(out: Path, what: str, fix: str) -> None:
    """One SpecError, before anything is written, when ``out`` (a new output: a crate, a site,
    a pooled folder) exists already or its parent folder does not: nothing is ever written
    over something that is there."""
    if out.exists() or out.is_symlink():
        raise SpecError(f"{out} exists already: {what} is never written over anything", fix)
    if not out.parent.is_dir():
        raise SpecError(f"the folder {out.parent} for {what} does not exist",
                        "create it first, or give a path in an existing folder")


def data_root() -> Path:
    """``$HARNESS_DATA`` if set, else the project's ``data/`` folder."""
    env = os.environ.get("HARNESS_DATA")
    return Path(env) if env else project_root() / "data"


def notebook_record(notebook: str | os.PathLike | None) -> str | None:
    """How run.json names a notebook: relative to the project when it is inside it.

    An absolute path names a folder of the machine that made the run (the committed
    reference runs name /tmp/ref/notebooks/...), meaningless elsewhere; nothing
    executes it anyway (a rerun finds its notebook by study, see harness.run.rerun)."""
    if not notebook:
        return None
    path = Path(notebook).resolve()
    try:
        return str(path.relative_to(project_root()))
    except ValueError:
        return str(path)


def archived_notebook(meta: dict) -> Path | None:
    """The notebook a run.json names, as a path on this machine (old runs wrote absolute
    paths, newer ones paths relative to the project). For display and comparison only:
    never imported or executed as given."""
    named = meta.get("notebook")
    if not isinstance(named, str) or not named:
        return None
    path = Path(named)
    return path if path.is_absolute() else project_root() / path


def runs_root(root: Path | None = None) -> Path:
    return (root or data_root()) / "runs"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "w") as fh:
            json.dump(data, fh, indent=2, sort_keys=True, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # the old file stays whole: the write never reached it
        tmp.unlink(missing_ok=True)
        raise write_failed(path, exc) from None


@dataclass
class Run:
    path: Path

    # -- creation / opening ------------------------------------------------------
    @classmethod
    def create(cls, study: str, parameters: dict, root: Path | None = None,
               notebook: str | None = None) -> Run:
        base = runs_root(root) / study
        base.mkdir(parents=True, exist_ok=True)
        for _ in range(10):
            run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
            path = base / run_id
            try:
                # exclusive: never reuse a folder; 0700 whatever the umask (HARNESS_DATA may
                # be a group's project folder: the run's files are its user's alone)
                path.mkdir(mode=0o700)
                break
            except FileExistsError:
                time.sleep(0.01)
        else:
            raise ArchiveError(f"could not create a new run folder under {base}")
        (path / "raw").mkdir(mode=0o700)
        run = cls(path)
        _write_json_atomic(path / RUN_FILE, {
            "run_id": run_id,
            "study": study,
            "status": INCOMPLETE,
            "parameters": parameters,
            "notebook": notebook_record(notebook),
            "started": now_iso(),
            "ended": None,
            "owner_pid": os.getpid(),
        })
        return run

    @classmethod
    def open(cls, path: str | os.PathLike) -> Run:
        path = Path(path)
        if not (path / RUN_FILE).exists():
            raise ArchiveError(f"{path} is not a run folder (no {RUN_FILE})",
                               "pass the folder `harness run` created, or leave run_dir empty")
        return cls(path)

    # -- reading ---------------------------------------------------------------
    @property
    def meta(self) -> dict:
        return json.loads((self.path / RUN_FILE).read_text())

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def study(self) -> str:
        return self.meta["study"]

    @property
    def status(self) -> str:
        return self.meta["status"]

    @property
    def journal(self) -> Journal:
        return Journal(self.path / "journal.jsonl")

    # -- writing ---------------------------------------------------------------
    def _check_open(self) -> None:
        if self.status == COMPLETE:
            raise ArchiveError(f"run {self.path} is complete and immutable",
                               "start a new run instead of changing an archived one")

    def update(self, **fields) -> None:
        """Merge top-level fields into run.json (only while the run is not complete)."""
        self._check_open()
        meta = self.meta
        meta.update(fields)
        _write_json_atomic(self.path / RUN_FILE, meta)

    def add_raw(self, name: str, content: str | bytes) -> Path:
        """Store a tool's raw output under raw/; an existing file is never replaced."""
        self._check_open()
        target = self.path / "raw" / name
        if target.resolve().parent != (self.path / "raw").resolve():
            raise ArchiveError(f"raw file name {name!r} must not contain a path")
        mode = "xb" if isinstance(content, bytes) else "x"
        try:
            with open(target, mode) as fh:
                with _removed_if_cut_short(target):
                    fh.write(content)
                    fh.flush()
        except FileExistsError:
            raise ArchiveError(f"{target} exists already",
                               "give each raw output a unique name") from None
        return target

    def add_json(self, name: str, data: dict) -> Path:
        """A JSON file beside run.json, written once: an existing file is never replaced."""
        self._check_open()
        target = self.path / name
        if target.resolve().parent != self.path.resolve():
            raise ArchiveError(f"file name {name!r} must not contain a path")
        try:
            with open(target, "x") as fh:
                with _removed_if_cut_short(target):
                    json.dump(data, fh, indent=1, ensure_ascii=False)
                    fh.write("\n")
                    fh.flush()
        except FileExistsError:
            raise ArchiveError(f"{target} exists already") from None
        return target

    def add_file(self, name: str, source: Path) -> Path:
        """Copy ``source`` into the run as ``name``, created exclusively.

        Neither end may be a symlink (O_NOFOLLOW): a link planted in a run folder
        would make root write through it, and a linked source would copy whatever
        file it points at (say /etc/shadow) into an archive meant to be shared."""
        self._check_open()
        if not name or "/" in name or name in (".", ".."):
            raise ArchiveError(f"file name {name!r} must not contain a path")
        target = self.path / name
        try:
            src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise ArchiveError(f"cannot read {source} to archive it: {exc.strerror}"
                               + (" (a symlink is not followed)" if os.path.islink(source)
                                  else ""), "archive a regular file") from None
        try:
            if not stat.S_ISREG(os.fstat(src).st_mode):
                raise ArchiveError(f"{source} is not a regular file", "archive a regular file")
            try:
                dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                              | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                raise ArchiveError(f"{target} exists already") from None
            with os.fdopen(dst, "wb") as out, _removed_if_cut_short(target):
                while chunk := os.read(src, 1 << 20):
                    out.write(chunk)
                out.flush()
        finally:
            os.close(src)
        return target

    def write_table(self, frame, name: str = "results") -> Path:
        """Tidy results as Parquet (typed) and CSV (for anyone)."""
        self._check_open()
        parquet = self.path / f"{name}.parquet"
        if parquet.exists():
            raise ArchiveError(f"{parquet} exists already")
        with _removed_if_cut_short(parquet), _removed_if_cut_short(self.path / f"{name}.csv"):
            frame.to_parquet(parquet, index=False)
            frame.to_csv(self.path / f"{name}.csv", index=False)
        return parquet

    def finish(self, status: str, error: str | None = None, ended: str | None = None) -> None:
        if status not in (COMPLETE, INCOMPLETE):
            raise ValueError(status)
        if os.getpid() != self.meta.get("owner_pid", os.getpid()):
            return  # a forked child unwinding a copy of the owner's stack
        self._check_open()
        if status == COMPLETE and self.path.is_symlink():  # checked again, race-free, below
            raise _swapped(self.path)
        self.update(status=status, ended=ended or now_iso(), error=error)
        if status == COMPLETE:
            self._freeze()

    def _freeze(self) -> None:
        """Make every file of a complete run read-only, through file descriptors.

        The run folder is opened from its parent without following a symlink, each folder
        below it from its parent's descriptor (a link to a folder is not entered), and each
        file is changed through its own descriptor after it is seen to be a regular file
        (fchmod). A link in the folder is left as it is, and a run folder that has become a
        link is one error, nothing changed: chmod by path follows links, so a link planted
        there (or a run folder swapped for a link to /home/alice by someone who may write a
        folder above it) would make root take the write bits off files outside the run."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
        try:
            parent = os.open(self.path.parent, flags)
        except OSError as exc:
            raise ArchiveError(f"cannot open {self.path.parent} to make run {self.run_id} "
                               f"read-only: {exc.strerror}") from None
        try:
            top = os.open(self.path.name, flags | os.O_NOFOLLOW, dir_fd=parent)
        except OSError as exc:
            raise _swapped(self.path, exc) from None
        finally:
            os.close(parent)
        try:
            for _dirpath, _dirs, files, dirfd in os.fwalk(".", dir_fd=top):
                for name in files:
                    _freeze_file(name, dirfd)
        finally:
            os.close(top)


def _swapped(path: Path, exc: OSError | None = None) -> ArchiveError:
    why = "a symlink (not followed)" if path.is_symlink() else \
        f"not a folder ({exc.strerror if exc else 'gone'})"
    return ArchiveError(f"run folder {path} is now {why}: nothing was made read-only",
                        "a run folder's parent must be writable by you alone; look at who "
                        "changed it")


def _freeze_file(name: str, dirfd: int) -> None:
    """Take the write bits off regular file ``name`` of folder ``dirfd``, through its own
    descriptor; anything else (a symlink, a FIFO, a device) is left alone, never opened."""
    if not stat.S_ISREG(os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode):
        return
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dirfd)
    except OSError:  # replaced since (by a link: ELOOP), or gone: nothing of ours to freeze
        return
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode):
            os.fchmod(fd, stat.S_IMODE(mode) & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    finally:
        os.close(fd)


@contextmanager
def _removed_if_cut_short(target: Path) -> Iterator[None]:
    """A new archive file whose write failed (full disk) is removed, never left half-written;
    the failure becomes one :class:`ArchiveError`."""
    try:
        yield
    except OSError as exc:
        target.unlink(missing_ok=True)
        raise write_failed(target, exc) from None


def list_runs(study: str | None = None, root: Path | None = None,
              status: str | None = None) -> list[Run]:
    """Archived runs, oldest first, optionally of one study and status."""
    base = runs_root(root)
    studies = [base / study] if study else sorted(p for p in base.glob("*") if p.is_dir())
    runs = []
    for folder in studies:
        for path in sorted(folder.glob("*/" + RUN_FILE)):
            run = Run(path.parent)
            try:
                if status is None or run.status == status:
                    runs.append(run)
            except (ValueError, KeyError, TypeError, OSError):
                # not JSON, not UTF-8, not a mapping, not a file: no run of that status (one
                # damaged run.json made `harness batch` and `compare` fail for every run)
                continue
    return runs


def latest_run(study: str, root: Path | None = None) -> Run:
    runs = list_runs(study, root, COMPLETE)
    if not runs:
        raise ArchiveError(f"no complete run of study {study!r} in {runs_root(root)}",
                           f"run one first: harness run notebooks/{study}*.ipynb")
    return runs[-1]
