"""Many commands on many nodes: one round trip per machine, one :class:`Result` per command.

Why: a command to a VM under TCG costs ~0.5 s of SSH round trip and each
process start inside it 0.1-0.2 s; a lab of 48 namespaces on one VM would
spend minutes on round trips if every command were its own ``node.run``. So
the calls are grouped by :attr:`Node.machine` and each machine gets ONE shell
script that runs its calls inside their nodes (:meth:`Node.command_on_machine`:
``nsenter --net``, never ``ip netns exec``, which would hide mounts), in
batches of up to ``jobs`` at a time, and captures each call's stdout, stderr,
exit status and duration separately. Machines are handled concurrently.

Like Invoke's ``Group``: a command that fails is data (its Result has a
non-zero status), :func:`require_ok` turns failures into one error when the
caller wants that. Only a machine whose round trip fails as a whole (SSH
broken, timeout) raises, naming the machine.

Output framing: every section of the combined output starts with a line
holding a random per-round-trip token, so neither output without a trailing
newline nor output that contains marker-like text can confuse the parser.
"""

from __future__ import annotations

import secrets
import shlex
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CommandFailed, HarnessError, NodeError
from .base import Command, Node, command_text
from .result import Result

DEFAULT_JOBS = 8
#: Seconds added to a machine's round-trip budget for the script's own work.
SCRIPT_SLACK = 30.0


@dataclass(frozen=True)
class Call:
    """One command for one node.

    ``timeout`` counts towards its machine's round-trip budget (a call is not
    killed on its own: that would cost a watchdog process per call).
    ``exclusive``: run with no other call of this machine at the same time,
    after the calls before it and before the calls after it -- for
    measurements that must not share the machine.
    """

    node: Node
    command: Command
    timeout: float = 60.0
    exclusive: bool = False


class MachineFailed(NodeError):
    """The round trip to one or more machines failed as a whole; no per-call results."""

    def __init__(self, failures: dict[str, BaseException]):
        self.failures = failures
        lines = [f"{name}: {exc}" for name, exc in failures.items()]
        super().__init__(
            "the group round trip failed on " + ", ".join(failures) + ":\n  "
            + "\n  ".join(lines),
            "see the machine's error above; commands on other machines did run",
        )


class CommandsFailed(CommandFailed):
    """Several commands of a group exited non-zero (``results``; ``result`` is the first)."""

    def __init__(self, results: list[Result], hint: str | None = None):
        self.result = results[0]
        self.results = results
        lines = []
        for r in results:
            tail = (r.stderr or r.stdout).strip().splitlines()[-2:]
            lines.append(f"on {r.node}: `{r.command}` exited with status {r.exit_status}"
                         + (": " + " / ".join(tail) if tail else ""))
        HarnessError.__init__(self, f"{len(results)} command(s) failed:\n    "
                              + "\n    ".join(lines), hint)


def require_ok(results: list[Result], hint: str | None = None) -> list[Result]:
    """``results`` unchanged if all succeeded, else one :class:`CommandsFailed` listing failures."""
    failed = [r for r in results if not r.ok]
    if failed:
        raise CommandsFailed(failed, hint)
    return results


def by_machine(nodes: Sequence[Node]) -> list[tuple[Node, list[int]]]:
    """(machine, indices of ``nodes`` on it), machines in order of first appearance."""
    groups: dict[int, tuple[Node, list[int]]] = {}
    for i, node in enumerate(nodes):
        machine = node.machine
        groups.setdefault(id(machine), (machine, []))[1].append(i)
    return list(groups.values())


