"""Claims a registered change withdrew: their record kept, never judged.

A claim registered as reading more into the paper than its sentence says (the third S3 review of
2026-11-29: ``s3.tipc_better_8kb`` turned "on average +10 %, at most +16 % over <= 8 KB" into
">= 1.1x at 8 KB") is not deleted from the registration: deleting it would erase what was
registered, and which runs were judged under it, from the history a referee reads. A change lists
it in ``dropped`` (:mod:`harness.verdicts.registration_file`); the claim's ``[[claims]]`` table
stays, and the change that withdrew it says why and when. From then on the claim is *withdrawn*
(:data:`~harness.verdicts.claims.WITHDRAWN`): every claims table shows its row with that outcome,
the change and no estimate (:func:`mark`, applied to every study's table by
:class:`~harness.studies.base.Study`), a pool pools nothing of it, and no verdict "as registered
before outcomes" is recomputed for it (:mod:`harness.verdicts.before_outcomes`).
"""

from __future__ import annotations

import pandas as pd

from . import disclosure
from .claims import WITHDRAWN, Verdict, table
from .registration import DesignChange, Registration


def reason(registration: Registration, change: DesignChange) -> str:
    """A withdrawn claim's reason: the change that withdrew it, whole, and what that means."""
    return (f"withdrawn by change {disclosure.label(registration, change)}: {disclosure.whole(change)}; "
            "its registration is kept and it is never judged")


def withdrawn_ids(registration: Registration) -> list[str]:
    """The ids of the claims a change of ``registration`` withdrew, in the registration's order."""
    return [c.id for c in registration.claims if registration.withdrawn(c.id) is not None]


def mark(frame: pd.DataFrame, registration: Registration) -> pd.DataFrame:
    """``frame`` (a claims table) with one row per withdrawn claim: outcome withdrawn, the change as
    its reason, no estimate, no gates. A row the analysis made for it is replaced (whatever it
    judged is not shown); a withdrawn claim with no row gets one, after the rows of the claims
    registered before it. ``frame`` itself when the registration withdrew nothing."""
    dropped = withdrawn_ids(registration)
    if not dropped:
        return frame
    rows = table([Verdict(registration.claim(cid), None, WITHDRAWN,
                          reason(registration, registration.withdrawn(cid))) for cid in dropped])
    rows = rows.reindex(columns=list(dict.fromkeys([*frame.columns, *rows.columns])))
    order = {c.id: i for i, c in enumerate(registration.claims)}
    ids = list(frame.claim_id)
    keys = [float(i) for i in range(len(ids))]  # today's rows keep their order
    for cid in dropped:
        if cid in ids:  # where the analysis put it
            keys.append(float(ids.index(cid)))
            continue
        before = [i for i, other in enumerate(ids) if order.get(other, -1) < order[cid] and other in order]
        keys.append(max(before) + 0.5 if before else -0.5)
    kept = frame[~frame.claim_id.isin(dropped)]
    keys = [k for k, cid in zip(keys, ids) if cid not in dropped] + keys[len(ids):]
    out = pd.concat([kept, rows], ignore_index=True)
    out["_order"] = keys
    return out.sort_values("_order", kind="mergesort").drop(columns="_order").reset_index(drop=True)
