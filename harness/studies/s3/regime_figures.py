"""Each run's own figures of the regime that the claims of 003:208 rest on, for their notes.

The regime texts of the registration once quoted one reference's figures ("the TCP reducer 58-92 %
busy", "438-862 TIPC drops at 8 KB against TCP's 0-17"); the next reference read 1066-1310 against
0-38 (the third S3 review of 2026-11-29: "Regenerate these texts from the current registration and
data"). The registration now says what is measured and why it matters; each run's note says what
that run measured (:func:`regime_note`): at 1:48 x 1-4 KB the reducer process's busy share per
protocol (under TCG a rate there is the emulator's per-message cost as much as the protocol's), and
from 8 KB on the drops at the reducer port's FIFO per repetition and per packet sent, with TIPC's
reducer busy share (a collapse the queue makes, not the CPU).
"""

from __future__ import annotations

import pandas as pd

#: the sizes whose rate is a per-message cost under TCG (the reducer's busy share is shown there)
SMALL_MAX_KB = 4
#: the protocols the claims of 003:208 compare, in the order the note names them
COMPARED = ("tipc", "tcp-cubic", "tcp")


def _span(values: pd.Series, digits: int = 0, unit: str = "") -> str:
    """'a-b' (or 'a' where they agree) at ``digits`` decimals."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return "-"
    low, high = f"{values.min():.{digits}f}", f"{values.max():.{digits}f}"
    return (low if low == high else f"{low}-{high}") + unit


def _per_packet(rows: pd.DataFrame) -> pd.Series:
    sent = pd.to_numeric(rows["queue_pkts"], errors="coerce")
    return (pd.to_numeric(rows["queue_drops"], errors="coerce") / sent.where(sent > 0)).dropna()


def regime_note(rate: pd.DataFrame, queue_sizes: tuple[int, ...], small: bool = True, fanin: int = 48) -> str:
    """This run's figures at 1:``fanin``: with ``small`` the reducer's busy share at <= 4 KB per
    protocol, and at each of ``queue_sizes`` (KB, 8 and above) the compared protocols' drops per
    repetition (per packet sent) and TIPC's reducer busy share; "" where the run measured none of
    them (no such rows, or an older run without the columns)."""
    rows = rate[rate.mappers == fanin]
    protocols = [p for p in COMPARED if p in set(rows.protocol)]
    if rows.empty or not protocols:
        return ""
    parts = []
    if small and "reducer_cpu_pct" in rows:
        low_rows = rows[rows.size_kb <= SMALL_MAX_KB]
        busy = [f"{p} {_span(low_rows[low_rows.protocol == p].reducer_cpu_pct, unit=' %')}" for p in protocols
                if (low_rows.protocol == p).any()]
        if busy:
            low, high = int(low_rows.size_kb.min()), int(low_rows.size_kb.max())
            where = str(low) if low == high else f"{low}-{high}"
            parts.append(f"the reducer process busy at {where} KB: {', '.join(busy)}")
    if {"queue_drops", "queue_pkts"} <= set(rows.columns):
        for size in sorted({int(s) for s in rows.size_kb if s in set(queue_sizes)}):
            here = rows[rows.size_kb == size]
            each = [f"{p} {_span(here[here.protocol == p].queue_drops)} "
                    f"({_span(_per_packet(here[here.protocol == p]), 3)} per packet)"
                    for p in protocols if (here.protocol == p).any()]
            tipc = here[here.protocol == "tipc"]
            busy = (f", TIPC's reducer {_span(tipc.reducer_cpu_pct, unit=' %')} busy"
                    if "reducer_cpu_pct" in here and not tipc.empty else "")
            parts.append(f"{size} KB: drops per repetition {' against '.join(each)}{busy}")
    if not parts:
        return ""
    return f"this run's regime at 1:{fanin}: " + "; ".join(parts)
