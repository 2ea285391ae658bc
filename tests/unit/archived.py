"""Archived runs made for tests, exactly as a run writes them (Run.create, tables, finish)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pandas as pd

from harness.archive.archive import COMPLETE, INCOMPLETE, Run

NOTEBOOK = Path(__file__).resolve().parents[1] / "studies" / "ping_study.ipynb"


def make_run(root: Path, parameters: dict, *, sysctl: str = "1", commit: str = "c0ffee",
             outcome: str = "reproduced", rtt: float = 0.05, complete: bool = True,
             notebook: Path | None = NOTEBOOK, study: str = "ping-demo",
             code_digest: str = "sha256:aa") -> Run:
    run = Run.create(study, parameters, root, notebook=str(notebook) if notebook else None)
    run.update(
        provenance={"git": {"commit": commit, "dirty": False, "changed_files": []},
                    "python": "3.11.7", "packages": {"pandas": "2.2.0"},
                    "controller": {"kernel": "6.1.0-test", "hostname": "lab"}},
        placement={"where": "host", "reason": "the host has every feature"},
        code_digests={"tests/studies/ping_study.py": code_digest},
        registration={"digest": "sha256:r1", "claims": {"paper": 1}, "changes": 0},
        capabilities={"local": {"kernel": "6.1.0-test", "tools": {"ping": "ping 2024"},
                                "features": {"netns": True}, "congestion_default": "cubic"}},
        configuration=[{"node": "a", "kind": "sysctl", "target": "net.ipv4.ip_forward",
                        "before": "0", "after": sysctl, "changed": True, "seq": 1}],
        link_verification=[{"link": "a:eth0--b:eth0", "direction": "a->b",
                            "link_layer_mbit": 99.9, "configured_mbit": 100.0,
                            "rtt_ms": rtt, "ok": True}],
    )
    run.write_table(pd.DataFrame({"seq": [1, 2, 3], "rtt_ms": [rtt, rtt * 2, rtt * 3]}))
    run.write_table(pd.DataFrame([{
        "claim_id": "ping.veth_rtt", "source": "paper", "claim": "a veth pair answers within 1 ms",
        "ours": f"{rtt * 2:.3f} ms", "value": rtt * 2, "low": rtt, "high": rtt * 3, "unit": "ms",
        "outcome": outcome}]), "claims")
    if complete:
        run.finish(COMPLETE)
    else:
        run.finish(INCOMPLETE, "interrupted (SIGINT/SIGTERM)")
    return run


def fingerprint(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file under ``root``: its hash, mode and modification time."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            st = path.stat()
            out[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mode,
                              st.st_mtime_ns)
    return out
