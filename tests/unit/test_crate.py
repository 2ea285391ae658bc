"""``harness export --crate``: real archived runs (the committed references of every study) as
RO-Crates that roc-validator passes at the profile they claim, re-opened by compare and
claims, never written over, never carrying a private key; nothing archived changes."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest
from crate_validation import validate

from harness.archive.archive import Run
from harness.archive.crate import PROCESS_RUN_CRATE, export
from harness.cli import main
from harness.errors import SpecError
from harness.studies import study_for

REFERENCES = sorted(p.parent for p in (Path(__file__).resolve().parents[2] / "data" / "reference")
                    .glob("*/*/run.json"))


def _single_runs() -> list[Path]:
    """Each committed reference that is one run, and the first member of each pooled one."""
    from harness.verdicts.pool import POOLED, member_paths

    out = []
    for ref in REFERENCES:
        pooled = json.loads((ref / "run.json").read_text()).get("kind") == POOLED
        out.append(member_paths(ref)[0] if pooled else ref)
    return out


SINGLE_RUNS = _single_runs()


def tree_digest(folder: Path) -> str:
    """Every file's path, mode and content under ``folder``: any change to it changes this."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        h.update(f"{path.relative_to(folder)} {path.lstat().st_mode}".encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def graph(crate: Path) -> dict[str, dict]:
    return {e["@id"]: e for e in json.loads((crate / "ro-crate-metadata.json").read_text())["@graph"]}


def ids(value) -> list[str]:
    return [v["@id"] for v in (value if isinstance(value, list) else [value])]


def test_every_study_has_a_reference_to_export():
    assert {p.parent.name for p in REFERENCES} == {"s0", "s1", "s2", "s3", "s4"}


@pytest.mark.parametrize("run", SINGLE_RUNS, ids=lambda p: f"{p.parts[-3] if p.parent.name == 'members' else p.parent.name}/{p.name}")
def test_a_reference_run_exports_as_a_process_run_crate_the_validator_passes(run, tmp_path, monkeypatch):
    before = tree_digest(run)
    out = tmp_path / "crate"
    done = export([Run(run)], out)

    assert validate(out, monkeypatch) == []
    assert tree_digest(run) == before  # nothing archived changed
    meta = json.loads((run / "run.json").read_text())
    g = graph(out)
    root = g["./"]
    assert ids(root["conformsTo"]) == [PROCESS_RUN_CRATE]
    folder = f"{meta['study']}/{meta['run_id']}/"
    # every regular file of the run folder is in the crate, byte for byte, with its format
    files = sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file())
    assert done.files == len(files)
    for rel in files:
        entity = g[folder + rel]
        assert entity["@type"] == "File" and entity["encodingFormat"]
        assert (out / folder / rel).read_bytes() == (run / rel).read_bytes()
    assert g[folder + "claims.csv"]["encodingFormat"] == "text/csv"
    assert g[folder + "notebook.ipynb"]["encodingFormat"] == "application/x-ipynb+json"
    # the action: the harness at its commit, the parameters, the times, the outcome summary
    (action,) = [e for e in g.values() if e["@type"] == "CreateAction"]
    harness = g[action["instrument"]["@id"]]
    assert harness["identifier"] == "git:" + meta["provenance"]["git"]["commit"]
    required = {g[i]["name"]: g[i].get("softwareVersion") for i in ids(harness["softwareRequirements"])}
    assert required["pandas"] == meta["provenance"]["packages"]["pandas"]
    assert required["Python"] == meta["provenance"]["python"]
    params = {g[i]["name"]: g[i]["value"] for i in ids(action["object"]) if g[i]["@type"] == "PropertyValue"}
    assert params["repetitions"] == meta["parameters"]["repetitions"]
    assert action["startTime"] == meta["started"] and action["endTime"] == meta["ended"]
    assert folder in ids(action["result"])
    import pandas as pd

    from harness.verdicts.claims import summaries

    assert summaries(pd.read_csv(run / "claims.csv")) in action["description"]
    machine = g[action["location"]["@id"]]
    facts = {g[i]["name"]: g[i]["value"] for i in ids(machine["additionalProperty"])}
    assert facts["placement where"] == meta["placement"]["where"]
    # the seed paper as the run's citation
    cite = study_for(meta["study"]).citation
    paper = g[g[folder]["citation"]["@id"] if isinstance(g[folder]["citation"], dict)
              else g[folder]["citation"][0]["@id"]]
    assert paper["name"] == cite.title and paper["datePublished"] == str(cite.year)
    assert [g[i]["name"] for i in ids(paper["author"])][0] in cite.authors


