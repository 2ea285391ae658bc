"""The command lines a process the harness started may show (harness.journal.started_cmdline), for
the shapes its spawns really have: QEMU's exec, a cgroup's wrapper, a namespace's nsenter."""

from __future__ import annotations

import shlex

import pytest

from harness.journal.started_cmdline import accepted_cmdlines, cmdline_word, exec_forms, sound_command
from harness.nodes.local import in_cgroup
from harness.nodes.netns import NamespaceNode


def test_a_namespaced_process_in_a_cgroup_may_show_each_program_of_its_exec_chain():
    inner = in_cgroup("exec iperf3 -s -p 5201 2>/dev/null", "/sys/fs/cgroup/harness-x")
    command = NamespaceNode("hx-a1")._wrap(inner)  # what LocalNode.spawn is given
    forms = exec_forms(command)
    assert ["nsenter", "--net=/run/netns/hx-a1", "--", "sh", "-c", inner] in forms
    assert ["sh", "-c", "exec iperf3 -s -p 5201 2>/dev/null"] in forms
    assert ["iperf3", "-s", "-p", "5201"] in forms
    accepted = accepted_cmdlines(command)
    assert accepted[0] == cmdline_word(["sh", "-c", command])
    assert cmdline_word(["iperf3", "-s", "-p", "5201"]) in accepted
    assert cmdline_word(["sshd", "-D"]) not in accepted


def test_qemus_exec_is_its_own_argv():
    argv = ["qemu-system-x86_64", "-name", "a b", "-netdev", "user,id=n0,hostfwd=tcp::1-:22"]
    command = "exec " + shlex.join(argv)  # harness.vm.qemu.qemu_command's shape
    assert argv in exec_forms(command)


@pytest.mark.parametrize("text, words", [
    ("sleep 5 >/dev/null", ["sleep", "5"]),  # an argument before a redirection, not an fd
    ("A=1 B=2 exec env C=3 prog x", ["prog", "x"]),
    ("a; b && exec c 'd e'\nf", ["c", "d e"]),
    ("a | b", ["b"]),
])
def test_simple_commands_and_what_they_exec(text, words):
    assert words in exec_forms(text)


def test_unreadable_or_unsound_commands():
    assert exec_forms("echo 'unbalanced") == []
    assert not sound_command("a\x00b") and not sound_command("") and not sound_command(None)
    assert sound_command("sleep 1\necho done")
    assert cmdline_word(["a\nb", "c"]) == "a\x02b\x01c\x01"
