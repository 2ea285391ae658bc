"""A small study that can run on a user's machines without root: RTT and path MTU.

It lives under tests/ (like tests/studies/ping_study.py) to prove the "Privileges" path of
issue 25 end to end with a study whose claims split cleanly: one rests on nothing the
harness changes (the round-trip time between the two machines), one rests on a change (the
MTU of a's interface, lowered to 1400 bytes: the path MTU a then sees). Reached as root or
through ``sudo -n`` the study sets the MTU, measures, and undoes it; reached as an ordinary
user without sudo it measures the machines as found (:mod:`harness.machines.as_found`): the RTT
claim is judged, the MTU claim is "not testable here", naming CAP_NET_ADMIN.

The path MTU is measured, not read from the interface: ``ping -M do`` (don't fragment)
with a payload of ``mtu - 28`` bytes (IPv4 and ICMP headers) answers only if a datagram of
that size crosses the whole path; each repetition probes every candidate size in a
shuffled order (seeded, recorded) and keeps the largest that was answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from harness.config.interface import Mtu
from harness.studies import Citation, Parameters, Requirements, RunData, Study, param
from harness.studies.order import MeasuringOrder
from harness.tools.ping import parse_ping_ms
from harness.tools.registry import PING
from harness.topology.topology import TopologyBuilder
from harness.verdicts.claims import judge, table
from harness.verdicts.intervals import mean_estimate
from harness.verdicts.registration_file import load

MTU = 1400  # what the study sets on a's interface (a real machine's default is 1500)
CANDIDATES = (1280, MTU, 1500)  # path MTUs probed: the IPv6 minimum, ours, Ethernet's
HEADERS = 28  # IPv4 (20) + ICMP (8) bytes around ping's payload

#: the claims, the design and its changes, registered before data beside this module
REGISTRATION_FILE = "pmtu_registration.toml"
REGISTRATION = load(Path(__file__).with_name(REGISTRATION_FILE))


@dataclass(frozen=True)
class PmtuParams(Parameters):
    profiles = REGISTRATION.design["profiles"]
    repetitions: int = param(3, "repetitions (the claims' samples)", low=2, high=100)
    seed: int = param(0, "seed of the probe order", low=0, high=2**31 - 1,
                      zero="a fresh seed, recorded in run.json")
    verify_seconds: int = param(1, "iperf3 seconds per link direction when verifying",
                                unit="s", low=1, high=60)


class PmtuStudy(Study):
    name = "pmtu-demo"
    title = "Round-trip time and path MTU between two machines (issue 25's privileges test)"
    citation = Citation("The harness authors", "Measuring a user's machines as found",
                        "tests/integration/inventory", 2026)
    Params = PmtuParams
    #: the MTU claim rests on the MTU change; the RTT claim on nothing
    as_found = {"pmtu.mtu": "mtu"}
    registration_file = REGISTRATION_FILE

    def topology(self, params: PmtuParams):
        return (TopologyBuilder("pmtu-demo").node("a").node("b")
                .link(("a", "eth0", "198.18.0.1/24"), ("b", "eth0", "198.18.0.2/24"))
                .build(notes="two machines, one path"))

    def requirements(self, params: PmtuParams) -> Requirements:
        return Requirements(tools=(PING,))

    def configure(self, session, bed, params: PmtuParams):
        session.apply(Mtu(bed.node("a"), bed.device("a", "eth0"), MTU))

    def measure(self, session, bed, params: PmtuParams, configured) -> None:
        a, target = bed.node("a"), bed.address("b", "eth0")
        order = MeasuringOrder(params.seed)
        rows = []
        for rep in range(params.repetitions):
            out = a.run(["ping", "-n", "-c", "3", "-i", "0.2", target], check=False, timeout=30)
            session.raw(f"rtt-{rep}.txt", out.stdout + out.stderr)
            rtts = parse_ping_ms(out.stdout, drop_first=False)
            answered = []
            for mtu in order.shuffle(CANDIDATES):
                probe = a.run(["ping", "-n", "-c", "1", "-W", "1", "-M", "do", "-s",
                               str(mtu - HEADERS), target], check=False, timeout=20)
                session.raw(f"probe-{rep}-{mtu}.txt", probe.stdout + probe.stderr)
                if probe.ok:
                    answered.append(mtu)
            rows.append({"repetition": rep, "rtt_ms": sum(rtts) / len(rtts) if rtts else None,
                         "path_mtu": max(answered) if answered else None})
        session.note(order=order.record("per repetition: the candidate sizes shuffled"))
        session.results(pd.DataFrame(rows))

    def claims(self, data: RunData) -> pd.DataFrame:
        frame = data.results
        return table([
            judge(REGISTRATION.claim("pmtu.rtt"), mean_estimate(frame.rtt_ms, "ms")),
            judge(REGISTRATION.claim("pmtu.mtu"), mean_estimate(frame.path_mtu, "bytes")),
        ])

    def figures(self, data: RunData) -> dict:
        fig, ax = plt.subplots(figsize=(5, 3))
        ax.plot(data.results.repetition, data.results.path_mtu, marker="o")
        ax.set_xlabel("repetition")
        ax.set_ylabel("path MTU (bytes)")
        return {"pmtu": fig}
