"""The suite's order on its xdist workers (tests/suite_order.py): longest files first, and a
busy worker given a short file, checked on xdist's own scheduler driven by simulated workers."""

from __future__ import annotations

import json
from collections import OrderedDict
from types import SimpleNamespace

import pytest
from suite_order import GUESS_S, SHARED_FOLDERS, Durations, LongestFirst, file_order, pick_next

xdist_scheduler = pytest.importorskip("xdist.scheduler")


def test_files_go_longest_first_measured_or_guessed_by_kind():
    durations = Durations(files={"tests/integration/test_a.py": 500.0,
                                 "tests/unit/test_b.py": 2.0})
    kinds = {"tests/unit/test_b.py": "unit", "tests/unit/test_new.py": "unit",
             "tests/integration/test_a.py": "integration", "tests/integration/vm/test_v.py": "vm",
             "tests/studies/x.ipynb": "notebook"}
    assert file_order(kinds, durations) == [
        "tests/integration/test_a.py", "tests/integration/vm/test_v.py", "tests/studies/x.ipynb",
        "tests/unit/test_b.py", "tests/unit/test_new.py"]
    assert GUESS_S["vm"] < 500.0  # the measured file, not its kind, decided


def test_a_busy_worker_gets_the_shortest_file_and_a_free_one_the_longest():
    queue = OrderedDict([("long.py", {}), ("mid.py", {}), ("short.py", {})])
    durations = Durations(tests={"run.py::test_study": 400.0})
    assert pick_next(queue, ["run.py::test_study"], durations) == "short.py"
    assert pick_next(queue, ["unit.py::test_quick", "unit.py::test_other"], durations) == "long.py"
    assert pick_next(OrderedDict([("long.py", {})]), ["run.py::test_study"], durations) == "long.py"


def test_stored_durations_sum_each_files_tests_and_keep_the_long_tests(tmp_path):
    measured = Durations.from_reports({"tests/a.py::test_x": 120.04, "tests/a.py::test_y": 0.3,
                                       "tests/b.py::test_z": 2.0}, "2026-11-29T00:00Z")
    path = tmp_path / "durations.json"
    measured.save(path)
    assert json.loads(path.read_text())["files"] == {"tests/a.py": 120.3, "tests/b.py": 2.0}
    again = Durations.load(path)
    assert again.tests == {"tests/a.py::test_x": 120.0, "tests/b.py::test_z": 2.0}
    assert Durations.load(tmp_path / "absent.json").files == {}


class Worker:
    """A simulated xdist worker: it runs the tests sent to it in order, and (like xdist's) starts
    one only once it knows the test after it or has been told to shut down."""

    def __init__(self, name: str):
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.done = 0
        self.shutting_down = False
        self.busy_until: float | None = None

    def send_runtest_some(self, indexes):
        self.sent.extend(indexes)

    def shutdown(self):
        self.shutting_down = True

    def can_start(self) -> bool:
        left = len(self.sent) - self.done
        return self.busy_until is None and (left >= 2 or (left == 1 and self.shutting_down))


def simulate(scheduler_class, seconds: dict[str, float], workers: int = 2):
    """The suite on ``workers`` simulated workers under ``scheduler_class``, the tests (nodeid ->
    seconds) collected in the given order: its wall time, and the tests each worker ran."""
    scheduler = scheduler_class.__new__(scheduler_class)
    scheduler.numnodes, scheduler.collection = workers, None
    scheduler.workqueue, scheduler.assigned_work, scheduler.registered_collections = \
        OrderedDict(), {}, {}
    scheduler.log = lambda *args: None
    scheduler.config = SimpleNamespace(option=SimpleNamespace(loadscopereorder=False))
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    collection = list(seconds)
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    now = 0.0
    while True:
        for node in nodes:
            if node.can_start():
                node.busy_until = now + seconds[collection[node.sent[node.done]]]
        running = [n for n in nodes if n.busy_until is not None]
        if not running:
            break
        node = min(running, key=lambda n: n.busy_until)
        now, node.busy_until = node.busy_until, None
        node.done += 1
        scheduler.mark_test_complete(node, node.sent[node.done - 1])
    assert sum(n.done for n in nodes) == len(collection), "a test was never run"
    return now, [[collection[i] for i in n.sent] for n in nodes]


def wall_time(scheduler_class, seconds: dict[str, float]) -> float:
    return simulate(scheduler_class, seconds)[0]


def test_long_files_of_one_test_are_spread_over_both_workers():
    """Three whole-study files of one test each, one file with a long test first, then unit
    files: xdist's loadfile gives the first worker the two longest files (it takes its next
    file as it starts its only test); LongestFirst keeps the second for the other worker."""
    seconds = {"tests/s2.py::test_run": 600.0, "tests/s1.py::test_run": 500.0,
               "tests/s3.py::test_run": 400.0,
               **{f"tests/faults.py::test_{i}": s for i, s in enumerate([300.0, 1.0, 1.0, 1.0])},
               **{f"tests/unit/test_{f}.py::test_{i}": 1.0 for f in range(20) for i in range(3)}}
    durations = Durations.from_reports(seconds, "simulated")
    order = file_order({p: "unit" for p in durations.files}, durations)
    seconds = {n: s for p in order for n, s in seconds.items() if n.startswith(p + "::")}

    class Measured(LongestFirst):
        pass

    Measured.durations = durations
    plain = wall_time(xdist_scheduler.LoadFileScheduling, seconds)
    ours = wall_time(Measured, seconds)
    bound = sum(seconds.values()) / 2
    print(f"wall time: loadfile {plain:.0f} s, LongestFirst {ours:.0f} s, bound {bound:.0f} s")
    assert plain >= 1000  # s2 then s1 on one worker
    assert ours <= 1.05 * bound


def test_a_shared_folders_files_are_one_unit_run_in_a_row_by_one_worker():
    """The VM folder's files share one VM (a package-scoped fixture): they must run on one
    worker one after another, or each worker would boot its own (and tear it down between)."""
    (folder,) = SHARED_FOLDERS
    kinds = {f"{folder}test_vm.py": "vm", "tests/integration/test_big.py": "integration",
             f"{folder}test_fs_vm.py": "vm", "tests/unit/test_a.py": "unit"}
    durations = Durations(files={f"{folder}test_vm.py": 100.0, f"{folder}test_fs_vm.py": 100.0,
                                 "tests/integration/test_big.py": 150.0})
    assert file_order(kinds, durations) == [f"{folder}test_vm.py", f"{folder}test_fs_vm.py",
                                            "tests/integration/test_big.py", "tests/unit/test_a.py"]
    seconds = {**{f"{folder}test_vm.py::test_{i}": 50.0 for i in range(2)},
               **{f"{folder}test_fs_vm.py::test_{i}": 50.0 for i in range(2)},
               "tests/integration/test_big.py::test_0": 150.0,
               **{f"tests/unit/test_a.py::test_{i}": 1.0 for i in range(5)}}

    class Measured(LongestFirst):
        pass

    Measured.durations = Durations.from_reports(seconds, "simulated")
    _wall, ran = simulate(Measured, seconds)
    (vm_worker,) = [tests for tests in ran if any(t.startswith(folder) for t in tests)]
    in_folder = [i for i, t in enumerate(vm_worker) if t.startswith(folder)]
    assert len(in_folder) == 4 and in_folder == list(range(in_folder[0], in_folder[0] + 4))
