"""S1's wire: the rate a run's lab built for it, the payload each stack's framing can carry over
it, and whether both stacks ran into it (the large-message bandwidth claim's regime).

Read from run.json alone (:func:`wire_of`), so an archived run is judged on the wire it had.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .registration import BW_TCP, WIRE_BOUND_FRACTION
from .validity import ROCE_FRAME_OVERHEAD, payload_bound_mbit, roce_active_mtu

_STACK = {"verbs-send-bw": "verbs (ib_send_bw)", "tcp-qperf": "TCP (qperf tcp_bw)",
          "tcp-count": "TCP (msgcount, Nagle on)"}


@dataclass(frozen=True)
class Wire:
    """The wire a run measured over: the rate its lab built (``wire_mbit`` times the scaling
    to the VMs' ceiling; 0 unshaped), the netdev MTU and RoCE's path MTU over it."""

    mbit: float
    mtu: int
    active_mtu: int
    asked_mbit: float = 0.0
    burst_bytes: int = 0  # the shaper's bucket (htb burst), the larger of the two ends'
    qperf_seconds: float = 0.0  # how long each qperf tcp_bw point lasts

    @property
    def shaped(self) -> bool:
        return self.mbit > 0

    def bound(self, family: str) -> float:
        """The payload the wire carries for a stack (Mbit/s): RoCE's or TCP's framing."""
        return payload_bound_mbit(family, self.mbit, self.mtu, self.active_mtu)

    def framing_cap(self) -> float:
        """The largest verbs/TCP bandwidth ratio a wire lets through when both stacks run
        into it: RoCE v2's payload share of a frame over TCP's (issue 34 item 7). At MTU 1500
        RoCE v2 carries 1024 of 1082 bytes and TCP 1448 of 1514: 0.990; at 9000, 4096 of
        4154 against 8948 of 9014: 0.993. Independent of the rate."""
        return payload_bound_mbit("verbs", 1.0, self.mtu, self.active_mtu) \
            / payload_bound_mbit("tcp", 1.0, self.mtu, self.active_mtu)

    def framing_text(self) -> str:
        roce = self.active_mtu + ROCE_FRAME_OVERHEAD
        tcp_payload = round(payload_bound_mbit("tcp", 1.0, self.mtu, self.active_mtu)
                            * (self.mtu + 14))
        return (f"RoCE v2 carries {self.active_mtu} of {roce} bytes per frame and TCP "
                f"{tcp_payload} of {self.mtu + 14} at MTU {self.mtu}: with both stacks at the "
                f"wire verbs/TCP is at most {self.framing_cap():.3f}x")

    def text(self) -> str:
        if not self.shaped:
            return "the wire unshaped"
        scaled = (f" (wire_mbit {self.asked_mbit:g}, scaled to the VMs' wire)"
                  if self.asked_mbit and abs(self.asked_mbit - self.mbit) > 1e-9 else "")
        return (f"the wire shaped to {self.mbit:.4g} Mbit/s{scaled}: it carries "
                f"{self.bound('tcp'):.4g} Mbit/s of TCP payload and {self.bound('verbs'):.4g} "
                f"of RoCE's (path MTU {self.active_mtu} B)")


def wire_of(meta: dict | None) -> Wire:
    """The run's wire from run.json: its parameters, the placement's scaling factor and the
    RoCE port's active MTU (:meth:`S1.measure` records it)."""
    meta = meta or {}
    params = meta.get("parameters") or {}
    asked = float(params.get("wire_mbit") or 0.0)
    factor = (((meta.get("placement") or {}).get("scaling") or {}).get("factor")) or 1.0
    mtu = int(params.get("mtu") or 1500)
    active = ((meta.get("s1") or {}).get("rdma") or {}).get("active_mtu")
    plans = ((meta.get("testbed") or {}).get("egress_plans") or {}).values()
    burst = max([int(p.get("burst_bytes") or 0) for p in plans] or [0])
    return Wire(asked * float(factor), mtu, int(active) if active else roce_active_mtu(mtu),
                asked, burst, float(params.get("qperf_seconds") or 0.0))


def wire_bound_shortfalls(frame: pd.DataFrame, wire: Wire, sizes: list[int],
                          methods: tuple[str, ...] = ("verbs-send-bw", BW_TCP)
                          ) -> tuple[list[str], list[str]]:
    """Each stack's median goodput (over the repetitions) at each of ``sizes`` as text, and
    those below :data:`WIRE_BOUND_FRACTION` of its payload bound over ``wire`` (all of them
    when the wire is unshaped: there is no bound to reach)."""
    rates, short = [], []
    for method in methods:
        sub = frame[(frame.method == method) & frame["size"].isin(sizes)]
        for size, group in sub.groupby("size"):
            median = float(group.bw_mbit.median())
            family = group.family.iloc[0]
            text = f"{_STACK.get(method, method)} {median:.3g} Mbit/s at {int(size)} B"
            if wire.shaped:
                share = median / wire.bound(family)
                text += f" ({share:.0%} of its bound)"
            if not wire.shaped or not share >= WIRE_BOUND_FRACTION:
                short.append(text)
            rates.append(text)
    return rates, short
