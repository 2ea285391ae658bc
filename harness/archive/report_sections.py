"""The parts every report gets from the harness, as HTML: a banner, the reference comparison
and the provenance section.

They are built from the run's ``run.json`` (and ``claims.csv``) and the study, never from
the notebook's code, so every study's report carries them without a line in its notebook.
Everything is escaped; nothing refers to anything outside the page.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

import pandas as pd

from ..lab.rate_plan import recorded_fit_note
from .reference import compare_claims, find_reference
from .report_slurm import slurm_rows

PROVENANCE_ID = "provenance"
REFERENCE_ID = "reference-run"


def _table(rows: dict, cls: str = "harness-kv") -> str:
    body = "".join(f"<tr><th>{escape(str(key))}</th><td>{escape(_text(value))}</td></tr>"
                   for key, value in rows.items())
    return f'<table class="{cls}"><tbody>{body}</tbody></table>'


def _text(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value) if value else "—"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _section(title: str, anchor: str, body: str) -> str:
    return f'<section id="{anchor}" class="harness-section"><h2>{escape(title)}</h2>{body}</section>'


def title(meta: dict, study_title: str = "") -> str:
    """The report's title: study and run id (and the study's own title when known)."""
    head = f"{meta.get('study', '?')} run {meta.get('run_id', '?')}"
    return f"{head} — {study_title}" if study_title else head


def banner(meta: dict, citation: str) -> str:
    """What a reader needs before anything else: which run this is, how it ended, which paper."""
    rows = {"study": meta.get("study"), "run": meta.get("run_id"), "status": meta.get("status"),
            "started": meta.get("started"), "ended": meta.get("ended"), "paper": citation or None}
    if meta.get("error"):
        rows["error"] = meta["error"]
    for i, left in enumerate(meta.get("left_behind") or [], 1):
        rows[f"left on the machine {i}"] = (f"{left.get('kind')} on {left.get('node')}: "
                                            f"{left.get('why')} (`harness lab clean` retries it)")
    if meta.get("link_verification"):
        rows["lab links verified"] = verification_summary(meta["link_verification"])
    links = (f'<p>Where this run came from: <a href="#{PROVENANCE_ID}">provenance</a>; '
             f'beside the reference run: <a href="#{REFERENCE_ID}">reference run</a>. The code of '
             "every cell is in <code>notebook.ipynb</code> beside this report.</p>")
    return f'<div class="harness-banner">{_table(rows)}{links}</div>'


def verification_summary(records: list[dict]) -> str:
    """One line: how many link directions passed the lab's verification, and each that did not
    (a shaped direction short of its rate, a delay off its RTT): the numbers after it ran on
    a lab that was not what it was configured to be, and a reader must see that first."""
    failed = [r for r in records if r.get("ok") is False]
    head = f"{len(records) - len(failed)} of {len(records)} link directions passed"
    return head + "".join(f"; FAILED: {r.get('link')} {r.get('direction')}, "
                          f"{describe_check(r, status=False)}" for r in failed)


def verification_rows(records: list[dict] | None) -> dict:
    if not records:
        return {"verification": "not recorded (a run on existing machines, or none was made)"}
    return {f"{r.get('link')} {r.get('direction')}": describe_check(r) for r in records}


def describe_check(r: dict, status: bool = True) -> str:
    """A verification record as a reader says it: rate against configured, RTT against expected."""
    parts = [("ok" if r.get("ok") else "FAILED" if r.get("ok") is False else "not judged")
             ] if status else []
    if r.get("configured_mbit"):
        fit = recorded_fit_note(r)
        parts.append(f"{_num(r.get('link_layer_mbit'))} of {_num(r['configured_mbit'])} Mbit/s "
                     f"({_num(r.get('rate_ratio'), '.2f')} of the rate"
                     + (f" over {_num(r.get('steady_rtts'), '.0f')} RTTs after {r['omitted_s']} s "
                        "of slow start omitted" if r.get("omitted_s") else "")
                     + (f"; TCP's queue stood >= {_num(r['queue_ms'], '.0f')} ms"
                        if r.get("omitted_s") and r.get("queue_ms") is not None else "")
                     + (f"; attempts {', '.join(_num(a, '.2f') for a in r['attempts'])}"
                        if r.get("attempts") else "")
                     + (f"; {fit})" if fit else ")"))
    elif r.get("goodput_mbit") is not None:  # a user's machines: measured, not judged
        parts.append(f"unshaped: TCP goodput {_num(r['goodput_mbit'])} Mbit/s "
                     f"(iperf3, {r.get('seconds') or '?'} s)")
    else:
        parts.append("unshaped" + (f" ({r['note']})" if r.get("note") else ""))
    if r.get("rtt_ms") is not None:
        parts.append(f"RTT {_num(r['rtt_ms'], '.3g')} ms"
                     + (f" (expected {_num(r['expected_rtt_ms'], '.3g')})"
                        if r.get("expected_rtt_ms") else ""))
    return ", ".join(parts)


def _num(value, fmt: str = ".1f") -> str:
    return "?" if value is None else format(value, fmt)


def reference_section(run_path: Path, meta: dict, root: Path | None = None) -> str:
    """This run's headline outcomes beside the study's committed reference run, if there is one."""
    study = str(meta.get("study", ""))
    profile = str((meta.get("parameters") or {}).get("profile") or "")
    ref = find_reference(study, profile, root, exclude=run_path)
    if ref is None:
        body = (f"<p>No reference run of study {escape(study)} is committed "
                f"(<code>data/reference/{escape(study)}/</code>), so this run stands alone.</p>"
                + recorded_changes(run_path))
        return _section("Beside the reference run", REFERENCE_ID, body)
    ours_path = run_path / "claims.csv"
    ours = pd.read_csv(ours_path) if ours_path.exists() else None
    theirs = ref.claims()
    frame = compare_claims(ours, theirs)
    same = (frame["same outcome"] == "yes").sum()
    judged = (frame["same outcome"] != "").sum()
    intro = (f"<p>Reference run <code>{escape(ref.run_id)}</code> (profile "
             f"{escape(ref.profile or '—')}, commit {escape(_text(_git(ref.meta).get('commit')))}); "
             f"this run's profile: {escape(profile or '—')}. Same outcome for {same} of {judged} "
             "claims both runs judged.</p>")
    for name, table in (("This run", ours), ("The reference run", theirs)):
        if table is None:
            intro += f"<p>{name} has no claims table (run.json's <code>claims_error</code> says why).</p>"
    consistent = (frame["consistent"] == "yes").sum()
    weighed = (frame["consistent"] != "").sum()
    intro += (f"<p>Consistent with the reference (its estimate inside this run's 95 % interval) "
              f"for {consistent} of {weighed} claims both runs estimated.</p>")
    intro += registration_changes(run_path, ref.path)
    table = frame.to_html(index=False, escape=True, border=0, classes="harness-compare")
    return _section("Beside the reference run", REFERENCE_ID, intro + table)


def registration_changes(run_path: Path, reference_path: Path) -> str:
    """Whether this run's claims were registered as the reference's were, and if not what
    changed, claim by claim; and the design changes the study recorded, with their reasons."""
    from ..verdicts.registration import claim_differences, read_archived

    mine, theirs = read_archived(run_path), read_archived(reference_path)
    out = ""
    if mine.body is None:
        return "<p>This run has no archived claim registration (made before registration).</p>"
    if mine.digest == theirs.digest:
        out += (f"<p>Claims registered as for the reference run (registration "
                f"<code>{escape(mine.digest[7:19])}</code>).</p>")
    else:
        changes = claim_differences(theirs.body, mine.body)
        out += (f"<p><b>The claims' registration changed since the reference run</b> "
                f"(reference commit {escape(theirs.commit[:12] or '?')}, registration "
                f"<code>{escape(theirs.digest[7:19] or '-')}</code>; this run "
                f"<code>{escape(mine.digest[7:19])}</code>):</p><ul>"
                + "".join(f"<li>{escape(c)}</li>" for c in changes) + "</ul>")
    return out + recorded_changes(run_path)


def recorded_changes(run_path: Path) -> str:
    """The design changes the run's registration records, each with its reason."""
    from ..verdicts.registration import read_archived

    recorded = (read_archived(run_path).body or {}).get("changes") or []
    if not recorded:
        return ""
    return ("<p>Design changes the study records (made after archived runs existed):</p><ul>"
            + "".join(f"<li>{escape(c.get('date', ''))}: {escape(c.get('what', ''))} "
                      f"&mdash; why: {escape(c.get('why', ''))}</li>" for c in recorded)
            + "</ul>")


