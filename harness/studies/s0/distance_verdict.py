"""S0's distance verdict (s0.latency.far_nat_vs_proxies_x): whether NAT + SRD's latency
advantage over two proxies survives when the fronts move apart.

Reads the distance sweep's rows (:mod:`.far` measures them: the three methods at each
front-to-front one-way delay): NAT + SRD over two proxies per repetition and delay
(:func:`far_ratios`), judged at the largest registered delay once the direct path shows the
delay was there (:func:`far_latency_verdict`), with what a serialising wire could add at
most (:func:`far_serialisation_us`). :mod:`.analysis` puts the verdict among S0's claims;
:mod:`.figures` draws the ratios.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...verdicts.claims import Verdict, judge, not_testable
from ...verdicts.intervals import mean_estimate
from .common import join_notes, size_label
from .registration import FAR_DELAYS_MS, FAR_REACHED, claim
from .validity import MTU, wire_bytes


def far_ratios(far: pd.DataFrame) -> pd.DataFrame:
    """Per repetition and delay: NAT + SRD / two proxies (geometric mean over the sizes), and
    the direct path's 1 B half round trip (its rise over 0 ms shows the delay was there)."""
    lat = far.pivot_table(index=["repetition", "one_way_delay_ms", "size"], columns="method",
                          values="half_rtt_us")
    ratio = np.exp(np.log(lat.nat_srd / lat.proxies).groupby(
        level=["repetition", "one_way_delay_ms"]).mean())
    direct_1b = lat.direct.xs(1, level="size") if 1 in lat.index.get_level_values("size") \
        else lat.direct.groupby(level=["repetition", "one_way_delay_ms"]).min()
    return pd.DataFrame({"nat_vs_proxies_x": ratio, "direct_1b_half_rtt_us": direct_1b})


def far_latency_verdict(far: pd.DataFrame | None, meta: dict, mtu: int = MTU,
                        native: dict | None = None) -> Verdict:
    """The distance claim at the largest swept delay, if the sweep reached it. Every swept size
    counts: at 10 ms one way a message's serialisation over three 100 Mbit/s links (at most
    :func:`far_serialisation_us`: 0.26 ms at 1 KB) is at most 2.6 % of the delay and falls on
    both relayed methods alike, so a lab that does not serialise 1 B-1 KB cannot move the
    ratio the claim reads by more than that (registration: the claim's regime). ``native``: the
    run's relay benchmark's hop costs on the host (``analysis.hop_costs``), for the note on which
    way an emulator biases the claim (:func:`_tcg_bias`)."""
    far_claim = claim("s0.latency.far_nat_vs_proxies_x")
    if far is None or far.empty:
        caps = meta.get("capabilities") or {}
        host = caps.get("local") or {}
        why = "the run swept no front-to-front delay (far = False, or real machines)"
        if not (host.get("features") or {}).get("netem", True):
            why += f"; this host's kernel ({host.get('kernel', '?')}) has no netem"
        return not_testable(far_claim, why)
    top = max(FAR_DELAYS_MS)
    r = far_ratios(far)
    delays = set(r.index.get_level_values("one_way_delay_ms"))
    if top not in delays or 0.0 not in delays:
        return not_testable(far_claim, f"the sweep lacks {top:g} ms or 0 ms: it swept "
                                   f"{sorted(delays)} ms")
    direct = r.direct_1b_half_rtt_us.unstack("one_way_delay_ms")
    added_ms = float((direct[top] - direct[0.0]).median()) / 1000
    if added_ms < FAR_REACHED * top:
        return not_testable(far_claim, f"the direct path rose only {added_ms:.2f} ms at a set "
                                   f"{top:g} ms one way (below {FAR_REACHED:.0%} of it)")
    ratio = r.nat_vs_proxies_x.xs(top, level="one_way_delay_ms")
    where = far.get("where", pd.Series(["?"])).iloc[0]
    base = r.nat_vs_proxies_x.xs(0.0, level="one_way_delay_ms")
    rate = (meta.get("parameters") or {}).get("rate_mbit", 100.0)
    largest = int(far["size"].max())
    wire_ms = far_serialisation_us(largest, rate, mtu) / 1000 if rate else 0.0
    relay = _relay_cost(far, top)
    return judge(far_claim, mean_estimate(ratio, "x", log=True), join_notes(
        f"direct rose {added_ms:.2f} ms at {top:g} ms; at 0 ms the ratio read "
        f"{float(np.exp(np.log(base).mean())):.2f}x; {where}",
        relay,
        _tcg_bias(far, meta, top, native or {}),
        f"a serialising wire would add at most {wire_ms:.2f} ms at {size_label(largest)} "
        f"({wire_ms / top:.1%} of the delay) to both methods alike" if rate else ""))


def far_serialisation_us(size: int, rate_mbit: float, mtu: int = MTU, links: int = 3) -> float:
    """What a store-and-forward path of ``links`` links at ``rate_mbit`` adds to a message's
    one-way time at most: every link serialises all of its wire bytes (no pipelining)."""
    return links * wire_bytes(size, mtu) * 8 / rate_mbit


def _relay_cost(far: pd.DataFrame, top: float) -> str:
    """The measured relay costs at ``top`` ms (median half round trip minus direct's, per
    relayed method): what the sweep's lab (under TCG, an emulator's) makes of a relay hop."""
    at = far[far.one_way_delay_ms == top]
    med = at.groupby("method").half_rtt_us.median()
    if not {"direct", "proxies", "nat_srd"} <= set(med.index):
        return ""
    return (f"relay cost over direct at {top:g} ms (median half round trip): two proxies "
            f"{(med.proxies - med.direct) / 1000:+.2f} ms, NAT + SRD "
            f"{(med.nat_srd - med.direct) / 1000:+.2f} ms")


def _tcg_bias(far: pd.DataFrame, meta: dict, top: float, native: dict) -> str:
    """Under TCG (the distance sweep's VM, run.json s0.far_placement), which way the emulator
    biases the claim, with the run's own figures: each relay's cost over direct at ``top`` ms in
    the emulated sweep against the host's native cost per hop (the run's relay benchmark, 1 B);
    an emulator multiplies the relays' costs and with them any difference between the two relayed
    methods, so it works against a negligible difference, not for it (the seventh review)."""
    vm = ((meta.get("s0") or {}).get("far_placement") or {}).get("vm") or {}
    med = far[far.one_way_delay_ms == top].groupby("method").half_rtt_us.median()
    if str(vm.get("accel") or "").lower() != "tcg" or not {"direct", "proxies", "nat_srd"} <= set(med.index):
        return ""
    px, nat = (med.proxies - med.direct) / 1000, (med.nat_srd - med.direct) / 1000
    hops = [(name, native.get(key)) for name, key in (("NAT + SRD", "nat_srd_hop_us"),
                                                       ("two proxies (srd)", "proxies_srd_per_hop_us"))]
    here = ", ".join(f"{name} {us:.1f} us" for name, us in hops if us is not None)
    inverted = (f"; TCG noise even inverts the relays' order here (NAT + SRD {nat:+.2f} ms, two proxies "
                f"{px:+.2f} ms)" if nat > px else "")
    return (f"which way TCG biases it: against the claim -- under TCG the relays cost {min(px, nat):+.2f} to "
            f"{max(px, nat):+.2f} ms over direct at {top:g} ms, against "
            + (f"{here} per hop natively on this host (the run's relay benchmark, 1 B)" if here else
               "a few us per hop natively (this run has no relay benchmark)")
            + "; an emulator multiplies each relay's cost, and with it any difference between the two "
            "relayed methods, which works against a negligible difference" + inverted)
