"""The relay's own targets (issue 27), judged on a relay benchmark's archived JSON.

``benchmarks/relay_bench.py --out FILE`` measures kernel forwarding, socat and srd --
one relay, and two relays in a row -- side by side, run by run, and writes every run's
numbers and the registration of these targets to FILE (the repository keeps one at
:data:`ARCHIVED`). The targets are ours, not a paper's: ``source=TARGET``, met or not met.

Each is judged on per-run paired values (every path of a run measured back to back, so a
slow moment of the shared 2-core machine falls on all of them): throughput as a ratio to
forwarding on a log scale, the half round trip a relay adds, and the difference in
retransmitted segments between srd and socat on the same path.

The peer targets (issue 39) are S0's own target rows (its registration holds them:
:data:`PEER_TARGETS`): srd against the fastest and the cheapest peer relay
(:mod:`harness.relay.peers`), with one and with two relays, paired per run. Which peer is
the fastest (the cheapest) is decided on the same runs: the highest (lowest) geometric mean
over them among the peers the benchmark measured.

Study S0 shows these rows in its report beside its own targets (:func:`archive_into` copies
the benchmark into the run folder, :func:`table_of_run` reads it back), so the report of a run
says which benchmark it showed, and a run archived without one shows none.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ..errors import SpecError
from ..verdicts.claims import TARGET, Claim, Region, Verdict, judge, not_testable, table
from ..verdicts.intervals import mean_estimate
from ..verdicts.registration_file import load as load_registration

ARCHIVED = Path(__file__).resolve().parents[2] / "data" / "benchmarks" / "relay.json"
RUN_FILE = "relay-benchmark.json"  # the copy inside an S0 run folder
S0_REGISTRATION = Path(__file__).resolve().parents[1] / "studies" / "s0" / "registration.toml"
PEER_NAMES = ("socat", "haproxy", "nginx", "gosplice")  # harness.relay.peers.PEERS, in order
#: the peer targets: (srd's path, the field compared, best = max or min over peers) -> S0's claim
PEER_TARGETS = {
    ("srd", "throughput_gbps", max): "s0.target.srd_vs_fastest_peer_one",
    ("srd2", "throughput_gbps", max): "s0.target.srd_vs_fastest_peer_two",
    ("srd", "relay_cpu_s_per_gb", min): "s0.target.srd_cpu_vs_cheapest_peer_one",
    ("srd2", "relay_cpu_s_per_gb", min): "s0.target.srd_cpu_vs_cheapest_peer_two",
}

THROUGHPUT_X, ADDED_HALF_RTT_US = 0.9, 10.0
_WHY = "issue 27: a user-space relay at the kernel's speed (our target, not the paper's)"
_PAIRED = "paired per benchmark run (benchmarks/relay_bench.py, unshaped veth line)"

CLAIMS: dict[str, Claim] = {
    "srd_vs_forward": Claim(
        "relay.target.srd_vs_forward", "one srd: throughput >= 0.9x kernel forwarding", "-",
        Region.above(THROUGHPUT_X, _WHY), "x", TARGET,
        quantity="iperf3 throughput srd / forward, " + _PAIRED),
    "srd2_vs_forward": Claim(
        "relay.target.srd2_vs_forward", "two srds in a row: throughput >= 0.9x kernel "
        "forwarding", "-", Region.above(THROUGHPUT_X, _WHY), "x", TARGET,
        quantity="iperf3 throughput srd2 / forward, " + _PAIRED),
    "srd_retransmits": Claim(
        "relay.target.srd_retransmits", "one srd: retransmits no more than socat's", "-",
        Region.below(0.0, _WHY + ": srd's window must not cost the sender more losses"),
        "segments", TARGET,
        quantity="iperf3 sender's retransmitted segments, srd minus socat, " + _PAIRED),
    "srd2_retransmits": Claim(
        "relay.target.srd2_retransmits", "two srds in a row: retransmits no more than two "
        "socats'", "-", Region.below(0.0, _WHY), "segments", TARGET,
        quantity="iperf3 sender's retransmitted segments, srd2 minus socat2, " + _PAIRED),
    "srd_added_half_rtt": Claim(
        "relay.target.srd_added_half_rtt", "one srd adds <= 10 us of half round trip", "-",
        Region.below(ADDED_HALF_RTT_US, _WHY), "us", TARGET,
        quantity="1 B ping-pong half round trip (median of a run) srd minus forward, " + _PAIRED),
    "srd2_added_half_rtt": Claim(
        "relay.target.srd2_added_half_rtt", "two srds in a row add <= 10 us of half round "
        "trip per relay", "-", Region.below(ADDED_HALF_RTT_US, _WHY), "us", TARGET,
        quantity="1 B half round trip (srd2 minus forward) / 2, " + _PAIRED),
}


def peer_claims() -> dict[str, Claim]:
    """S0's registered peer targets (:data:`PEER_TARGETS`), by claim id."""
    registered = load_registration(S0_REGISTRATION)
    return {cid: registered.claim(cid) for cid in PEER_TARGETS.values()}


def registration() -> list[dict]:
    """The targets as the benchmark archives them before it measures (S0's peer rows too)."""
    return [c.registration() for c in (*CLAIMS.values(), *peer_claims().values())]


