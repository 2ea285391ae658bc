"""A CPU taken offline (S1's 1-CPU level): fact, diff, undo, and the undo's refusals."""

from __future__ import annotations

import pytest
from conftest import CommandOnlyNode

from harness.config import operation
from harness.config.cpu import CpuOnline, online_path
from harness.config.operation import plan
from harness.errors import SpecError
from harness.journal.journal import _HANDLERS
from harness.journal.undo_checks import RefusedRecord


@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch):
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


class Machine(CommandOnlyNode):
    """A machine whose CPUs' ``online`` files hold ``states`` (cpu -> "0"/"1"); a CPU not
    listed has no such file, as CPU 0 on x86 and a CPU the machine lacks."""

    def __init__(self, states):
        self.name, self.states, self.commands = "a", dict(states), []

    def describe(self):
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        for cpu, state in self.states.items():
            path = online_path(cpu)
            if cmd == f"cat {path}":
                return 0, state + "\n", ""
            if cmd.startswith("echo ") and cmd.endswith(f"> {path}"):
                self.states[cpu] = cmd.split()[1]
                return 0, "", ""
        return 1, "", "cat: No such file or directory"


def test_an_online_cpu_is_taken_offline_and_the_handler_brings_it_back():
    machine = Machine({1: "1"})
    (change,) = plan([CpuOnline(machine, 1, False)])
    assert machine.commands == ["cat /sys/devices/system/cpu/cpu1/online"]
    assert change.command == "echo 0 > /sys/devices/system/cpu/cpu1/online"
    assert (change.kind, change.before, change.after) == ("cpu-online", "online", "offline")
    assert change.undo == {"path": "/sys/devices/system/cpu/cpu1/online", "before": 1}
    machine.run(change.command)
    assert machine.states[1] == "0"
    _HANDLERS["cpu-online"](machine, change.undo)
    assert machine.states[1] == "1"


def test_a_cpu_already_as_asked_is_left_alone():
    (change,) = plan([CpuOnline(Machine({1: "1"}), 1, True)])
    assert not change.changed and change.undo == {}


def test_a_cpu_that_cannot_go_offline_is_one_clear_error_before_any_change():
    machine = Machine({})  # no cpu1/online: no such CPU, or not hotpluggable
    with pytest.raises(SpecError, match="CPU 1 cannot be taken offline") as exc:
        plan([CpuOnline(machine, 1, False)])
    assert "2 vCPUs" in exc.value.hint
    assert machine.commands == ["cat /sys/devices/system/cpu/cpu1/online"]  # read, not written


def test_bad_arguments_are_refused_before_any_fact():
    machine = Machine({1: "1"})
    for op in (CpuOnline(machine, "1; reboot", False), CpuOnline(machine, 1, "0")):
        with pytest.raises(SpecError):
            plan([op])
    assert machine.commands == []


@pytest.mark.parametrize("data", [
    {"path": "/etc/passwd", "before": 1},
    {"path": "/sys/devices/system/cpu/cpu1/online", "before": "1; rm -rf /"},
    {"path": "/sys/devices/system/cpu/cpu1/online", "before": 2},
    {"path": "/sys/devices/system/cpu/cpu1/online", "before": True},
    {"path": "/sys/devices/system/cpu/cpu1/../../../../../etc/passwd", "before": 1},
    {"path": "/sys/devices/system/cpu/cpu1/online\n", "before": 1},
    {"before": 1},
])
def test_the_handler_refuses_a_hostile_record_before_any_command(data):
    machine = Machine({1: "0"})
    with pytest.raises(RefusedRecord, match="cpu-online"):
        _HANDLERS["cpu-online"](machine, data)
    assert machine.commands == [] and machine.states[1] == "0"
