"""The relay's own targets (issue 27), judged on a relay benchmark's archived JSON.

``benchmarks/relay_bench.py --out FILE`` measures kernel forwarding, socat and srd --
one relay, and two relays in a row -- side by side, run by run, and writes every run's
numbers and the registration of these targets to FILE (the repository keeps one at
:data:`ARCHIVED`). The targets are ours, not a paper's: ``source=TARGET``, met or not met.
They are registered as data, not code: :data:`REGISTRATION` (``registration.toml`` beside
this module, the studies' schema, :mod:`harness.verdicts.registration_file`) holds each one's
text, quantity, bound and rule, the benchmark's design and the changes;
``harness claims show relay`` prints it. This module holds only how each is computed.

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
from ..verdicts.claims import Claim, Verdict, judge, not_testable, table
from ..verdicts.intervals import mean_estimate
from ..verdicts.registration import Registration
from ..verdicts.registration_file import RegistrationError
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

TITLE = "the relay's own targets, judged on benchmarks/relay_bench.py (issue 27)"
#: the relay's own targets, their design and changes: data, not code (issue 33 item 1)
REGISTRATION = Path(__file__).resolve().parent / "registration.toml"
#: the relay's targets judged on the per-run paired values: (relay's path, hops) x (what is
#: compared); ``relay.target.<path>_<what>`` names each in :data:`REGISTRATION`
_JUDGED = ("vs_forward", "retransmits", "added_half_rtt")
_RELAYS = (("srd", 1), ("srd2", 2))


def registered() -> Registration:
    """The relay's registration (:data:`REGISTRATION`), read and checked against the schema."""
    return load_registration(REGISTRATION)


def claims() -> dict[str, Claim]:
    """The relay's targets by their short key (``'srd_vs_forward'``), from :data:`REGISTRATION`.

    Every target :func:`verdicts` judges must be registered, and every registered one is
    judged: a file that names another or leaves one out is one error before anything is judged.
    """
    reg = registered()
    keys = [f"{relay}_{what}" for relay, _ in _RELAYS for what in _JUDGED]
    wanted = {f"relay.target.{key}": key for key in keys}
    got = {c.id for c in reg.claims}
    if got != set(wanted):
        raise RegistrationError(
            f"{REGISTRATION}: the relay's targets are {', '.join(sorted(got)) or 'none'}; "
            f"harness.relay.targets judges {', '.join(sorted(wanted))}",
            "register exactly those ids (a new target needs its judging in harness.relay.targets)")
    return {wanted[c.id]: c for c in reg.claims}


def peer_claims() -> dict[str, Claim]:
    """S0's registered peer targets (:data:`PEER_TARGETS`), by claim id."""
    s0 = load_registration(S0_REGISTRATION)
    return {cid: s0.claim(cid) for cid in PEER_TARGETS.values()}


def registration() -> list[dict]:
    """The targets as the benchmark archives them before it measures (``targets_registered``):
    the relay's, in the order of its file, then S0's peer rows."""
    return [c.registration() for c in (*registered().claims, *peer_claims().values())]


def registration_digests() -> dict[str, str]:
    """The digest of each registration file the targets come from (archived beside them)."""
    return {"relay": registered().digest, "s0": load_registration(S0_REGISTRATION).digest}


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
    registered_claims = claims()
    out = []
    for relay, hops in _RELAYS:
        socat = "socat" if hops == 1 else "socat2"
        # each estimate is called in the iteration that made it (B023 cannot see that)
        for claim_key, frame, others, estimate in (
                ("vs_forward", tput, "forward",
                 lambda f: mean_estimate(f[relay] / f["forward"], "x", "runs", log=True)),  # noqa: B023
                ("retransmits", retr, socat,
                 lambda f: mean_estimate(f[relay] - f[socat], "segments", "runs")),  # noqa: B023
                ("added_half_rtt", lat, "forward",
                 lambda f: mean_estimate((f[relay] - f["forward"]) / hops, "us", "runs"))):  # noqa: B023
            claim = registered_claims[f"{relay}_{claim_key}"]
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


def registered_in_run(run_path: str | Path) -> dict[str, dict]:
    """The targets as the benchmark a run archived registered them before it measured
    (``targets_registered``), by claim id; empty if the run archived none (or it predates
    registration). Its rows in the run's claims table are judged under these, not under the
    study's registration (``registration.json``), which does not hold the relay's own."""
    found = sorted(Path(run_path).rglob(RUN_FILE))
    if not found:
        return {}
    return {c["id"]: c for c in load(found[0]).get("targets_registered") or []
            if isinstance(c, dict) and isinstance(c.get("id"), str)}
