"""How long a link's rate test runs, and which part of it counts: the link, not TCP's slow start.

A TCP flow reaches a link's rate only once its window covers the bandwidth-delay product
(BDP). Slow start doubles the window each round trip from the initial 10 segments (RFC 6928),
so that takes ``log2(BDP / initial window)`` round trips, plus the round trip in which it
ends (hystart, or a loss when the bottleneck's queue fills) -- :data:`RAMP_MARGIN_RTTS`;
where hystart does not end it, the window grows on until it fills the queue behind the
BDP too (:func:`ramp_rtts`; S2's WAN queues 2 BDPs: one round trip more).
On a namespace lab's links (RTTs of a few ms) that is a few hundredths of a second and the
rate test's usual seconds hide it. On a long fat link it is not: the scaled S2 WAN (BDP
0.6 MB, 414 segments; RTT 4.8 ms / f, 65-300 ms at the usual f) needs 8 round trips, 0.5-2.4 s,
and 1-3 s tests read 0.32-0.97 of the shaper's rate, while the same counters read 22.7-24.2
of 23.4 Mbit/s once the window was open (the reference of 2026-11-26; issue 34 item 10).

So a link whose ramp is more than :data:`RAMP_SHARE` of the test is measured in two parts:
iperf3 omits the ramp (``-O``, whole seconds, at most 60), then counts at least
:data:`STEADY_RTTS` round trips, at least the seconds asked and at least
:data:`MIN_STEADY_S`. The shaper's byte counter is read over that steady part
(:func:`past_ramp`: from the omitted seconds after the first data passed the shaper), and
the window the counted part held is read from iperf3's own interval reports (``snd_cwnd``,
``snd_wnd``: :func:`window_bdps`). Short links keep the test they had: nothing omitted, the
seconds asked.

The segment size is TCP's at MTU 1500 (1448 B with timestamps) whatever the link's MTU: a
smaller segment needs more round trips, so the ramp is never underestimated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..topology.shaping import plan_egress
from ..topology.topology import Link

#: Linux's initial congestion window (RFC 6928), segments
INITIAL_WINDOW_SEGMENTS = 10
#: TCP payload per segment at MTU 1500 with timestamps
SEGMENT_BYTES = 1448
#: round trips beyond the doublings: the one that ends slow start (hystart's exit, or the loss
#: when the queue fills) and the one its recovery takes
RAMP_MARGIN_RTTS = 2
#: round trips counted after the ramp, at the least: more than one loss-and-recovery episode
#: of a window that overshoots into the bottleneck's queue, and under TCG (a counter sample
#: every ~0.5 s there) enough samples for the slope
STEADY_RTTS = 20
#: seconds counted after the ramp, at the least: the shaper's counter is read every ~0.5 s
#: under TCG (each read forks `tc`) and its intervals scatter by +-5 % (67-83 Mbit/s of 77 on
#: S2's WAN, 2026-11-29T05:00Z), so 3 s counted (a fitted span of 1.9-2.6 s) read 0.958-0.966
#: of the rate while iperf3's sender counted 0.98-1.00 of the line; 5 s, about ten samples,
#: narrows the slope's spread about threefold (it falls as the span to the power 1.5)
MIN_STEADY_S = 5
#: round trips the counter's busy stretch must span for a long link's rate to be read from it:
#: a stall of the emulated sender (a loaded machine) breaks the stretch, and the longest piece
#: left is its busiest few intervals, which read high -- 1.06 of the rate over a few round trips
#: of S2's 139 ms WAN in CI on 2026-11-29, where the same test's other try read 0.31. Half of
#: :data:`STEADY_RTTS`: a test that ran as planned spans 20-80 (S2: 29.7, 72.1 and 78.7).
MIN_FIT_RTTS = 10
#: a ramp shorter than this share of the test is left inside it (the counter's busy-stretch
#: rule already drops the first busy interval): the links of a namespace lab
RAMP_SHARE = 0.1
#: iperf3 3.12 refuses --omit above 60 s
MAX_OMIT_S = 60
#: the shaper's counter has moved this much once data flows (the control connection moves a
#: few hundred bytes): one initial window of full frames
DATA_START_BYTES = INITIAL_WINDOW_SEGMENTS * 1514


@dataclass(frozen=True)
class RatePlan:
    """One direction's rate test: ``omit_s`` of ramp omitted, then ``seconds`` counted."""

    seconds: int  # iperf3 -t: the counted part
    omit_s: int  # iperf3 -O: the ramp, omitted (0: a short link, nothing omitted)
    rtt_s: float | None  # the link's configured round trip (None: no delay)
    bdp_bytes: float | None
    ramp_rtts: int  # slow start's round trips to the BDP, margin included

    @property
    def total_s(self) -> int:
        return self.seconds + self.omit_s

    def short_fit(self, span_s: float) -> str:
        """Why a busy stretch of ``span_s`` seconds cannot give this test's rate, or "": a
        short link's test (nothing omitted: its stretch is its test), or a long span."""
        if not self.omit_s or not self.rtt_s or span_s / self.rtt_s >= MIN_FIT_RTTS:
            return ""
        return (f"the counter's busy stretch spans {span_s / self.rtt_s:.1f} RTTs, fewer than the "
                f"{MIN_FIT_RTTS} a long link's rate is read over (a stall broke it)")

    @property
    def counted_rtts(self) -> float | None:
        return self.seconds / self.rtt_s if self.rtt_s else None


