"""The committed reference runs are current: today's analysis of each one's archived results
gives the claims table it archived, and it was registered as today's code registers its claims.

A reference that went stale -- its claims table made by older claim code, or its claims
registered otherwise than today -- would make every report compare against verdicts the
code no longer gives. This test fails the moment that happens, naming the claims that differ.

A reference made under an earlier registration is listed in :data:`SUPERSEDED` with the
reason: today's code judges under another registration, so its archived table cannot be
re-made. For those the test checks what still holds: today's code reads and judges its
archived results, its registration differs from today's (so an entry cannot linger), and the
difference is one a report shows claim by claim (``registration_changes`` beside the
reference). They are replaced by the pooled references of issue 33 item 9.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from harness.archive.archive import project_root
from harness.archive.reference import reference_root
from harness.archive.registered_first import registered_first
from harness.studies.registry import discover, get_study
from harness.verdicts.pool import POOLED, member_paths, pool
from harness.verdicts.registration import claim_differences, read_archived

#: the columns that carry a verdict: the claim, its region, our estimate, the outcome
DECISION = ("claim_id", "source", "region", "value", "low", "high", "n", "outcome")
#: references that predate the registration of their study's claims, and why they stay for
#: now; the test below fails as soon as one of them is current (so the list cannot linger)
PREDATE_REGISTRATION: dict[str, str] = {}

_PROTOCOL_33 = ("registered before the protocol of issue 33 (regions by the equivalence margin of "
                "harness.verdicts.margins, change of 2026-11-29T00:36Z; regime gates, 2026-11-28T22:25Z, where "
                "its study has them); replaced by the pooled reference of issue 33 item 9, measured after "
                "its study's regime work (issues 34, 35)")
#: references made under an earlier registration, by "study/run id", and why they stay
SUPERSEDED: dict[str, str] = {
    "s0/20261127T092615Z-efd65a": _PROTOCOL_33,
    "s1/20261127T125206Z-7aa342": _PROTOCOL_33,
    "s2/20261126T221020Z-08dd74": _PROTOCOL_33,
    "s3/20261127T091253Z-468ee6": _PROTOCOL_33,
    "s4/20261127T162255Z-60382b": _PROTOCOL_33,
    "s0/20261129T044005Z-pool-2dea54": (
        "the first pooled S0 reference (three runs, 2026-11-29); a referee's review of it led to "
        "two regime gates (s0/registration.toml, change of 2026-11-29: serialising_wire on every "
        "size a claim counts, and 'reachable' on the gains over two proxies); replaced by the "
        "pooled reference made under them"),
    "s0/20261129T053121Z-pool-c9f4a4": (
        "the second pooled S0 reference (three runs, 2026-11-29); a referee's review of it led to "
        "one regime for every bandwidth claim, the relays limit (gate at_most on the relay "
        "benchmark), and to every size of a claim's range counted (s0/registration.toml, change "
        "of 2026-11-29T06:58Z); replaced by the pooled reference made under them"),
    "s0/20261129T073227Z-pool-53ae69": (
        "the third pooled S0 reference (three runs, 2026-11-29); a referee's review of it led to "
        "the distance claim's gate on its own VM's accelerator, invalid latency points, and "
        "invalid taking precedence over a failed gate (s0/registration.toml, change of "
        "2026-11-29T07:41Z); new reference pending"),
    "s4/20261129T082034Z-pool-53e6aa": (
        "the second pooled S4 reference (three runs, 2026-11-29); a referee's review of it led to "
        "the peaks held to the gains' one-stream regime and each transport's anchored claims "
        "gated on its own stream (s4/registration.toml, change of 2026-11-29T08:27Z), then to "
        "the paper's contrast as a claim and the MPTCP gains gated on the coupled controller "
        "(change of 2026-11-29T10:25Z); new reference pending"),
    "s3/20261129T111447Z-pool-8951d5": (
        "the first pooled S3 reference (three runs, 2026-11-29); a referee's review of it "
        "(docs/reviews/s3-2026-11-29.md) led to the rate claims' gates (accelerated_virtualisation "
        "on the gains, links_verified on the reducer port), a claim at 1:48 x 8 KB and the CPU "
        "note's tick resolution (s3/registration.toml, change of 2026-11-29T11:16Z); new "
        "reference pending"),
    "s4/20261129T045749Z-pool-fbf94a": (
        "the first pooled S4 reference (three runs, 2026-11-29); a referee's review of it led to "
        "the anchored claims' regime on the claims' own 1-stream points (s4/registration.toml, "
        "change of 2026-11-29); replaced by the pooled reference made under it"),
    "s0/20261129T113502Z-pool-cfba0f": (
        "the fourth pooled S0 reference (three runs, 2026-11-29); its referee review "
        "(docs/reviews/s0-2026-11-29-fourth.md) led to not testable rather than invalid for points "
        "the lab's own shaper lets through, a one-sided 'halved' and voluntary context switches "
        "counted apart (s0/registration.toml, change of 2026-11-29T13:14Z); new reference pending"),
    "s0/20261129T144606Z-pool-46300f": (
        "the fifth pooled S0 reference (three runs, 2026-11-29); its referee review "
        "(docs/reviews/s0-2026-11-29-fifth.md) led to gain regions on the gain scale, a two-sided "
        "'halved' and each change's record of what it replaced (s0/registration.toml, change #21 "
        "of 2026-11-29T16:36Z); new reference pending"),
    "s0/20261129T175330Z-pool-854254": (
        "the sixth pooled S0 reference (three runs, 2026-11-29); its referee review "
        "(docs/reviews/s0-2026-11-29-sixth.md) led to context switches counted in total, the "
        "relays' limit a stated condition the bandwidth claims are judged under, each older "
        "change's record of what it replaced and the 32 KB size no longer called registered "
        "before data (s0/registration.toml, changes #22-#25 of 2026-11-29T19:57Z-20:09Z); replaced "
        "by the pooled reference made under them"),
    "s0/20261129T233942Z-pool-e445ec": (
        "the seventh pooled S0 reference (three runs, 2026-11-29); its referee review "
        "(docs/reviews/s0-2026-11-29-seventh.md) led to the relays' limit deciding again on the "
        "bandwidth claims, with the stated testbed's reading shown beside it, and each gain's "
        "measured ceiling in its note (s0/registration.toml, change #26 of 2026-11-29T23:47Z); "
        "replaced by the pooled reference made under it"),
    "s2/20261130T073257Z-pool-5d50ea": (
        "the first pooled S2 reference under the protocol (three runs, 2026-11-30); its referee "
        "review (docs/reviews/s2-2026-11-30.md: 2 wrong) led to the parallel FS's own ceiling "
        "measured and gating its six claims, the seek cost measured, task_scaling at the paper's "
        "4 nodes for 9 tasks, nfs_untuned_capped two-sided and window_over_rtt a lab check "
        "(s2/registration.toml, changes of 2026-11-30T08:34Z and 08:40Z); replaced by the pooled "
        "reference made under them"),
    "s2/20261130T094904Z-pool-d49573": (
        "the second pooled S2 reference (three runs, 2026-11-30); its referee review "
        "(docs/reviews/s2-2026-11-30-second.md: 1 wrong) led to the seek gate removed from the "
        "two single-stream NFS claims and network_fine a lab check (s2/registration.toml, change "
        "of 2026-11-30T09:53Z); replaced by the pooled reference made under it"),
    "s1/20261130T003640Z-pool-268dbf": (
        "the first pooled S1 reference under the protocol (three runs, 2026-11-29/30); its "
        "referee review (docs/reviews/s1-2026-11-30.md) led to the TCG gate on the small-message "
        "bandwidth, polling bandwidth and Nagle claims and to records of what older changes "
        "replaced (s1/registration.toml, changes #24-#25 of 2026-11-30T00:43Z); replaced by the "
        "pooled reference made under them"),
    "s4/20261129T172410Z-pool-e1142e": (
        "the third pooled S4 reference (three runs, 2026-11-29); its referee review "
        "(docs/reviews/s4-2026-11-29-third.md) led to the anchored claims gated on a sender "
        "measured to be throttled (cpu_throttled) and the MPTCP ones on the paper's stack "
        "(stack), a calibration of 7 limits from 0.005 CPUs with 5 repetitions each and records "
        "of what older changes replaced (s4/registration.toml, changes #13-#17 of "
        "2026-11-29T23:33Z); replaced by the pooled reference made under them"),
    "s3/20261129T142644Z-pool-9b3512": (
        "the second pooled S3 reference (three runs, 2026-11-29); its referee review "
        "(docs/reviews/s3-2026-11-29-second.md) led to the verdict port at a registered 75 Mbit/s "
        "on netem's rate, the port gate on the data direction, 003:208 under one gate set and a "
        "share's interval within [0, 1] (s3/registration.toml, changes of 2026-11-29T16:35Z); "
        "replaced by the pooled reference made under them"),
    "s3/20261129T182345Z-pool-f4ef70": (
        "the third pooled S3 reference (three runs, 2026-11-29); its referee review "
        "(docs/reviews/s3-2026-11-29-third.md) led to tipc_better_8kb withdrawn (003:208 gives "
        "only an average and a maximum), tipc_best_most cited at 003:203,208, the collapse "
        "claims gated on their measured regime and 3 rate + 6 CPU repetitions "
        "(s3/registration.toml, changes of 2026-11-29T23:19Z); replaced by the pooled "
        "reference made under them"),
}


def reference_runs() -> list[Path]:
    return sorted(p.parent for p in reference_root().glob("*/*/run.json"))


def pooled(run: Path) -> bool:
    return json.loads((run / "run.json").read_text()).get("kind") == POOLED


def decisions(frame: pd.DataFrame) -> pd.DataFrame:
    have = [c for c in DECISION if c in frame]
    return frame[have].sort_values("claim_id").reset_index(drop=True)


def differences(archived: pd.DataFrame, today: pd.DataFrame) -> list[str]:
    a, b = decisions(archived).set_index("claim_id"), decisions(today).set_index("claim_id")
    out = [f"{cid}: only in the archived table" for cid in a.index.difference(b.index)]
    out += [f"{cid}: only in today's analysis" for cid in b.index.difference(a.index)]
    for cid in a.index.intersection(b.index):
        for col in a.columns.intersection(b.columns):
            x, y = a.at[cid, col], b.at[cid, col]
            if isinstance(x, float | int) and isinstance(y, float | int):
                same = (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9,
                                                                        abs_tol=1e-12)
            else:
                same = str(x) == str(y) or (pd.isna(x) and pd.isna(y))
            if not same:
                out.append(f"{cid}: {col} archived {x!r}, today {y!r}")
    return out


def test_there_is_a_reference_run_of_every_study():
    assert {p.parent.name for p in reference_runs()} >= {"s0", "s1", "s2", "s3", "s4"}


@pytest.mark.parametrize("run", reference_runs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_todays_analysis_of_a_reference_gives_its_archived_claims(run, tmp_path):
    discover()
    study = get_study(run.parent.name)
    archived = pd.read_parquet(run / "claims.parquet")
    key = f"{run.parent.name}/{run.name}"
    if key in SUPERSEDED and pooled(run):  # made under another registration: no pool again,
        for member in member_paths(run):  # but today's code reads and judges each member
            today = study.claims(study.load(member))
            assert set(today.claim_id) >= {c.id for c in study.registration().claims}
        return
    if pooled(run):  # a pooled reference: today's code pools its kept members again
        today = pd.read_parquet(pool([str(p) for p in member_paths(run)], str(tmp_path / "again"))
                                / "claims.parquet")
    else:
        today = study.claims(study.load(run))  # today's code still reads and judges it
    if key in SUPERSEDED:
        assert set(today.claim_id) >= {c.id for c in study.registration().claims}
        return
    diff = differences(archived, today)
    assert not diff, (f"reference {run.name} of {study.name} is stale: today's analysis of its "
                      "results differs from its claims table -- make a new reference run at the "
                      "verdict profile:\n  " + "\n  ".join(diff))


@pytest.mark.parametrize("run", reference_runs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_reference_is_registered_as_today_and_at_the_verdict_profile(run):
    discover()
    study = get_study(run.parent.name)
    archived = read_archived(run)
    current = archived.digest == study.registration().digest
    key = f"{run.parent.name}/{run.name}"
    if key in SUPERSEDED:
        assert not current, f"{key} is registered as today: take it out of SUPERSEDED"
        shown = claim_differences(archived.body, study.registration().to_dict())
        assert shown, f"{key}: its registration differs from today's in no claim a report would show"
        return
    if study.name in PREDATE_REGISTRATION:
        assert not current, (f"{study.name}'s reference is current now: take it out of "
                             "PREDATE_REGISTRATION")
        assert archived.body is None, f"{run.name}: listed as predating registration, but has one"
        return
    assert current, (f"reference {run.name} of {study.name} was registered as "
                     f"{archived.digest[7:19] or '(nothing)'}, today's code registers "
                     f"{study.registration().digest[7:19]}: `harness claims history "
                     f"{study.name}` says what changed; make a new reference run")

    meta = json.loads((run / "run.json").read_text())
    assert pooled(run) and len(meta["members"]) >= 3, (
        f"{key} is one run: a verdict reference is pooled from at least three runs (issue 33 item 9: "
        "harness claims pool RUN RUN RUN --reference)")
    assert meta["status"] == "complete"
    assert meta["parameters"]["profile"] == "verdict", f"{run.name} is not a verdict-profile run"


@pytest.mark.parametrize("run", reference_runs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_references_registration_was_committed_before_it_started(run):
    """Issue 33 item 9: the registration file the run read is the one committed at its (clean)
    commit, and that file's last commit is older than the run's start."""
    key = f"{run.parent.name}/{run.name}"
    if key in SUPERSEDED:
        pytest.skip(f"{key}: superseded ({SUPERSEDED[key][:60]}...)")
    if not (project_root() / ".git").exists():
        pytest.skip("not a git checkout: the commit times cannot be read")
    discover()
    study = get_study(run.parent.name)
    for member in member_paths(run) if pooled(run) else [run]:
        got = registered_first(member, study.registration_path(), project_root())
        assert got.ok, f"{key}: {member.name}: {got.why}"

