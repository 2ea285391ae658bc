"""A process group's context switches read from /proc (harness.tools.cpu), as S0's relays' are."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from harness.errors import HarnessError
from harness.nodes.local import LocalNode
from harness.tools.cpu import ContextSwitches, context_switches, group_context_switches

STATUS = """\
Name:\tsrd
State:\tS (sleeping)
voluntary_ctxt_switches:\t4100
nonvoluntary_ctxt_switches:\t7
Name:\tsrd
voluntary_ctxt_switches:\t12
nonvoluntary_ctxt_switches:\t1
"""


def test_the_switches_of_every_status_text_are_summed_voluntary_and_involuntary_apart():
    counted = context_switches(STATUS)
    assert (counted.voluntary, counted.involuntary) == (4100 + 12, 7 + 1)
    assert counted.total == 4100 + 7 + 12 + 1
    assert context_switches("Name:\tx\nState:\tR\n") == ContextSwitches(0, 0)
    assert counted - ContextSwitches(100, 1) == ContextSwitches(4012, 7)
    assert ContextSwitches(1, 2) + ContextSwitches(3, 4) == ContextSwitches(4, 6)


def test_a_process_group_that_sleeps_per_message_switches_once_per_wake_up():
    """A child in a group of its own sleeps 50 times: its group's count grows by at least 50, and
    nothing of this test's own process group is counted."""
    child = subprocess.Popen([sys.executable, "-c", "import sys, time\nsys.stdin.readline()\n"
                              "for _ in range(50): time.sleep(0.002)\nsys.stdin.readline()"],
                             stdin=subprocess.PIPE, text=True, start_new_session=True)
    try:
        node = LocalNode()
        time.sleep(0.2)
        before = group_context_switches(node, child.pid)
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(0.5)
        after = group_context_switches(node, child.pid)
        assert (after - before).voluntary >= 50, (before, after)  # it slept: voluntary
    finally:
        child.stdin.write("end\n")
        child.stdin.flush()
        child.wait(10)
    assert os.getpgid(0) != child.pid


def test_a_group_with_no_live_process_is_one_clear_error():
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    child.wait(10)
    with pytest.raises(HarnessError, match=f"process group {child.pid} on .* has no live process"):
        group_context_switches(LocalNode(), child.pid)
