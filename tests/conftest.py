"""Shared fixtures: a journal in a temp folder, an isolated data root, root checks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from suite_order import Durations, LongestFirst, file_order

from harness.journal.journal import Journal

# The suite runs on pytest-xdist workers (`nox -s tests`, `--dist loadfile`): a file is a
# unit of work (a notebook under nbval: one kernel, its cells in order; a module: its
# module fixtures, a VM or an sshd, made once), and each worker takes the next unit as it
# frees up. The longest go first, by the seconds a suite run measured (tests/durations.json;
# a file not there yet by its kind), so no worker is left with a long one at the end
# (tests/suite_order.py).
COST_CLASS = {"vm": 0, "notebook": 1, "integration": 2}


def cost_class(item: pytest.Item) -> int:
    if item.get_closest_marker("vm"):
        return COST_CLASS["vm"]
    if item.path.suffix == ".ipynb":
        return COST_CLASS["notebook"]
    if item.get_closest_marker("integration"):
        return COST_CLASS["integration"]
    return len(COST_CLASS)


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true",
                     help="write each test file's measured seconds to tests/durations.json "
                          "(the suite's order on its workers: longest first)")


def pytest_collection_modifyitems(config, items):
    kinds = [*COST_CLASS, "unit"]
    file_kind: dict[str, str] = {}
    for item in items:
        path = file_of(item.nodeid)
        kind = kinds[cost_class(item)]
        file_kind[path] = min(file_kind.get(path, "unit"), kind, key=kinds.index)
    rank = {path: i for i, path in enumerate(file_order(file_kind, Durations.load()))}
    items.sort(key=lambda item: rank[file_of(item.nodeid)])
    if os.environ.get("HARNESS_SLOW_TESTS") != "1":
        for item in items:
            if item.get_closest_marker("slow"):
                item.add_marker(pytest.mark.skip(reason=SLOW_REASON))


SLOW_REASON = "slow: runs in `nox -s slow` (HARNESS_SLOW_TESTS=1)"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") == "loadfile" and LongestFirst is not None:
        LongestFirst.durations = Durations.load()
        return LongestFirst(config, log)
    return None


def pytest_runtest_logreport(report):
    """Each test's seconds (setup, call and teardown), for --store-durations."""
    _SECONDS[report.nodeid] = _SECONDS.get(report.nodeid, 0.0) + report.duration


_SECONDS: dict[str, float] = {}


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("store_durations") or not _SECONDS:
        return
    root = Path(str(config.rootpath))
    stored = Durations.load()
    measured = Durations.from_reports(_SECONDS, time.strftime(
        f"%Y-%m-%dT%H:%MZ, load {os.getloadavg()[0]:.1f} at the end", time.gmtime()))
    measured_files = set(measured.files)
    files = {p: s for p, s in stored.files.items() if p not in measured_files}
    tests = {n: s for n, s in stored.tests.items() if file_of(n) not in measured_files}
    Durations(files={p: s for p, s in {**files, **measured.files}.items() if (root / p).exists()},
              tests={n: s for n, s in {**tests, **measured.tests}.items()
                     if (root / file_of(n)).exists()},
              measured=measured.measured).save()


# The kernel's allowed congestion controls are one list for the whole host (a namespace may
# make only an allowed control its default: EPERM otherwise). S4 wants CUBIC on its nodes;
# this host allows "reno bbr". A lab run adds cubic and, when it ends, restores the list it
# found; a module of SSH machines running beside it (another xdist worker) then lost cubic
# mid-run (CI of 2026-11-27: S4 on the inventory failed with EPERM twice). So the session's
# controller adds cubic once before any worker starts, and takes out exactly that token after
# the last has ended; every run and fixture in between finds it allowed and changes nothing.
SUITE_CONGESTION = "cubic"
ALLOWED_CC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


def pytest_configure(config):
    if hasattr(config, "workerinput") or os.geteuid() != 0:
        return  # a worker, or a run that cannot change it: the fixtures decide alone
    try:
        with open(ALLOWED_CC) as f:
            names = f.read().split()
        if SUITE_CONGESTION not in names:
            with open(ALLOWED_CC, "w") as f:
                f.write(" ".join([*names, SUITE_CONGESTION]))
            config._harness_added_congestion = SUITE_CONGESTION
    except OSError:
        pass  # not available on this kernel: the S4 tests say so themselves


def pytest_unconfigure(config):
    added = getattr(config, "_harness_added_congestion", None)
    if added:
        with open(ALLOWED_CC) as f:
            now = f.read().split()
        if added in now:
            with open(ALLOWED_CC, "w") as f:
                f.write(" ".join(n for n in now if n != added))


