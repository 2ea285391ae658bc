"""Claims registered before data: every paper's claim quotes its seed line; digests; history."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.errors import SpecError
from harness.studies.registry import discover, get_study
from harness.verdicts.claims import LAB, PAPER, Claim, Region
from harness.verdicts.registration import (
    DesignChange,
    Registration,
    claim_differences,
    history,
)

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT.parent / "shared" / "seeds"


def notebook_studies(folder: Path) -> list[str]:
    """The studies of the notebooks in ``folder`` that name a module beside them
    (``"module": "FILE.py"``): discover() does not import those, so without this a new
    study kept beside its notebook (docs/how-to/adding-a-study.md) was never checked here."""
    from harness.errors import SpecError
    from harness.studies.registry import notebook_metadata, study_of_notebook

    names = []
    for notebook in sorted(folder.glob("*.ipynb")):
        try:
            meta = notebook_metadata(notebook)
        except SpecError:  # not a study's notebook
            continue
        if meta.get("module"):
            names.append(study_of_notebook(notebook).name)
    return names


def registered_studies() -> list[str]:
    """Every study the harness finds (a new one under harness/studies/, or beside its notebook
    under notebooks/, is checked too)."""
    from harness.studies.base import DEFINED

    discover()
    notebook_studies(ROOT / "notebooks")
    return sorted(DEFINED)


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def seed_lines(seed_line: str) -> str:
    """The text of "004:66" (or "003:120,121"): those lines of the seed, joined."""
    seed, _, lines = seed_line.partition(":")
    files = sorted(SEEDS.glob(f"{seed}_*.txt"))
    assert len(files) == 1, f"no seed file {seed}_*.txt under {SEEDS} (is ../shared/ there?)"
    text = files[0].read_text().splitlines()
    return " ".join(text[int(n) - 1] for n in lines.split(","))


def test_a_study_beside_its_notebook_is_found_for_these_checks(tmp_path):
    """The example study of docs/how-to/adding-a-study.md sits beside its notebook (tests/studies/): found by its
    notebook's metadata; a notebook without harness metadata names no study."""
    assert notebook_studies(ROOT / "tests" / "studies") == ["ping-demo"]
    (tmp_path / "plain.ipynb").write_text(json.dumps(
        {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert notebook_studies(tmp_path) == []


def test_the_five_studies_are_among_them():
    assert {"s0", "s1", "s2", "s3", "s4"} <= set(registered_studies())


@pytest.mark.parametrize("study", registered_studies())
def test_every_paper_claim_is_registered_with_its_sentence_quantity_and_regime(study):
    """A study with a paper (``citation.seed``) registers the paper's claims, each quoting its
    seed line; a study without one registers only targets and lab checks of its own."""
    reg = get_study(study).registration()
    paper = [c for c in reg.claims if c.source == PAPER]
    seed = (get_study(study).citation.seed if get_study(study).citation else "")
    if not seed:
        assert not paper, f"{study} has no seed paper to quote, so no claim can be the paper's"
        return
    assert paper, f"{study} registers no paper's claim"
    for claim in paper:
        missing = [f for f in ("quote", "seed_line", "quantity", "regime") if not getattr(claim, f)]
        assert not missing, f"{claim.id} lacks {missing}"
        assert re.fullmatch(r"\d{3}:\d+(,\d+)*", claim.seed_line), claim.seed_line
        assert claim.seed_line.startswith(get_study(study).citation.seed[:3]), claim.seed_line
        assert squash(claim.quote) in squash(seed_lines(claim.seed_line)), \
            f"{claim.id}: the quote is not on seed line {claim.seed_line}: {claim.quote!r}"
        assert claim.region.why, f"{claim.id}: a region needs the rule that made it"
    ids = [c.id for c in reg.claims]
    assert len(ids) == len(set(ids)), f"{study}: claim ids repeat"
    assert reg.design, f"{study} registers no DESIGN"


def claim(cid: str, low: float = 1.0, source: str = PAPER, regime: str = "1 Gbit/s") -> Claim:
    return Claim(cid, cid, "2x", Region(low, 3.0, "rule"), "x", source, "q", "004:66",
                 "goodput ratio", regime)


def test_the_digest_is_the_content_not_the_object():
    a = Registration("s9", (claim("a"), claim("b")), {"reps": (10, 20)})
    b = Registration("s9", (claim("a"), claim("b")), {"reps": [10, 20]})
    assert a.digest == b.digest and a.digest.startswith("sha256:")
    assert Registration("s9", (claim("a", low=1.1), claim("b")), {"reps": [10, 20]}).digest \
        != a.digest
    assert Registration("s9", (claim("a"), claim("b")), {"reps": [10, 30]}).digest != a.digest
    changed = Registration("s9", (claim("a"), claim("b")), {"reps": [10, 20]},
                           (DesignChange("2026-11-26", "reps 10 -> 20", "why"),))
    assert changed.digest != a.digest
    assert a.summary() == {"digest": a.digest, "claims": {"paper": 2}, "changes": 0}


def test_differences_name_each_claim_and_what_moved():
    old = Registration("s9", (claim("a"), claim("b"), claim("c")), {"reps": 10}).to_dict()
    new = Registration("s9", (claim("a", low=1.5), claim("b", regime="CPU-limited sender"),
                              claim("d", source=LAB)), {"reps": 20}).to_dict()
    diff = claim_differences(old, new)
    assert "a: region '1..3x' -> '1.5..3x'" in diff
    assert "b: regime '1 Gbit/s' -> 'CPU-limited sender'" in diff
    assert "c: removed (was 1..3x)" in diff and "d: added (1..3x)" in diff
    assert "design: reps changed" in diff
    assert claim_differences(None, new) == [
        "(made before claims were registered: no registration archived)"]


def archived(tmp_path: Path, run_id: str, reg: Registration | None, commit: str,
             status: str | None = None) -> Path:
    path = tmp_path / run_id
    path.mkdir()
    meta = {"provenance": {"git": {"commit": commit}}, **({"status": status} if status else {})}
    (path / "run.json").write_text(json.dumps(meta))
    if reg is not None:
        (path / "registration.json").write_text(json.dumps(reg.to_dict()))
    return path


def test_history_shows_where_the_registration_changed_with_the_commits(tmp_path):
    first = Registration("s9", (claim("a"),), {"reps": 10})
    second = Registration("s9", (claim("a", low=1.5),), {"reps": 10})
    runs = [archived(tmp_path, "20261101T000000Z-aaaaaa", None, "c0" * 20),
            archived(tmp_path, "20261102T000000Z-bbbbbb", first, "c1" * 20),
            archived(tmp_path, "20261103T000000Z-cccccc", first, "c2" * 20),
            archived(tmp_path, "20261104T000000Z-dddddd", second, "c3" * 20)]
    rows = history(second, reversed(runs))
    assert [r["run_id"] for r in rows] == [p.name for p in runs]
    assert rows[0]["changed"] == [] and rows[2]["changed"] == []
    assert rows[1]["changed"] == [
        "(made before claims were registered: no registration archived)"]
    assert rows[3]["changed"] == ["a: region '1..3x' -> '1.5..3x'"]
    assert rows[3]["commit"] == "c3c3c3c3c3c3"
    now = Registration("s9", (claim("a", low=2.0),), {"reps": 10})
    rows = history(now, runs)
    assert rows[-1]["run_id"] == "(the code now)"
    assert rows[-1]["changed"] == ["a: region '1.5..3x' -> '2..3x'"]


def test_a_run_that_stopped_before_registering_is_no_change_and_a_copy_is_one_run(tmp_path):
    """An S4 run refused at the machine lock (incomplete, no registration.json) had read as
    '(no registration)' and then '(made before claims were registered)' between two runs
    registered alike; the reference run, found both in the archive and in data/reference/,
    was listed twice."""
    reg = Registration("s9", (claim("a"),), {"reps": 10})
    (tmp_path / "archive").mkdir()
    (tmp_path / "reference").mkdir()
    ref = archived(tmp_path / "archive", "20261101T000000Z-aaaaaa", reg, "c1" * 20, "complete")
    copy = archived(tmp_path / "reference", ref.name, reg, "c1" * 20, "complete")
    refused = archived(tmp_path / "archive", "20261102T000000Z-bbbbbb", None, "c2" * 20,
                       "incomplete")
    later = archived(tmp_path / "archive", "20261103T000000Z-cccccc", reg, "c2" * 20,
                     "complete")
    rows = history(reg, [ref, refused, later, copy])
    assert [r["run_id"] for r in rows] == [ref.name, refused.name, later.name]
    assert [r["changed"] for r in rows] == [[], [], []]
    assert "stopped before it registered" in rows[1]["note"] and "note" not in rows[2]
    # a complete run without a registration predates it: that stays a change
    old = archived(tmp_path, "20261031T000000Z-000000", None, "c0" * 20, "complete")
    rows = history(reg, [old, ref])
    assert rows[1]["changed"] == [
        "(made before claims were registered: no registration archived)"]


def test_a_study_without_a_registration_file_is_refused_naming_the_fix():
    """Issue 33 item 1: claims are data; a study registers through its file or not at all
    (the fallback that read CLAIMS, DESIGN and CHANGES from a module is gone)."""
    from harness.studies import Parameters, Study

    class NoFile(Study):
        title = "no registration file"
        Params = Parameters

        def topology(self, params): ...
        def requirements(self, params): ...
        def measure(self, session, bed, params, configured): ...
        def claims(self, data): ...
        def figures(self, data): ...

    NoFile.name = "s9-no-file"
    with pytest.raises(SpecError, match="names no registration file") as info:
        NoFile().registration()
    assert "registration_file" in str(info.value) and "adding-a-study" in str(info.value)


def test_claims_history_command_lists_a_refused_run_with_a_note_not_a_change(data_root, capsys):
    """`harness claims history` on an archive as it was on 2026-11-27: a registered run, one
    refused at the machine lock before it registered, and a registered run after it."""
    from argparse import Namespace

    from harness.archive.archive import COMPLETE, INCOMPLETE, Run
    from harness.commands.claims import cmd_claims_history
    from harness.studies import study_for

    notebook = ROOT / "tests" / "studies" / "ping_study.ipynb"
    study = study_for(str(notebook))

    def run(registered: bool, status: str) -> Run:
        made = Run.create(study.name, {"count": 5}, data_root, notebook=str(notebook))
        made.update(provenance={"git": {"commit": "c0ffee" * 6}})
        if registered:
            made.add_json("registration.json", study.registration().to_dict())
        made.finish(status, None if status == COMPLETE else "machine busy")
        return made

    runs = [run(True, COMPLETE), run(False, INCOMPLETE), run(True, COMPLETE)]
    assert cmd_claims_history(Namespace(study=str(notebook), verbose=False)) == 0
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines() if line[:1].isdigit()]
    assert sorted(listed) == sorted(r.path.name for r in runs)  # each once (same-second ids)
    assert "changed:" not in out and out.count("note: incomplete: stopped before") == 1


def test_a_change_of_gates_alone_is_a_difference_a_report_shows():
    """S1's first review's change added the TCG gate to three claims and nothing else: a
    registration that differs only in a claim's gates differs in words, claim by claim."""
    from dataclasses import replace

    from harness.verdicts.gates.registry import Gate

    plain = claim("a")
    gated = replace(plain, gates=(Gate("no_oversubscription"), Gate("accelerated_virtualisation")))
    tuned = replace(plain, gates=(Gate("no_oversubscription", {"vcpus_per_vm": 1}),
                                  Gate("accelerated_virtualisation")))
    old, new = (Registration("s9", (c,), {}).to_dict() for c in (plain, gated))
    assert claim_differences(old, new) == [
        "a: gates [] -> [no_oversubscription, accelerated_virtualisation]"]
    assert claim_differences(new, Registration("s9", (tuned,), {}).to_dict()) == [
        "a: gates [no_oversubscription, accelerated_virtualisation] -> [no_oversubscription, "
        "accelerated_virtualisation] (their parameters changed)"]
    assert claim_differences(new, new) == []
