"""A throw-away study that lives under tests/ only: it proves that a study is one module, its
registration file (ping_registration.toml) and one notebook, with nothing under harness/ or
noxfile.py edited (docs/how-to/adding-a-study.md).

Two namespaces joined by one shaped link; the measurement is ping's round-trip time; the one
claim is that a veth pair answers within a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from harness.lab.verify import parse_ping_ms
from harness.studies import Citation, Parameters, Requirements, RunData, Study, param
from harness.tools.iperf3 import IPERF3
from harness.tools.registry import PING
from harness.topology.topology import TopologyBuilder
from harness.verdicts.claims import judge, table
from harness.verdicts.intervals import mean_estimate
from harness.verdicts.registration_file import load

A_IP, B_IP = "198.18.0.1", "198.18.0.2"

# Registered before data (harness.verdicts.registration): the claims, the design and its changes are in
# the registration file beside this module, read with harness.verdicts.registration_file.load. A study
# with no paper has no paper's claims; its expectations are ours (source target: met or not
# met, never "reproduced").
REGISTRATION_FILE = "ping_registration.toml"
REGISTRATION = load(Path(__file__).with_name(REGISTRATION_FILE))


@dataclass(frozen=True)
class PingParams(Parameters):
    profiles = REGISTRATION.design["profiles"]  # the registered profiles
    count: int = param(5, "echo requests sent", low=2, high=1000)
    interval_s: float = param(0.2, "time between requests", unit="s", low=0.01, high=10)
    rate_mbit: float = param(100.0, "rate of the link", unit="Mbit/s", low=1, high=10_000)
    verify_seconds: int = param(1, "iperf3 seconds per direction when verifying", unit="s",
                                low=1, high=60)


class PingStudy(Study):
    name = "ping-demo"
    title = "Round-trip time over one veth pair (a test of the study contract)"
    citation = Citation("The harness authors", "A study contract example", "tests/studies",
                        2026)
    Params = PingParams
    registration_file = REGISTRATION_FILE

    def topology(self, params: PingParams):
        return (TopologyBuilder("ping-demo").node("a").node("b")
                .link(("a", "eth0", f"{A_IP}/24"), ("b", "eth0", f"{B_IP}/24"),
                      rate_mbit=params.rate_mbit)
                .build(notes="two namespaces, one shaped link"))

    def requirements(self, params: PingParams) -> Requirements:
        return Requirements(tools=(PING, IPERF3))

    def measure(self, session, bed, params: PingParams, configured) -> None:
        result = bed.node("a").run(["ping", "-n", "-c", str(params.count), "-i",
                                    str(params.interval_s), bed.address("b", "eth0")],
                                   timeout=30 + params.count * params.interval_s)
        session.raw("ping.txt", result.stdout)
        rtts = parse_ping_ms(result.stdout, drop_first=False)
        session.results(pd.DataFrame({"seq": range(1, len(rtts) + 1), "rtt_ms": rtts}))

    def claims(self, data: RunData) -> pd.DataFrame:
        # the samples are the echo replies; the claim holds when the mean RTT's interval
        # lies below 1 ms
        return table([judge(self.registration().claim("ping.veth_rtt"), mean_estimate(data.results.rtt_ms, "ms", units="replies"),
                            "one shaped link, two namespaces")])

    def figures(self, data: RunData) -> dict:
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(data.results.seq, data.results.rtt_ms, marker="o")
        ax.set_xlabel("echo request")
        ax.set_ylabel("round-trip time (ms)")
        return {"rtt": fig}
