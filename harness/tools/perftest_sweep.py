"""perftest sweeps: many sizes of one perftest test in ONE command per end.

Split from :mod:`harness.tools.perftest` (one invocation, its command line and its
report): here the scripts that run every size (and a CPU floor) at both ends, retry a
hung or failed size, and the parsing of their marked output.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace

from ..errors import HarnessError, SpecError
from ..journal.journal import Journal
from ..nodes import Node
from .perftest import PerftestReport, PerftestRun, parse_output

SIZE_MARK = "@size"
FLOOR_MARK = "@floor"


@dataclass(frozen=True)
class PerftestSweep:
    """``run`` at each of ``sizes``, one invocation per size, all in ONE command per end.

    A perftest server serves one client and exits, and ``-a`` cannot stop below
    8 MiB; so a study's sizes are separate invocations. Starting each as a
    command of its own costs round trips to the machine (~0.5 s each into an
    emulated VM); here each end runs one shell script: the server invocations
    one after another, and the client's, each retried while the server of that
    size is not listening yet (perftest's client exits at once when it cannot
    connect). ``@size N`` lines separate the sizes in both outputs. Each size
    has a TCP port of its own (``run.port`` + its index): a client can never
    reach the previous size's server, and no bind waits for a port in TIME_WAIT.

    ``floor``: (size, iterations) of one more invocation after the sizes (``@floor N``),
    whose CPU time is the process's own (start, set-up, exit): a study takes it off each
    size's CPU. In the same script it costs no server start and stop of its own (~6 s a
    sweep into a TCG VM).

    A size's exchange can hang (seen under TCG at load 1-6: a Soft-RoCE client or
    server waiting for a completion that never comes, once in a few runs), so
    every attempt runs under ``timeout`` (:meth:`attempt_s`): a hung pair is
    killed at both ends and that size is measured again -- the server listens
    once more (``server_attempts`` in all), the client keeps trying to connect
    for :meth:`connect_window_s`. A size that still fails fails the sweep.
    """

    run: PerftestRun
    sizes: tuple[int, ...]
    retry_s: float = 0.1  # between the client's connection attempts
    server_attempts: int = 2
    floor: tuple[int, int] | None = None

    def attempt_s(self, run: PerftestRun) -> int:
        """Seconds one invocation may take before it counts as hung: half a minute for start,
        set-up and exit under TCG (3-4 s measured on an idle machine, about twice that at
        load 4-7), 20 ms per round trip (TCG's worst seen: 10 ms at 16 KiB) and the messages
        at 2 MB/s (Soft-RoCE carries more even in an emulated VM). A hang costs this much
        (it was a minute: 60 s of a 270 s quick run)."""
        return int(30 + run.iterations * 0.02 + run.iterations * run.size / 2e6)

    def connect_window_s(self, run: PerftestRun, previous: PerftestRun | None = None) -> int:
        """How long the client keeps connecting to ``run``'s server: long enough for a server
        still on a hung exchange of this size (up to ``server_attempts`` attempts) to come back
        and listen -- and, after ``previous`` size, for the server still on that one.

        The client moves on as soon as it has its report; the server of that size can still
        be waiting for a completion that never comes, be killed by ``timeout`` and listen for
        it once more (it cannot know that its client has moved on). Seen in an S1 verdict run:
        "Couldn't connect" at 65536 B, the window over while the server had just started
        that size. So the window covers the previous size's attempts as well.
        """
        before = self.server_attempts * self.attempt_s(previous) if previous else 0
        return before + self.server_attempts * self.attempt_s(run) + 30

    def longest_s(self) -> float:
        """An upper bound of the client's script when one size hangs once."""
        runs = [run for _mark, run in self.invocations()]
        return 2 * max(self.connect_window_s(run, prev)
                       for run, prev in zip(runs, [None, *runs[:-1]]))

    def check(self) -> None:
        if not self.sizes and not self.floor:
            raise SpecError("a perftest sweep needs at least one size")
        for _mark, run in self.invocations():
            run.check()

    def runs(self) -> list[PerftestRun]:
        """One invocation per size, each on its own port."""
        return [replace(self.run, size=size, port=self.run.port + i)
                for i, size in enumerate(self.sizes)]

    def invocations(self) -> list[tuple[str, PerftestRun]]:
        """(mark, run) of every invocation: the sizes', then the floor's, each on its port."""
        out = [(SIZE_MARK, run) for run in self.runs()]
        if self.floor:
            size, iterations = self.floor
            out.append((FLOOR_MARK, replace(self.run, size=size, iterations=iterations,
                                            port=self.run.port + len(self.sizes))))
        return out

    def next_block(self, sizes: tuple[int, ...], floor: bool) -> PerftestSweep:
        """A sweep of what is left, on the ports after this one's."""
        return replace(self, sizes=sizes, floor=self.floor if floor else None,
                       run=replace(self.run, port=self.run.port + len(self.invocations())))

    def server_command(self) -> str:
        self.check()
        return "\n".join(f"echo {mark} {run.size}; n=0; until timeout "
                         f"{self.attempt_s(run)} {shlex.join(run.server_argv())}; do "
                         f"n=$((n+1)); [ $n -ge {self.server_attempts} ] && break; done"
                         for mark, run in self.invocations())

    def client_command(self, server: str) -> str:
        self.check()
        lines = []
        invocations = self.invocations()
        previous_runs = [None, *(run for _mark, run in invocations[:-1])]
        for (mark, run), previous in zip(invocations, previous_runs):
            argv = shlex.join(run.client_argv(server))
            lines.append(f"echo {mark} {run.size}; d=$(($(date +%s) + "
                         f"{self.connect_window_s(run, previous)})); "
                         f"until timeout {self.attempt_s(run)} "
                         f"{argv}; do [ $(date +%s) -ge $d ] && exit 1; sleep {self.retry_s:g}; "
                         "done")
        return "\n".join(lines)


def split_marks(text: str) -> dict[tuple[str, int], str]:
    """A sweep's output by invocation: the text after each ``@size N`` / ``@floor N`` line."""
    out: dict[tuple[str, int], list[str]] = {}
    current = None
    for line in text.splitlines():
        words = line.split()
        if words[:1] in ([SIZE_MARK], [FLOOR_MARK]) and len(words) == 2 and words[1].isdigit():
            current = (words[0], int(words[1]))
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {key: "\n".join(lines) for key, lines in out.items()}


def split_sizes(text: str) -> dict[int, str]:
    """A sweep's output, by size (the text after each ``@size N`` line; no floor)."""
    return {size: part for (mark, size), part in split_marks(text).items() if mark == SIZE_MARK}


def parse_floor(tool: str, text: str) -> PerftestReport | None:
    """The floor invocation's report (``@floor N``), or None when it has no measured table."""
    for (mark, _size), part in split_marks(text).items():
        if mark == FLOOR_MARK:
            try:
                report = parse_output(tool, part)
            except HarnessError:
                return None
            report.raw = part
            return report if report.rows and all(r.measured for r in report.rows) else None
    return None


def parse_sweep(tool: str, text: str, only: int | None = None) -> list[PerftestReport]:
    """One report per size of a sweep's client output (the last attempt's table and CPU);
    ``only``: that size's report alone.

    A size whose output has no table raises :class:`HarnessError` naming it.
    """
    reports = []
    for size, part in split_sizes(text).items():
        if only is not None and size != only:
            continue
        try:
            report = parse_output(tool, part)
        except HarnessError as exc:
            raise HarnessError(f"{tool} at {size} B: {exc.message}", exc.hint) from None
        report.rows = [row for row in report.rows if row.size == size] or report.rows[-1:]
        report.raw = part
        reports.append(report)
    if not reports:
        raise HarnessError(f"{tool} sweep printed no size at all: {text.strip()[-300:]!r}")
    return reports


def completed(tool: str, text: str) -> list[PerftestReport]:
    """The reports of the sizes a failed sweep's client finished, in order, up to the first
    size without a results table."""
    done = []
    for size in split_sizes(text):
        try:
            done += parse_sweep(tool, text, only=size)
        except HarnessError:
            break
    return done


@dataclass
class Swept:
    """A sweep's client reports by size, its floor's report (if it had one), both outputs."""

    reports: list[PerftestReport]
    client_out: str
    server_out: str
    floor: PerftestReport | None = None


def sweep(journal: Journal, server_node: Node, client_node: Node, plan: PerftestSweep,
          server_host: str, timeout: float = 600.0, retries: int = 1) -> Swept:
    """Run a sweep: the server script in the background on ``server_node``, the client's in
    the foreground on ``client_node``.

    A client that fails (a size it could not connect to within its window: seen twice in S1
    verdict runs under TCG at 65536 B, the server having just started that size) keeps the
    sizes it finished; the rest (and the floor, if it is not done) are swept again,
    ``retries`` times, by fresh processes at both ends on ports of their own (the next block
    of ports). So is a size whose table is no measurement: a row of zeros, or a latency's
    median or mean printed as inf/-nan (:attr:`LatencyRow.measured`, :attr:`BandwidthRow.measured`).
    Both outputs say so (``@retry`` lines), and the archive keeps every attempt's text.
    """
    done: list[PerftestReport] = []
    floor = None
    texts, served_all = [], []
    current = plan
    for attempt in range(retries + 1):
        with journal.process(server_node, ["sh", "-c", current.server_command()]) as proc:
            res = client_node.run(["sh", "-c", current.client_command(server_host)],
                                  timeout=timeout, check=False, track=True)
            try:
                proc.wait(30)
            except HarnessError:
                pass  # still running: stopped (and recorded as stopped) when the block ends
            served = proc.output()
        texts.append(res.stdout + (f"\n[stderr]\n{res.stderr}" if res.stderr.strip() else ""))
        served_all.append(served)
        tool = current.run.tool
        reports = [] if not current.sizes else (
            parse_sweep(tool, res.stdout) if res.ok else completed(tool, res.stdout))
        done += [r for r in reports if all(row.measured for row in r.rows)]
        floor = floor or (parse_floor(tool, res.stdout) if current.floor else None)
        finished = {r.rows[0].size for r in done}
        left = tuple(size for size in current.sizes if size not in finished)
        floor_left = bool(plan.floor) and floor is None
        if not left and not floor_left:
            return Swept(_in_order(done, plan.sizes), _joined(texts), _joined(served_all),
                         floor)
        if attempt == retries:
            zeros = sorted({r.rows[0].size for r in reports} - finished)
            if zeros:
                problem = f"printed a row of zeros or inf/nan (no measurement) at {zeros} B"
            elif res.ok:
                problem = f"floor invocation {plan.floor} printed no measured table"
            else:
                problem = (f"client on {client_node.name} failed (exit {res.exit_status}): "
                           f"{(res.stderr or res.stdout).strip()[-600:]}")
            raise HarnessError(
                f"{plan.run.tool} sweep {problem}{f', after {attempt} retries' if attempt else ''}",
                f"the server said: {served.strip()[-300:]}")
        current = current.next_block(left, floor_left)
    raise AssertionError("unreachable")


def _in_order(reports: list[PerftestReport], sizes: tuple[int, ...]) -> list[PerftestReport]:
    return sorted(reports, key=lambda report: sizes.index(report.rows[0].size))


def _joined(texts: list[str]) -> str:
    """Every attempt's output, the retries marked."""
    return "".join(text if i == 0 else f"\n@retry {i}\n{text}" for i, text in enumerate(texts))