def _git(meta: dict) -> dict:
    return (meta.get("provenance") or {}).get("git") or {}


def provenance_section(meta: dict, citation: str, notebook_kernel: str = "") -> str:
    """Where the run came from, read from run.json: code, machine, placement, tools, parameters
    (and the notebook's Jupyter kernel, from the executed notebook)."""
    prov = meta.get("provenance") or {}
    git = _git(meta)
    controller = prov.get("controller") or {}
    capabilities = meta.get("capabilities") or {}
    parts = [
        ("Run", {"study": meta.get("study"), "run id": meta.get("run_id"),
                 "status": meta.get("status"), "error": meta.get("error"),
                 "started": meta.get("started"), "ended": meta.get("ended"),
                 "notebook": meta.get("notebook"), "inventory": meta.get("inventory"),
                 "paper": citation or None}),
        ("Code", {"git commit": git.get("commit"), "dirty (uncommitted changes)": git.get("dirty"),
                  "changed files": git.get("changed_files"), "branch": git.get("branch")}),
        ("Controlling machine", {"host": controller.get("hostname"),
                                 "kernel": " ".join(filter(None, (controller.get("kernel"),
                                                                  controller.get("kernel_version")))),
                                 "CPUs": controller.get("cpus"), "machine": controller.get("machine"),
                                 "Python": prov.get("python"),
                                 "notebook kernel": notebook_kernel or None}),
        ("Placement", meta.get("placement") or {"where": None}),
        *([("Slurm job", slurm_rows(meta))] if slurm_rows(meta) else []),
        ("Lab links, verified before measuring", verification_rows(meta.get("link_verification"))),
        *([("Links: shaped by the harness or the user's network as found",
            link_origin_rows(meta))] if link_origin_rows(meta) else []),
        *([("Measured as found: nothing changed (no root, no sudo)", as_found_rows(meta))]
          if meta.get("as_found") else []),
        ("The machine during the run", machine_rows(meta)),
        ("Kernels of the nodes", {node: caps.get("kernel") for node, caps in capabilities.items()}),
        ("Tool versions", _tool_versions(capabilities)),
        ("Python packages", prov.get("packages") or {}),
        ("Parameters", meta.get("parameters") or {}),
    ]
    body = "".join(f"<h3>{escape(name)}</h3>{_table(rows)}" for name, rows in parts)
    return _section("Provenance", PROVENANCE_ID, body)


