"""Progress of a long measurement: points done of the total, time elapsed, time left.

One line on the kernel's standard error, rewritten in place (``\\r``) after each
point: JupyterLab's output area shows it updating, ``harness run`` forwards the
kernel's standard error to the terminal (unless ``-q``), and an archived notebook
keeps only the line's last state (streams are coalesced, ``\\r`` applied). The
estimate of the time left is tqdm's: the mean time per point so far, times the
points left. A measurement that counts its points up front uses it like this::

    with progress(total=len(points), what="s4 iperf3") as bar:
        for point in points:
            ...
            bar.step(f"{streams} streams")
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

FORMAT = "{desc}: {n_fmt}/{total_fmt} {unit}s [{elapsed} elapsed, ~{remaining} left]{postfix}"
# A line that FORMAT printed (a report tells it apart from warnings on the same stream).
LINE = re.compile(r"^[^\n]+: \d+/\d+ \w+ \[[^\]\n]* elapsed, ~[^\]\n]* left\][^\n]*$")


@dataclass
class Progress:
    bar: object  # a tqdm bar

    def step(self, label: str = "") -> None:
        """One more point done; ``label`` names it (shown after the counts)."""
        if label:
            self.bar.set_postfix_str(label, refresh=False)
        self.bar.update(1)


@contextmanager
def progress(total: int, what: str, unit: str = "point", file=None) -> Iterator[Progress]:
    """A progress line for ``total`` points of ``what``; closed (left at its last state) on exit."""
    from tqdm.std import tqdm

    bar = tqdm(total=total, desc=what, unit=unit, file=file or sys.stderr, bar_format=FORMAT,
               mininterval=0, disable=False, leave=True, dynamic_ncols=False)
    try:
        yield Progress(bar)
    finally:
        bar.close()