def recorded_fit_note(record: Mapping) -> str:
    """Why a link check's reading was too short to count (:meth:`RatePlan.short_fit`), from its
    run.json record (:class:`harness.lab.verify.LinkCheck`), or "": its ``fit_note``. A record
    archived before that field had one ``note`` for two things, read here as it was written: a
    failed rate's note (``rate_ok`` False) is a short fit, the only note a lab's check wrote;
    a note beside no rate verdict (``rate_ok`` None) says why a user's machine's rate was not
    measured, and is no fit note."""
    if "fit_note" in record:
        return str(record.get("fit_note") or "")
    return str(record.get("note") or "") if record.get("rate_ok") is False else ""


def ramp_rtts(bdp_bytes: float, queue_bytes: float = 0.0) -> int:
    """Round trips slow start takes from the initial window until it ends, with
    :data:`RAMP_MARGIN_RTTS`: where hystart does not end it sooner, the loss that does comes
    once the window fills the BDP and the bottleneck's queue behind it (``queue_bytes``; S2's
    WAN, 2026-11-29: 248 retransmits in the first counted second when only the ramp to the
    BDP was omitted); 0 for a window within the initial one."""
    doublings = math.log2((bdp_bytes + queue_bytes) / (INITIAL_WINDOW_SEGMENTS * SEGMENT_BYTES))
    return math.ceil(doublings) + RAMP_MARGIN_RTTS if doublings > 0 else 0


def plan_rate_test(link: Link, seconds: int) -> RatePlan:
    """The rate test of a shaped ``link`` asked to last ``seconds``: the same on a short link;
    on one whose slow start takes more than :data:`RAMP_SHARE` of that, the ramp omitted (whole
    seconds) and at least :data:`STEADY_RTTS` round trips and :data:`MIN_STEADY_S` counted."""
    if not link.rate_mbit or not link.delay_ms:
        return RatePlan(seconds, 0, None, None, 0)
    rtt = 2 * link.delay_ms / 1e3
    bdp = link.rate_mbit * 1e6 / 8 * rtt
    queue = (plan_egress(link).queue_record() or {}).get("queue_bytes", 0)
    rtts = ramp_rtts(bdp, max(0, queue))
    ramp_s = rtts * rtt
    if ramp_s <= RAMP_SHARE * seconds:
        return RatePlan(seconds, 0, rtt, bdp, rtts)
    return RatePlan(max(seconds, math.ceil(STEADY_RTTS * rtt), MIN_STEADY_S),
                    min(math.ceil(ramp_s), MAX_OMIT_S), rtt, bdp, rtts)


def past_ramp(samples: list[tuple[int, float]], omit_s: float) -> list[tuple[int, float]]:
    """The (bytes, time) counter samples from ``omit_s`` after data began to pass the shaper.

    Data began at or before the first sample that has moved :data:`DATA_START_BYTES` past the
    first reading (taken as the client starts), so the samples kept lie at least ``omit_s``
    after the true start: never inside the ramp. No omission, or no data: all samples."""
    if omit_s <= 0 or not samples:
        return samples
    base = samples[0][0]
    start = next((t for b, t in samples if b - base >= DATA_START_BYTES), None)
    if start is None:
        return samples
    return [(b, t) for b, t in samples if t >= start + omit_s]


def counted_sender_streams(iperf3: dict) -> list[list[dict]]:
    """The sender's per-stream reports of each counted (not omitted) interval of an iperf3 JSON."""
    out = []
    for interval in iperf3.get("intervals") or []:
        streams = interval.get("streams") or []
        if streams and not any(s.get("omitted") or not s.get("sender") for s in streams):
            out.append(streams)
    return out


def standing_queue_ms(iperf3: dict, rtt_s: float | None) -> float | None:
    """The smallest standing queue the counted part of a test held, in ms: per interval and
    stream, TCP's smoothed RTT (iperf3's ``rtt``) less the link's configured RTT. Positive
    throughout: the bottleneck never drained at a report, so TCP kept the link busy and a rate
    short of the shaper's is the link's. The far end's ACK delay is in it too. None: no
    configured RTT, or iperf3 reported no RTT (a receiving client, an older iperf3)."""
    if not rtt_s:
        return None
    srtts = [s.get("rtt") for streams in counted_sender_streams(iperf3) for s in streams]
    if not srtts or None in srtts:
        return None
    return min(srtts) / 1e3 - rtt_s * 1e3


def window_bdps(iperf3: dict, bdp_bytes: float | None) -> float | None:
    """The smallest window the counted part of a test held, in BDPs: per interval the smaller
    of the congestion window and the peer's advertised window (``snd_cwnd``, ``snd_wnd``,
    summed over the streams), from iperf3's own reports of the sending side. None: no BDP,
    or iperf3 reported no window (a receiving client, an older iperf3)."""
    if not bdp_bytes:
        return None
    windows = []
    for streams in counted_sender_streams(iperf3):
        cwnd = [s.get("snd_cwnd") for s in streams]
        if None in cwnd:
            continue
        wnd = [s.get("snd_wnd") for s in streams]
        window = sum(cwnd) if None in wnd else sum(min(c, w) for c, w in zip(cwnd, wnd))
        windows.append(window)
    return min(windows) / bdp_bytes if windows else None