# The script's runner. Each command runs by `eval` in a subshell (a fork, no exec),
# after our variables and function are unset there, as if by `sh -c`. Times from /proc/uptime
# with the `read` builtin: no process started to take them.
_RUNNER = r"""__hg_tok=%(token)s
__hg_w="${TMPDIR:-/tmp}/harness-group-$__hg_tok"
mkdir -m 700 "$__hg_w" || exit 97
trap 'rm -rf "$__hg_w"' EXIT
trap 'exit 143' TERM INT HUP
__hg_run() {
  __hg_c=$2
  read __hg_t0 __hg_ < /proc/uptime
  ( eval "unset __hg_w __hg_tok __hg_t0 __hg_t1 __hg_ __hg_st __hg_c; unset -f __hg_run; set --
$__hg_c" ) >"$__hg_w/$1.o" 2>"$__hg_w/$1.e" </dev/null
  __hg_st=$?
  read __hg_t1 __hg_ < /proc/uptime
  printf '\n%%s %%s out\n' "$__hg_tok" "$1" >"$__hg_w/$1.a"
  printf '\n%%s %%s err\n' "$__hg_tok" "$1" >"$__hg_w/$1.b"
  printf '\n%%s %%s end %%s %%s %%s\n' "$__hg_tok" "$1" "$__hg_st" "$__hg_t0" "$__hg_t1" \
    >"$__hg_w/$1.c"
}
"""


def machine_script(calls: Sequence[Call], token: str, jobs: int = DEFAULT_JOBS) -> str:
    """The shell script that runs ``calls`` (all on one machine) and prints framed results.

    Calls start in input order, in batches of up to ``jobs``; an exclusive call
    ends the batch before it and runs alone. All output is printed at the end
    by one ``cat`` (one process, not one per call).
    """
    lines = [_RUNNER % {"token": token}]
    running = 0
    for i, call in enumerate(calls):
        # Every call in the background, then `wait`, the exclusive ones alone: a shell waiting
        # on a foreground child runs its TERM trap only once that child ends, and a child that
        # lingers past the stopper's grace (an iperf3 client after its "interrupt" summary)
        # saw the shell SIGKILLed with its folder left in /tmp (one per test suite here);
        # `wait` returns at once on a trapped signal.
        line = f"__hg_run {i} {shlex.quote(call.node.command_on_machine(call.command))} &"
        if call.exclusive or jobs <= 1:
            if running:
                lines.append("wait")
            lines += [line, "wait"]
            running = 0
            continue
        if running >= jobs:
            lines.append("wait")
            running = 0
        lines.append(line)
        running += 1
    if running:
        lines.append("wait")
    files = " ".join(f'"$__hg_w/{i}.{x}"' for i in range(len(calls)) for x in "aobec")
    lines.append(f"cat {files}" if calls else "true")
    return "\n".join(lines) + "\n"


def machine_budget(calls: Sequence[Call], jobs: int = DEFAULT_JOBS) -> float:
    """Seconds the round trip may take: the calls' timeouts along the script's schedule."""
    total, batch, running = SCRIPT_SLACK, 0.0, 0
    for call in calls:
        if call.exclusive or jobs <= 1:
            total += batch + call.timeout
            batch, running = 0.0, 0
            continue
        if running >= jobs:
            total += batch
            batch, running = 0.0, 0
        batch = max(batch, call.timeout)
        running += 1
    return total + batch


def parse_framed(text: str, token: str, calls: Sequence[Call], node_names: Sequence[str],
                 elapsed: float) -> list[Result]:
    """Per-call Results from a machine script's output (see :func:`machine_script`)."""
    parts = text.split(f"\n{token} ")
    sections: dict[tuple[int, str], str] = {}
    ends: dict[int, list[str]] = {}
    for part in parts[1:]:
        header, _, body = part.partition("\n")
        words = header.split()
        if len(words) >= 2 and words[0].isdigit():
            index, kind = int(words[0]), words[1]
            sections[(index, kind)] = body
            if kind == "end":
                ends[index] = words[2:]
    results = []
    for i, call in enumerate(calls):
        text_cmd = command_text(call.command)
        if i not in ends:
            raise NodeError(f"no result for `{text_cmd}` in the group output of"
                            f" {node_names[i]}'s machine", "the script was cut short?")
        status = int(ends[i][0])
        try:
            duration = float(ends[i][2]) - float(ends[i][1])
        except (IndexError, ValueError):  # no /proc/uptime: the whole round trip
            duration = elapsed
        results.append(Result(node_names[i], text_cmd, sections.get((i, "out"), ""),
                              sections.get((i, "err"), ""), status, duration))
    return results


