"""A run on machines whose login is not root and may not use sudo: measure them as found.

Decided by :func:`harness.machines.privileges.decide` before anything runs. Such a run

- changes nothing on any machine of the run: every configuration operation the study asks
  for is planned from the machines' facts (reads only, as a dry run) and each change it
  would make is recorded in run.json's ``as_found.not_made``, with the privilege that
  change needs; a machine already as the study wants needs no change and none is missing;
- checks the study's programs (``command -v`` and their versions) but probes no kernel
  feature: the probe makes a throw-away network namespace (``unshare --net``), which needs
  CAP_SYS_ADMIN;
- takes no machine lock on those machines: the lock lives under /run/harness, root's, and
  a lock of the user's own would not keep other users' runs away (run.json says so);
- still records each machine as found (:mod:`harness.machines.facts`), verifies the links
  and measures;
- and its claims that rest on a change not made are "not testable here", naming the
  change and the privilege (:func:`mark_claims`; a study says which claim rests on which
  kind of change in :attr:`harness.studies.base.Study.as_found`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ..config.operation import Change
from ..config.record import ChangeRecord
from ..lab.probe import Capabilities, tool_versions
from ..nodes import Node
from ..verdicts.claims import NOT_TESTABLE
from .facts import MachineFacts
from .privileges import OPERATIONS, Access

NOT_PROBED = ("the kernel-feature probe makes a throw-away network namespace (unshare --net), "
              "which needs CAP_SYS_ADMIN: features not probed, programs checked")
NO_LOCK = ("no machine lock: it lives under /run/harness (root's); a lock of this login's own "
           "would not keep other users' runs away")


@dataclass
class AsFound:
    """Who lacked root, and every change the study would have made but did not."""

    lacking: list[Access]
    not_made: list[dict] = field(default_factory=list)

    def plan(self, changes: list[Change]) -> list[ChangeRecord]:
        """The records of ``changes`` (planned, none made); those that would change something
        go to ``not_made`` with the privilege each needs."""
        records = [c.record() for c in changes]
        for record in records:
            if record.changed:
                self.not_made.append({**record.to_dict(),
                                      "privilege": OPERATIONS.get(record.kind, "root")})
        return records

    def to_dict(self) -> dict:
        return {"mode": "as found",
                "why": "; ".join(f"{a.node}: login {a.user} (uid {a.uid}) is not root and the "
                                 "inventory allows no sudo" for a in self.lacking),
                "logins": [a.to_dict() for a in self.lacking],
                "not_made": list(self.not_made), "features": NOT_PROBED, "lock": NO_LOCK}


def capabilities(name: str, node: Node, facts: MachineFacts, tools) -> Capabilities:
    """What can be known of a machine without root: its kernel, default congestion control
    and programs; no feature (see :data:`NOT_PROBED`)."""
    return Capabilities(node=name, kernel=facts.kernel,
                        congestion_default=facts.sysctls.get(
                            "net.ipv4.tcp_congestion_control") or "",
                        tools=tool_versions(node, tools))


def mark_claims(frame: pd.DataFrame, meta: dict,
                needs: dict[str, str | tuple[str, ...]] | None) -> pd.DataFrame:
    """``frame`` (a claims table) with each claim of ``needs`` (claim id -> the kind of change
    it rests on, or several) "not testable here" when the run was as found and a change of
    such a kind was not made: the reason names the change, the privilege and the login. Its
    estimate stays beside it (what the machines gave as found) but decides nothing."""
    found = meta.get("as_found") or {}
    if not found or not needs or frame.empty:
        return frame
    missing: dict[str, list[dict]] = {}
    for row in found.get("not_made", []):
        missing.setdefault(row["kind"], []).append(row)
    logins = ", ".join(f"{a['node']} as {a['user']}" for a in found.get("logins", []))
    frame = frame.copy()
    for i, claim_id in frame["claim_id"].items():
        kinds = needs.get(claim_id, ())
        kinds = (kinds,) if isinstance(kinds, str) else kinds
        rows = next((missing[k] for k in kinds if k in missing), None)
        if not rows:
            continue
        kind = rows[0]["kind"]
        changes = "; ".join(f"{r['node']} {r['target']} {r['before']} -> {r['after']}"
                            for r in rows[:3]) + (f"; and {len(rows) - 3} more"
                                                  if len(rows) > 3 else "")
        frame.loc[i, "outcome"] = NOT_TESTABLE
        frame.loc[i, "reason"] = (
            f"rests on a {kind} change that was not made ({changes}): it needs "
            f"{OPERATIONS.get(kind, 'root')}, which the run lacked ({logins}: not root, no "
            f"sudo in the inventory); measured as found: {frame.loc[i, 'ours']}")
        frame.loc[i, "more_needed"] = pd.NA
    return frame
