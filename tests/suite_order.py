"""The suite's order on its pytest-xdist workers: the longest files first, by measured seconds.

`nox -s tests` runs the suite with ``--dist loadfile``: a file is one unit of work (a
notebook's cells share one kernel; a module's VM, sshd or Slurm cluster is made once), and the
suite ends when the worker with the most left ends. So the files go out longest first (the
longest-processing-time rule): their seconds are those a suite run measured, kept in
``tests/durations.json`` (``nox -s tests -- --store-durations`` writes it afresh); a file not
listed there yet is guessed by its kind (a VM test, a notebook, another integration test, a unit
test).

xdist hands a worker its next file while the worker still runs its last two tests (it must know
its next test before it runs one). A worker that has just taken a file of one long test (a whole
study run) would so take the next longest file as well, and keep it from the other worker
for the length of that test: ``LongestFirst`` gives such a worker the shortest file waiting
instead, and the long files to workers about to be free.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")

# a file not in durations.json, by its kind (seconds of one worker; the measured medians of
# each kind on this 2-core machine, rounded up)
GUESS_S = {"vm": 300.0, "notebook": 60.0, "integration": 20.0, "unit": 1.0}

# a worker whose tests still to run are expected to take longer than this is "busy": the file
# it gets now waits behind them, so it gets a short one
BUSY_S = 30.0

# folders whose files share a package-scoped fixture: one unit of work, so that one worker runs
# them one after another under that fixture (made once) rather than each worker making its own
SHARED_FOLDERS = ("tests/integration/vm/",)  # one VM for the folder (its conftest.py)

# a test stored in durations.json on its own (besides its file's sum): long enough to matter
# when a worker's remaining work is estimated
TEST_MIN_S = 1.0


@dataclass
class Durations:
    """Measured seconds of one worker per test file (setup, call and teardown of its tests)
    and per long test (nodeid), as one suite run measured them."""

    files: dict[str, float] = field(default_factory=dict)
    tests: dict[str, float] = field(default_factory=dict)
    measured: str = ""

    @classmethod
    def load(cls, path: Path = DURATIONS) -> Durations:
        if not path.exists():
            return cls()
        data = json.loads(path.read_text())
        return cls(files=data.get("files", {}), tests=data.get("tests", {}),
                   measured=data.get("measured", ""))

    def save(self, path: Path = DURATIONS) -> None:
        path.write_text(json.dumps({
            "measured": self.measured,
            "files": dict(sorted(self.files.items(), key=lambda kv: -kv[1])),
            "tests": dict(sorted(self.tests.items(), key=lambda kv: -kv[1])),
        }, indent=1) + "\n")

    def of_file(self, path: str, kind: str) -> float:
        return self.files.get(path, GUESS_S[kind])

    def of_tests(self, nodeids) -> float:
        """The seconds expected for these tests: the long ones as measured, the others at
        nothing (a file's short tests are what fills in around the long ones)."""
        return sum(self.tests.get(nodeid, 0.0) for nodeid in nodeids)

    @classmethod
    def from_reports(cls, seconds: dict[str, float], measured: str) -> Durations:
        """From each test's seconds (nodeid -> setup + call + teardown)."""
        files: dict[str, float] = {}
        for nodeid, s in seconds.items():
            path = nodeid.split("::", 1)[0]
            files[path] = files.get(path, 0.0) + s
        return cls(files={p: round(s, 1) for p, s in files.items()},
                   tests={n: round(s, 1) for n, s in seconds.items() if s >= TEST_MIN_S},
                   measured=measured)


def unit_of(path: str) -> str:
    """The unit of work a test file belongs to: its shared folder, or itself."""
    return next((folder for folder in SHARED_FOLDERS if path.startswith(folder)), path)


def file_order(paths_kinds: dict[str, str], durations: Durations) -> list[str]:
    """The files (path -> kind) by unit of work, the longest unit first (a unit's seconds are
    its files' sum), and in a unit the longest file first; equal units by name."""
    seconds = {p: durations.of_file(p, kind) for p, kind in paths_kinds.items()}
    units: dict[str, float] = {}
    for path, s in seconds.items():
        units[unit_of(path)] = units.get(unit_of(path), 0.0) + s
    return sorted(seconds, key=lambda p: (-units[unit_of(p)], unit_of(p), -seconds[p]))


def pick_next(queue: OrderedDict, pending: list[str], durations: Durations) -> str:
    """The waiting file (``queue``: path -> its tests, longest first) to give a worker whose
    tests still to run are ``pending``: the longest, unless those will keep it busy for more
    than BUSY_S; then the shortest, so that the longest stays for a worker about to be free."""
    if len(queue) > 1 and durations.of_tests(pending) > BUSY_S:
        return next(reversed(queue))
    return next(iter(queue))


try:
    from xdist.scheduler import LoadFileScheduling
except ImportError:  # the suite without xdist: nothing to schedule
    LongestFirst = None
else:
    class LongestFirst(LoadFileScheduling):
        """``--dist loadfile`` whose files go out in the collection's order (longest first:
        tests/conftest.py sorts them), except that a busy worker gets the shortest waiting
        file (see :func:`pick_next`)."""

        durations = Durations()

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(super()._split_scope(nodeid))

        def _assign_work_unit(self, node) -> None:
            pending = [nodeid for tests in self.assigned_work.get(node, {}).values()
                       for nodeid, done in tests.items() if not done]
            chosen = pick_next(self.workqueue, pending, self.durations)
            self.workqueue.move_to_end(chosen, last=False)  # xdist pops the first
            super()._assign_work_unit(node)