def _run_machine(machine: Node, calls: list[Call], jobs: int,
                 timeout: float | None) -> list[Result]:
    token = secrets.token_hex(16)
    script = machine_script(calls, token, jobs)
    budget = timeout if timeout is not None else machine_budget(calls, jobs)
    started = time.monotonic()
    try:
        res = machine.run(script, timeout=budget, check=False, track=True)
    except BaseException:
        # Killed mid-way (timeout, Ctrl-C: SIGKILL to its process group) skips the EXIT
        # trap: remove our work directory by its exact name.
        try:
            machine.run(f'rm -rf "${{TMPDIR:-/tmp}}/harness-group-{token}"', check=False,
                        timeout=30)
        except HarnessError:
            pass
        raise
    if res.exit_status == 97:
        raise NodeError(f"cannot make a work directory on {machine.name}: {res.stderr.strip()}",
                        "check that $TMPDIR (or /tmp) exists and is writable")
    return parse_framed(res.stdout, token, calls, [c.node.name for c in calls],
                        time.monotonic() - started)


def run_group(calls: Sequence[Call], *, jobs: int = DEFAULT_JOBS,
              timeout: float | None = None, concurrent: bool = True) -> list[Result]:
    """Run every call in its node: one round trip per machine, Results in input order.

    ``jobs``: calls of one machine running at once (in batches). ``timeout``:
    bound on each machine's round trip (default: the calls' timeouts along
    the schedule, see :func:`machine_budget`). ``concurrent`` False: machines one
    after another, for measurements that must not overlap on machines sharing
    host CPUs (VMs of one host). Raises :class:`MachineFailed`
    naming every machine whose round trip failed as a whole, after all
    machines are done.
    """
    calls = list(calls)
    groups = by_machine([c.node for c in calls])
    results: list[Result | None] = [None] * len(calls)
    failures: dict[str, BaseException] = {}

    def work(machine: Node, indices: list[int]) -> None:
        try:
            for i, r in zip(indices, _run_machine(machine, [calls[i] for i in indices], jobs,
                                                  timeout)):
                results[i] = r
        except HarnessError as exc:
            failures[machine.name] = exc

    if len(groups) == 1 or not concurrent:
        for group in groups:  # in this thread: Ctrl-C reaches the transport, stops the script
            work(*group)
    else:
        threads = [threading.Thread(target=work, args=g, name=f"group-{g[0].name}", daemon=True)
                   for g in groups]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if failures:
        raise MachineFailed(failures)
    return [r for r in results if r is not None]


# -- background: one launcher per machine ------------------------------------------------

@dataclass(frozen=True)
class Launcher:
    """One background shell per machine that starts its calls inside their nodes and waits.

    Started as one process (``journal.start(launcher.machine, launcher.script)``):
    one round trip and one journal entry per machine, whatever the number of
    calls, and stopping that entry's process stops them all (they share its process
    group). On SIGTERM the launcher waits for its children, so their last
    words reach the log (a caught signal is reset to default in the children,
    unlike an ignored one).
    """

    machine: Node
    script: str
    indices: tuple[int, ...]  # positions of its calls in the input


def launchers(calls: Sequence[Call]) -> list[Launcher]:
    """One :class:`Launcher` per machine for background ``calls`` (machines in first-seen order)."""
    out = []
    for machine, indices in by_machine([c.node for c in calls]):
        lines = ["trap 'wait; exit 0' TERM INT"]
        lines += [f"{calls[i].node.command_on_machine(calls[i].command)} &" for i in indices]
        lines.append("wait")
        out.append(Launcher(machine, "\n".join(lines), tuple(indices)))
    return out