def best_peer(frame: pd.DataFrame, hops: int, best=max) -> str | None:
    """The peer path (``'haproxy'``, ``'nginx2'`` ...) with the highest (``best=max``) or
    lowest (``min``) geometric mean of ``frame``'s column over the runs; None if none has one."""
    means = {}
    for name in PEER_NAMES:
        path = name if hops == 1 else f"{name}2"
        if path in frame.columns:
            values = frame[path].dropna()
            values = values[values > 0]
            if len(values):
                means[path] = float(values.map(math.log).mean())
    return best(means, key=means.get) if means else None


def peer_verdicts(report: dict) -> list[Verdict]:
    """srd against the fastest and the cheapest peer, paired per run (S0's peer targets)."""
    claims = peer_claims()
    where = _where(report)
    out = []
    for (relay, field, best), cid in PEER_TARGETS.items():
        frame = per_run(report, field)
        peer = best_peer(frame, 2 if relay.endswith("2") else 1, best)
        if peer is None or relay not in frame.columns:
            what = "no peer" if peer is None else relay
            out.append(not_testable(claims[cid], f"the benchmark has {what} with {field}", where))
            continue
        estimate = mean_estimate(frame[relay] / frame[peer], "x", "runs", log=True)
        out.append(judge(claims[cid], estimate, f"against {peer}; {where}"))
    return out


def load(path: str | Path = ARCHIVED) -> dict:
    """A relay benchmark's JSON, checked to be one."""
    path = Path(path)
    try:
        report = json.loads(path.read_text())
    except FileNotFoundError:
        raise SpecError(f"no relay benchmark at {path}",
                        "run `benchmarks/relay_bench.py --out data/benchmarks/relay.json` as "
                        "root") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path} is not a readable relay benchmark: {exc}",
                        "write it again with benchmarks/relay_bench.py --out") from None
    if not isinstance(report, dict) or report.get("benchmark") != "relay_bench" or \
            not isinstance(report.get("results"), list):
        raise SpecError(f"{path} is not a relay_bench report (no 'benchmark': 'relay_bench' "
                        "with 'results')", "write it with benchmarks/relay_bench.py --out")
    return report


def per_run(report: dict, field: str) -> pd.DataFrame:
    """One row per run, one column per path: ``field`` of each result (None -> NaN)."""
    rows = [{"run": r["run"], "path": r["path"], "value": _value(r, field)}
            for r in report["results"]]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows).astype({"value": float})
    return frame.pivot_table(index="run", columns="path", values="value", dropna=False)


def _value(result: dict, field: str) -> float:
    if field == "half_rtt_us":
        ping = result.get("pingpong") or {}
        value = ping.get("median_us")
    else:
        value = result.get(field)
    return math.nan if value is None else float(value)


def verdicts(report: dict) -> list[Verdict]:
    """Every target judged on the report's runs; a path it lacks makes it not testable."""
    tput = per_run(report, "throughput_gbps")
    retr = per_run(report, "retransmits")
    lat = per_run(report, "half_rtt_us")
    where = _where(report)
    out = []
    for key, relay, hops in (("srd", "srd", 1), ("srd2", "srd2", 2)):
        socat = "socat" if hops == 1 else "socat2"
        # each estimate is called in the iteration that made it (B023 cannot see that)
        for claim_key, frame, others, estimate in (
                ("vs_forward", tput, "forward",
                 lambda f: mean_estimate(f[relay] / f["forward"], "x", "runs", log=True)),  # noqa: B023
                ("retransmits", retr, socat,
                 lambda f: mean_estimate(f[relay] - f[socat], "segments", "runs")),  # noqa: B023
                ("added_half_rtt", lat, "forward",
                 lambda f: mean_estimate((f[relay] - f["forward"]) / hops, "us", "runs"))):  # noqa: B023
            claim = CLAIMS[f"{key}_{claim_key}"]
            missing = sorted({relay, others} - set(frame.columns))
            out.append(not_testable(claim, f"the benchmark has no {missing}", where) if missing
                       else judge(claim, estimate(frame), where))
    return out + peer_verdicts(report)


def _where(report: dict) -> str:
    machine = report.get("machine") or {}
    load = machine.get("loadavg_at_start"), machine.get("loadavg_at_end")
    loads = " -> ".join(f"{v[0]:.1f}" for v in load if v)
    return (f"benchmark of {report.get('started', '?')} ({report.get('commit', '?')[:12]}), "
            f"{report.get('config', {}).get('runs', '?')} runs on {machine.get('cpus', '?')} "
            f"CPUs, load {loads or '?'}")


def targets_table(report: dict) -> pd.DataFrame:
    """The claims-table rows (harness.verdicts.claims.table) of the report's targets."""
    return table(verdicts(report))


# -- study S0: the benchmark beside a run ----------------------------------------------------

def archive_into(session, path: str | Path = ARCHIVED) -> bool:
    """Copy the archived benchmark into a run folder (``session.raw``); False if there is none.

    A run keeps what its report showed: re-reading it later gives the same rows even when
    the repository's benchmark has been measured again since.
    """
    path = Path(path)
    if not path.exists():
        return False
    report = load(path)
    session.raw(RUN_FILE, json.dumps(report, indent=1))
    return True


def table_of_run(run_path: str | Path) -> pd.DataFrame | None:
    """The target rows of the benchmark a run archived (None: the run archived none)."""
    found = sorted(Path(run_path).rglob(RUN_FILE))
    if not found:
        return None
    return targets_table(load(found[0]))