def run_harness(*args: str, env: dict | None = None, timeout: float = 600
                ) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` with its output, as a user would run it.

    Past ``timeout`` the run gets SIGTERM, as from a user, so it undoes its changes and
    stops its VMs and processes, and the test fails saying so; subprocess.run's own
    timeout would SIGKILL it and leave the lab behind for the next test to trip over.
    """
    with subprocess.Popen([sys.executable, "-m", "harness", *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          env={**os.environ, **(env or {})}) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            out, err = proc.communicate(timeout=600)
            pytest.fail(f"harness {' '.join(args)} ran past {timeout} s (stopped with SIGTERM):"
                        f" {err[-2000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def is_root() -> bool:
    return os.geteuid() == 0


needs_root = pytest.mark.skipif(not is_root(), reason="needs root for network namespaces")


def needs_tools(*tools: str):
    missing = [t for t in tools if shutil.which(t) is None]
    return pytest.mark.skipif(bool(missing), reason=f"missing programs: {', '.join(missing)} "
                              "(bash env/setup installs them)")


@pytest.fixture
def journal(tmp_path) -> Journal:
    return Journal(tmp_path / "journal.jsonl")


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    monkeypatch.setenv("HARNESS_DATA", str(root))
    return root


def netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its new parent to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def group_alive(pgid: int) -> bool:
    """True if any process of process group ``pgid`` is running.

    Zombies do not count: once their parent is gone they wait for the
    machine's init to reap them, which a container's init may never do.
    """
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def on_this_host(node: dict) -> bool:
    """A journal's node description names this host (a namespace of it, or itself), not a
    VM or machine reached over SSH (whose processes ended with its kernel)."""
    while node:
        if node.get("type") == "ssh":
            return False
        node = node.get("parent") or {}
    return True


def survivors(journal_path) -> list[str]:
    """The processes a run's journal recorded on this host (QEMU, iperf3, relays, ...) that
    still run: the same pid *and* start time, so a pid reused since is not counted, and
    another test's processes never are (the suite runs tests side by side)."""
    from harness.nodes.procfs import read_stat

    found = []
    for entry in Journal(journal_path).entries():
        if entry.kind == "process" and on_this_host(entry.data.get("host") or entry.node):
            stat = read_stat(int(entry.data["pid"]))
            if stat and not stat.ended and stat.start_ticks == int(entry.data["start_ticks"]):
                found.append(entry.data.get("command") or str(entry.data["pid"]))
    return found


def checked_outputs(notebook) -> list[str]:
    """The text each ``# NBVAL_CHECK_OUTPUT`` cell of a notebook printed (what nbval compares):
    a notebook's stored outputs, or those of an executed one (a run's ``notebook.ipynb``)."""
    import nbformat

    cells = nbformat.read(str(notebook), as_version=4).cells
    return ["".join(out.get("text", "") for out in cell.get("outputs", [])
                    if out.get("output_type") == "stream")
            for cell in cells
            if cell.cell_type == "code" and cell.source.startswith("# NBVAL_CHECK_OUTPUT")]


def assert_a_try_on_target(tries: list, on_target, shortfall: str) -> None:
    """A precision target of a TCG guest, judged on the best of ``tries``: pass if one met it;
    if none did and the host is overloaded (load above 1.5 per core: other TCG VMs starve the
    emulated guest of CPU), skip with ``shortfall`` (the numbers); otherwise fail."""
    if any(on_target(t) for t in tries):
        return
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > 1.5 * cores:
        pytest.skip(f"host overloaded (load {load:.1f} on {cores} cores, other TCG VMs?): "
                    f"{shortfall}; the target needs CPU headroom for the emulated guest")
    raise AssertionError(f"no try met the target (load {load:.1f}): {shortfall}: {tries}")


from harness.nodes import Node  # noqa: E402 -- the fakes' base, below the fixtures' imports


class CommandOnlyNode(Node):
    """Base of the unit tests' fake nodes: they answer commands (``_exec``) and nothing else;
    starting a process or copying a file is a test failure."""

    def spawn(self, cmd, *, cgroup=None):
        raise AssertionError(f"nothing may be started: {cmd}")

    def put(self, local_path, remote_path):
        raise AssertionError(f"nothing may be copied: {local_path}")

    def get(self, remote_path, local_path):
        raise AssertionError(f"nothing may be copied: {remote_path}")


def interruptible() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT: the default action.

    A test runner started in the background by a non-interactive shell (``cmd &``)
    ignores SIGINT, and children inherit that; Python then installs no
    KeyboardInterrupt handler, so the child would never see the test's Ctrl-C.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
