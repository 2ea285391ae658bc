"""The relay's own targets (issue 27), judged on a relay benchmark's archived JSON.

``benchmarks/relay_bench.py --out FILE`` measures kernel forwarding, socat and srd --
one relay, and two relays in a row -- side by side, run by run, and writes every run's
numbers and the registration of these targets to FILE (the repository keeps one at
:data:`ARCHIVED`). The targets are ours, not a paper's: ``source=TARGET``, met or not met.

Each is judged on per-run paired values (every path of a run measured back to back, so a
slow moment of the shared 2-core machine falls on all of them): throughput as a ratio to
forwarding on a log scale, the half round trip a relay adds, and the difference in
retransmitted segments between srd and socat on the same path.

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

ARCHIVED = Path(__file__).resolve().parents[2] / "data" / "benchmarks" / "relay.json"
RUN_FILE = "relay-benchmark.json"  # the copy inside an S0 run folder

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


def registration() -> list[dict]:
    """The targets as the benchmark archives them before it measures."""
    return [c.registration() for c in CLAIMS.values()]


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
    return out


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