def link_origin_rows(meta: dict) -> dict:
    """On an inventory's machines: each topology link, planned vs who made it (the harness
    shapes none there)."""
    rows = {}
    for link in (meta.get("testbed") or {}).get("links") or []:
        planned = (f"planned {_num(link.get('planned_mbit'), '.0f')} Mbit/s"
                   if link.get("planned_mbit") else "planned unshaped")
        who = "shaped by the harness" if link.get("shaped_by_harness") else link.get("made_by")
        measured = "; ".join(
            f"{m['path']}: " + (f"{_num(m.get('goodput_mbit'))} Mbit/s, "
                                if m.get("goodput_mbit") is not None else "")
            + (f"RTT {_num(m.get('rtt_ms'), '.3g')} ms" if m.get("rtt_ms") is not None
               else "no answer")
            for m in link.get("measured") or [])
        rows[link["link"]] = (f"{who} ({planned}; devices {link.get('devices')})"
                              + (f"; measured {measured}" if measured else ""))
    return rows


def as_found_rows(meta: dict) -> dict:
    """A run on machines whose login had no root and no sudo (:mod:`harness.machines.as_found`): why,
    and each change the study would have made, with the privilege it needs."""
    found = meta.get("as_found") or {}
    rows = {"why": found.get("why"), "kernel features": found.get("features"),
            "machine lock": found.get("lock")}
    for i, change in enumerate(found.get("not_made") or [], 1):
        rows[f"not made {i}"] = (f"{change.get('node')}: {change.get('kind')} "
                                 f"{change.get('target')} {change.get('before')} -> "
                                 f"{change.get('after')} (needs {change.get('privilege')})")
    return rows