def test_a_zipped_crate_reopens_for_compare_and_claims_read_only(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    monkeypatch.setenv("HARNESS_DATA", str(data))
    s4 = next(p for p in REFERENCES if p.parent.name == "s4")
    crate = tmp_path / "s4.zip"
    assert main(["export", str(s4), "--crate", str(crate), "--license", "CC0-1.0"]) == 0
    assert "1 run(s)" in capsys.readouterr().out
    assert zipfile.is_zipfile(crate)
    digest = hashlib.sha256(crate.read_bytes()).hexdigest()
    unzipped = tmp_path / "unzipped"
    zipfile.ZipFile(crate).extractall(unzipped)
    assert validate(unzipped, monkeypatch) == []
    assert ids(graph(unzipped)["./"]["license"]) == ["https://spdx.org/licenses/CC0-1.0"]

    assert main(["compare", str(crate), str(s4)]) == 0
    out = capsys.readouterr().out
    assert "== parameters: 0 differ" in out and "== claims" in out
    assert main(["claims", "power", "--run", str(crate)]) == 0
    assert "s4.tcp_peak@cpu0.01" in capsys.readouterr().out
    # a run named inside the zip, as inside a folder crate
    inside = f"{crate}/s4/{s4.name}"
    assert main(["compare", inside, str(unzipped / "s4" / s4.name)]) == 0
    assert hashlib.sha256(crate.read_bytes()).hexdigest() == digest  # the crate is only read


def test_a_crate_of_several_runs_asks_which_one(tmp_path, capsys):
    runs = [Run(p) for p in REFERENCES[:2]]
    export(runs, tmp_path / "two")
    with pytest.raises(SpecError, match="holds 2 runs"):
        from harness.archive.runref import resolve_run

        resolve_run(str(tmp_path / "two"))


def test_an_existing_target_is_never_written_over(tmp_path, capsys):
    run = str(REFERENCES[0])
    for out in (tmp_path / "taken", tmp_path / "taken.zip"):
        out.mkdir() if out.suffix != ".zip" else out.write_text("someone's zip")
        before = tree_digest(tmp_path)
        assert main(["export", run, "--crate", str(out)]) == 2
        assert "exists already" in capsys.readouterr().err
        assert tree_digest(tmp_path) == before


def test_a_private_key_in_a_run_folder_refuses_the_export_before_anything_is_written(tmp_path):
    run = tmp_path / "runs" / "s0" / REFERENCES[0].name
    shutil.copytree(REFERENCES[0], run)
    (run / "raw" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n"
                                            "-----END OPENSSH PRIVATE KEY-----\n")
    with pytest.raises(SpecError, match="holds a private key"):
        export([Run(run)], tmp_path / "crate")
    assert not (tmp_path / "crate").exists()


def test_a_symlink_in_a_run_folder_is_not_followed(tmp_path):
    run = tmp_path / "runs" / "s0" / REFERENCES[0].name
    shutil.copytree(REFERENCES[0], run)
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("not the run's")
    (run / "raw" / "link.txt").symlink_to(secret)
    export([Run(run)], tmp_path / "crate")
    assert not list((tmp_path / "crate").rglob("link.txt"))
    assert "not the run's" not in (tmp_path / "crate" / "ro-crate-metadata.json").read_text()


@pytest.mark.parametrize("pooled", [r for r, one in zip(REFERENCES, SINGLE_RUNS) if r != one],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_committed_pooled_reference_exports_with_its_members(pooled, tmp_path, monkeypatch):
    """A pooled reference's crate holds its pooled table, report and every member's files."""
    before = tree_digest(pooled)
    out = tmp_path / "crate"
    done = export([Run(pooled)], out)
    assert validate(out, monkeypatch) == []
    assert tree_digest(pooled) == before
    files = sorted(p.relative_to(pooled).as_posix() for p in pooled.rglob("*") if p.is_file())
    assert done.files == len(files) and any(f.startswith("members/") for f in files)
    folder = f"{pooled.parent.name}/{pooled.name}/"
    for rel in ("claims.csv", "report.md", *[f for f in files if f.endswith("/claims.csv")]):
        assert (out / folder / rel).read_bytes() == (pooled / rel).read_bytes()


def test_a_pooled_reference_exports_too(tmp_path, monkeypatch):
    """A pooled folder (harness claims pool) holds run.json of its own shape: no start, its
    creation time, its members; it exports and validates like a run."""
    s4 = next(p for p in REFERENCES if p.parent.name == "s4")
    pooled = tmp_path / "pooled" / "s4" / "20261128T000000Z-pool-abcdef"
    pooled.mkdir(parents=True)
    shutil.copy(s4 / "claims.csv", pooled)
    meta = json.loads((s4 / "run.json").read_text())
    (pooled / "run.json").write_text(json.dumps({
        "run_id": pooled.name, "study": "s4", "status": "complete", "kind": "pooled",
        "created": "2026-11-28T00:00:00+00:00", "registration": meta["registration"],
        "parameters": {**meta["parameters"], "repetitions": [10, 10]},
        "members": [{"run_id": s4.name, "path": str(s4)}, {"run_id": s4.name + "x", "path": str(s4)}]}))
    (pooled / "report.md").write_text("# pooled\n")
    out = tmp_path / "crate"
    export([Run(pooled)], out)
    assert validate(out, monkeypatch) == []
    g = graph(out)
    (action,) = [e for e in g.values() if e["@type"] == "CreateAction"]
    assert action["endTime"] == "2026-11-28T00:00:00+00:00" and "startTime" not in action
    assert g[f"s4/{pooled.name}/report.md"]["encodingFormat"] == "text/markdown"