def machine_rows(meta: dict) -> dict:
    """Whether the run had its machine to itself, and its load (run.json's ``machine_lock`` and
    ``machine_activity``, see :mod:`harness.run.machinewatch`)."""
    from ..run.machinewatch import describe

    locks = meta.get("machine_lock") or {}
    rows = describe(meta.get("machine_activity"), locks.get("local"))
    for name, lock in locks.items():
        if name != "local":
            rows[f"lock on {name}"] = (lock.get("mode") if lock.get("mode") == "exclusive" else
                                       f"shared with run {(lock.get('holder') or {}).get('run_id')}")
    return rows or {"lock": "not recorded (a run from before machine locks)"}


def _tool_versions(capabilities: dict) -> dict:
    """Each program's version; one row when every node has the same, else one per node."""
    seen: dict[str, dict[str, str | None]] = {}
    for node, caps in capabilities.items():
        for tool, version in (caps.get("tools") or {}).items():
            seen.setdefault(tool, {})[node] = version
    rows = {}
    for tool in sorted(seen):
        versions = seen[tool]
        if len(set(versions.values())) == 1:
            rows[tool] = next(iter(versions.values())) or "not installed"
        else:
            for node, version in versions.items():
                rows[f"{tool} ({node})"] = version or "not installed"
    return rows


#: the reports' and pages' font stack (set on body, so it wins over the theme's :root whatever
#: the order of their style sheets): the platform's UI font first, then families that cover
#: Hangul and the other CJK scripts (S4's paper is Korean: its title and quotes are in every
#: S4 report) -- Debian's fonts-noto-cjk (env/system-packages.txt), macOS's and Windows' own
FONT_STACK = ('system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK KR", '
              '"Source Han Sans K", "Apple SD Gothic Neo", "Malgun Gothic", NanumGothic, '
              '"Noto Sans CJK JP", "Noto Sans CJK SC", sans-serif')
#: the same for code and the provenance tables: a monospaced font first; a character it lacks
#: (Hangul) is drawn with the next family that has it
CODE_FONT_STACK = ('SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace, '
                   '"Noto Sans Mono CJK KR", "Noto Sans CJK KR", "Apple SD Gothic Neo", "Malgun Gothic", '
                   'NanumGothicCoding, "Noto Sans Mono CJK JP", "Noto Sans Mono CJK SC"')

STYLE = f"""
body {{ --jp-ui-font-family: {FONT_STACK}; --jp-content-font-family: {FONT_STACK};
        --jp-code-font-family: {CODE_FONT_STACK}; font-family: {FONT_STACK}; }}
.harness-banner, .harness-section {{ margin: 1em 0; }}
.jp-RenderedHTMLCommon table.harness-kv th, .jp-RenderedHTMLCommon table.harness-kv td,
.jp-RenderedHTMLCommon table.harness-compare th, .jp-RenderedHTMLCommon table.harness-compare td {{
  text-align: left; vertical-align: top; }}
.jp-RenderedHTMLCommon table.harness-kv th {{ padding-right: 1em; white-space: nowrap; }}
.jp-RenderedHTMLCommon table.harness-kv td {{
  font-family: {CODE_FONT_STACK}; word-break: break-word; }}
.jp-RenderedHTMLCommon table.harness-compare th, .jp-RenderedHTMLCommon table.harness-compare td {{
  border: 1px solid #ccc; padding: 2px 6px; }}
"""
