"""``harness export RUN... --crate OUT``: archived runs as one RO-Crate a researcher can deposit.

The crate follows the Process Run Crate profile (0.5) of the Workflow Run RO-Crate family:
"this command, with these inputs, made these outputs". Each run becomes

- a ``Dataset`` ``<study>/<run-id>/`` holding a copy of every regular file of its folder
  (notebook, report, results and claims tables, registration, journal, raw tool outputs), each
  a ``File`` with its format (:data:`FORMATS`); a symlink is never followed, nothing else of
  the machine is read;
- one ``CreateAction``: its ``instrument`` the harness (a ``SoftwareApplication`` with its
  version and git commit, its ``softwareRequirements`` every package and tool version of
  run.json), its ``object`` the parameters (``PropertyValue``) and the study's notebook, its
  ``result`` the run's files, its start and end times and status, its ``description`` the
  claims table's summary, its ``location`` the machine and testbed as run.json records them;
- the study's seed paper (title, authors, year, as the study's ``Citation`` gives them) as the
  ``citation`` of the run's dataset and of the crate.

Built with the ``rocrate`` library (:func:`build`); :func:`export` writes it as a folder or,
for an ``OUT`` ending ``.zip``, a zip file, created exclusively: an existing ``OUT`` is one
error, nothing written. A file holding a private key refuses the export before anything is
written (run folders never hold one; a file someone put there would be deposited).
Nothing archived is changed: the run folders are only read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import SpecError
from .archive import RUN_FILE, Run, refuse_existing

#: Process Run Crate 0.5 is a profile of RO-Crate 1.1 (the metadata file conforms to 1.1)
RO_CRATE_VERSION = "1.1"
PROCESS_RUN_CRATE = "https://w3id.org/ro/wfrun/process/0.5"
HARNESS_ID = "#harness"
METADATA_FILE = "ro-crate-metadata.json"

#: a file's format (MIME type) by its suffix; anything else is text/plain (raw tool outputs)
FORMATS = {
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".csv": "text/csv",
    ".parquet": "application/vnd.apache.parquet",
    ".ipynb": "application/x-ipynb+json",
    ".html": "text/html",
    ".md": "text/markdown",
    ".toml": "application/toml",
    ".yaml": "application/yaml",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".pcap": "application/vnd.tcpdump.pcap",
}
#: what a known file of a run folder is (docs/reference/run-folder.md)
DESCRIPTIONS = {
    RUN_FILE: "the run's record: status, parameters, provenance, capabilities, placement, "
              "topology, link verification, configuration changes, times",
    "journal.jsonl": "every change made to any machine, and its undo, in order",
    "results.csv": "the tidy results table",
    "results.parquet": "the tidy results table (typed)",
    "claims.csv": "one row per claim: the paper's value, acceptance region, ours with its "
                  "interval, outcome and reason",
    "claims.parquet": "the claims table (typed)",
    "registration.json": "the study's registered claims as the run was made with them",
    "notebook.ipynb": "the executed study notebook, code included",
    "report.html": "the rendered report: figures, the paper's numbers beside ours, verdicts",
    "report.md": "the pooled reference's report",
}
#: what refuses an export: a private key in any file (none is ever archived; one put in a
#: run folder by hand would be deposited with it)
SECRET = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
#: the crate's license when none is given: Zenodo's default for a deposit (the depositor may
#: choose another, as an SPDX identifier)
DEFAULT_LICENSE = "CC-BY-4.0"
SPDX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+-]*$")


@dataclass(frozen=True)
class Exported:
    """What :func:`export` wrote: the crate and the runs in it."""

    path: Path
    runs: list[str]
    files: int


def encoding_format(path: Path) -> str:
    return FORMATS.get(path.suffix.lower(), "text/plain")


def run_files(folder: Path) -> list[Path]:
    """Every regular file under a run folder, relative to it, sorted; symlinks, FIFOs and
    devices are left out (never followed, never opened)."""
    found = []
    for dirpath, dirs, files in os.walk(folder):  # os.walk does not enter linked folders
        dirs.sort()
        for name in sorted(files):
            path = Path(dirpath) / name
            if stat.S_ISREG(os.lstat(path).st_mode) and not name.startswith("."):
                found.append(path.relative_to(folder))
    return found


def check_secrets(folder: Path, files: list[Path]) -> None:
    for rel in files:
        with open(folder / rel, "rb") as fh:
            if SECRET.search(fh.read()):
                raise SpecError(f"{folder / rel} holds a private key: it is not exported",
                                "a run folder never holds one; remove the file from the run "
                                "folder (it is no part of the run) and export again")


def check_target(out: Path) -> None:
    refuse_existing(out, "a crate", "give a new path with --crate (a folder, or a name ending .zip)")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-") or "x"


def _value(value):
    """A parameter's value as JSON-LD takes it: text, number or boolean."""
    if isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _one(values: list):
    """A single value as itself, more as a list (RO-Crate 1.1 recommends no singleton arrays)."""
    return values[0] if len(values) == 1 else values


def _software(crate, name: str, version) -> object:
    from rocrate.model import ContextEntity

    version = "" if version is None else str(version)
    ident = f"#software-{_slug(name)}-{_slug(version)}" if version else f"#software-{_slug(name)}"
    found = crate.dereference(ident)
    if found is None:
        props = {"@type": "SoftwareApplication", "name": name}
        if version:
            props["softwareVersion"] = version
        found = crate.add(ContextEntity(crate, ident, properties=props))
    return found


def software_versions(meta: dict) -> list[tuple[str, str]]:
    """(name, version) of every package and tool run.json records, Python first."""
    prov = meta.get("provenance") or {}
    found = [("Python", prov["python"])] if prov.get("python") else []
    found += [(name, version) for name, version in sorted((prov.get("packages") or {}).items())
              if version and name != "harness"]
    for caps in (meta.get("capabilities") or {}).values():
        for tool, version in sorted((caps.get("tools") or {}).items()):
            if version:
                found.append((tool, " ".join(str(version).split())))
    return list(dict.fromkeys(found))


def _harness(crate, meta: dict):
    """The harness as the instrument, with the version and commit the run was made with."""
    from rocrate.model import ContextEntity

    prov = meta.get("provenance") or {}
    git = prov.get("git") or {}
    version = (prov.get("packages") or {}).get("harness") or ""
    commit = git.get("commit") or ""
    ident = f"{HARNESS_ID}-{_slug(version)}-{commit[:12] or 'unknown'}"
    found = crate.dereference(ident)
    if found is not None:
        return found
    props = {"@type": "SoftwareApplication", "name": "harness",
             "description": "re-runs classic cluster/grid communication studies in network "
                            "namespaces, VMs or on real machines, with full provenance"}
    if version:
        props["softwareVersion"] = version + (f" (git {commit}" + (", with uncommitted changes)"
                                                                   if git.get("dirty") else ")")
                                              if commit else "")
    if commit:
        props["identifier"] = f"git:{commit}"
    app = crate.add(ContextEntity(crate, ident, properties=props))
    app["softwareRequirements"] = [_software(crate, n, v) for n, v in software_versions(meta)]
    return app


def _paper(crate, study):
    """The study's seed paper as a ScholarlyArticle (None for a study without one)."""
    from rocrate.model import ContextEntity

    cite = getattr(study, "citation", None)
    if cite is None:
        return None
    ident = f"#paper-{_slug(study.name)}"
    found = crate.dereference(ident)
    if found is not None:
        return found
    authors = []
    for k, name in enumerate(a.strip() for a in re.split(r",| and ", cite.authors) if a.strip()):
        authors.append(crate.add(ContextEntity(crate, f"{ident}-author-{k + 1}",
                                               properties={"@type": "Person", "name": name})))
    props = {"@type": "ScholarlyArticle", "name": cite.title, "datePublished": str(cite.year),
             "description": cite.text(), "publisher": cite.venue}
    paper = crate.add(ContextEntity(crate, ident, properties=props))
    paper["author"] = _one(authors)
    return paper


def _machine(crate, run_id: str, meta: dict):
    """The machine and testbed as run.json describes them: one entity, its facts as
    ``PropertyValue``s (controller, each node's kernel, placement, testbed kind)."""
    from rocrate.model import ContextEntity

    prov = meta.get("provenance") or {}
    facts: dict[str, object] = {}
    for key, value in (prov.get("controller") or {}).items():
        facts[f"controller {key}"] = value
    place = meta.get("placement") or {}
    for key in ("where", "machines", "reason"):
        if place.get(key) not in (None, ""):
            facts[f"placement {key}"] = place[key]
    vm = place.get("vm") or {}
    for key in ("accel", "cpus"):
        if vm.get(key) not in (None, ""):
            facts[f"vm {key}"] = vm[key]
    for node, caps in sorted((meta.get("capabilities") or {}).items()):
        for key in ("kernel", "congestion_default"):
            if caps.get(key):
                facts[f"node {node} {key}"] = caps[key]
        have = sorted(f for f, ok in (caps.get("features") or {}).items() if ok)
        if have:
            facts[f"node {node} kernel features"] = ", ".join(have)
    testbed = meta.get("testbed") or {}
    if testbed.get("kind"):
        facts["testbed kind"] = testbed["kind"]
    if testbed.get("nodes"):
        facts["testbed nodes"] = ", ".join(sorted(testbed["nodes"]))
    ident = f"#machine-{run_id}"
    values = [crate.add(ContextEntity(crate, f"{ident}-{_slug(name)}",
                                      properties={"@type": "PropertyValue", "name": name,
                                                  "value": _value(value)}))
              for name, value in facts.items()]
    where = place.get("where") or "the machine"
    host = (prov.get("controller") or {}).get("hostname") or "?"
    place_entity = crate.add(ContextEntity(crate, ident, properties={
        "@type": "Place", "name": f"{where} on {host}",
        "description": "the machine and testbed the run measured on, as its run.json records them"}))
    place_entity["additionalProperty"] = values
    return place_entity


def claims_summary(folder: Path) -> str:
    path = folder / "claims.csv"
    if not path.is_file():
        return "no claims table (the run did not finish its analysis)"
    import pandas as pd

    from ..verdicts.claims import summaries

    return summaries(pd.read_csv(path))


def add_run(crate, run: Run, files: list[Path]) -> object:
    """One run: its files, its action, its paper. Returns the run's Dataset."""
    from rocrate.model import ContextEntity

    from ..studies import study_for

    meta = run.meta
    study_name = str(meta.get("study") or run.path.parent.name)
    run_id = str(meta.get("run_id") or run.run_id)
    try:
        study = study_for(study_name)
    except Exception:  # noqa: BLE001 -- a study this checkout lacks: exported without its paper
        study = None
    base = f"{_slug(study_name)}/{_slug(run_id)}/"
    title = getattr(study, "title", "") or study_name
    summary = claims_summary(run.path)
    dataset = crate.add_dataset(dest_path=base, properties={
        "name": f"{study_name} run {run_id}", "description": f"{title}: {summary}"})
    folders: dict[str, object] = {}
    parts = []
    for rel in files:
        props = {"name": rel.name, "encodingFormat": encoding_format(rel),
                 "contentSize": str((run.path / rel).stat().st_size)}
        if rel.as_posix() in DESCRIPTIONS:
            props["description"] = DESCRIPTIONS[rel.as_posix()]
        elif rel.parts[0] == "raw":
            props["description"] = "a tool's output as it came"
        if rel.name == "claims.csv":
            props["description"] = f"{DESCRIPTIONS['claims.csv']}; outcomes: {summary}"
        entity = crate.add_file(run.path / rel, dest_path=base + rel.as_posix(), properties=props)
        parts.append(entity)
        if len(rel.parts) > 1:
            key = rel.parent.as_posix()
            if key not in folders:
                folders[key] = crate.add_dataset(dest_path=f"{base}{key}/", properties={
                    "name": key, "description": "tool outputs as they came" if key == "raw"
                    else f"the run's {key} folder"})
                dataset.append_to("hasPart", folders[key])
            folders[key].append_to("hasPart", entity)
        else:
            dataset.append_to("hasPart", entity)
    paper = _paper(crate, study) if study is not None else None
    if paper is not None:
        dataset["citation"] = paper
    values = [crate.add(ContextEntity(crate, f"#parameter-{run_id}-{_slug(name)}", properties={
        "@type": "PropertyValue", "name": str(name), "value": _value(value)}))
        for name, value in sorted((meta.get("parameters") or {}).items()) if value is not None]
    objects = list(values)
    notebook = meta.get("notebook")
    if notebook:
        digest = (meta.get("code_digests") or {}).get(notebook)
        props = {"@type": "SoftwareSourceCode", "name": Path(str(notebook)).name,
                 "description": f"the study notebook as the project holds it ({notebook})",
                 "programmingLanguage": "Python"}
        if digest:
            props["sha256"] = str(digest).removeprefix("sha256:")
        objects.append(crate.add(ContextEntity(crate, f"#notebook-{run_id}", properties=props)))
    status = meta.get("status")
    props = {"@type": "CreateAction", "name": f"harness run of {study_name} ({run_id})",
             "description": f"{title}; claims: {summary}",
             "actionStatus": "http://schema.org/CompletedActionStatus" if status == "complete"
             else "http://schema.org/FailedActionStatus"}
    if meta.get("started"):
        props["startTime"] = meta["started"]
    if meta.get("ended") or meta.get("created"):
        props["endTime"] = meta.get("ended") or meta.get("created")
    if meta.get("error"):
        props["error"] = str(meta["error"])
    action = crate.add_action(_harness(crate, meta), identifier=f"#run-{run_id}",
                              object=objects, result=[dataset, *parts], properties=props)
    action["location"] = _machine(crate, run_id, meta)
    return dataset


def _license(crate, spdx: str):
    from rocrate.model import ContextEntity

    if not SPDX.match(spdx):
        raise SpecError(f"license {spdx!r} is not an SPDX identifier",
                        "give one as https://spdx.org/licenses/ lists it, e.g. CC-BY-4.0 or CC0-1.0")
    return crate.add(ContextEntity(crate, f"https://spdx.org/licenses/{spdx}", properties={
        "@type": "CreativeWork", "name": spdx, "identifier": spdx,
        "description": f"the license the depositor gives the crate's files: SPDX {spdx}"}))


def build(runs: list[Run], license: str = DEFAULT_LICENSE):
    """The crate of ``runs`` (the rocrate library's object, not yet written)."""
    from rocrate.model import ContextEntity
    from rocrate.rocrate import ROCrate

    listed = []
    for run in runs:
        files = run_files(run.path)
        if RUN_FILE not in {f.as_posix() for f in files}:
            raise SpecError(f"{run.path}: its {RUN_FILE} is not a regular file",
                            "export run folders archived by harness")
        check_secrets(run.path, files)
        listed.append((run, files))
    crate = ROCrate(version=RO_CRATE_VERSION)
    crate.license = _license(crate, license)
    profile = crate.add(ContextEntity(crate, PROCESS_RUN_CRATE, properties={
        "@type": "CreativeWork", "name": "Process Run Crate", "version": "0.5"}))
    crate.root_dataset["conformsTo"] = profile
    datasets = [add_run(crate, run, files) for run, files in listed]
    crate.root_dataset["mentions"] = _one(crate.get_by_type("CreateAction"))
    metas = [run.meta for run, _ in listed]
    studies = sorted({str(m.get("study")) for m in metas})
    crate.name = (f"{studies[0]} run {metas[0].get('run_id') or runs[0].run_id}" if len(runs) == 1
                  else f"{len(runs)} harness runs of {', '.join(studies)}")
    crate.description = ("Runs archived by harness, each with its full provenance: "
                         + "; ".join(f"{d['name']}: {d['description']}" for d in datasets))
    crate.datePublished = datetime.now(UTC).isoformat(timespec="seconds")
    crate.root_dataset["hasPart"] = datasets + [p for p in crate.root_dataset.get("hasPart") or []
                                                if p not in datasets]
    papers = [d["citation"] for d in datasets if d.get("citation") is not None]
    if papers:
        crate.root_dataset["citation"] = _one(list({p.id: p for p in papers}.values()))
    return crate


def export(runs: list[Run], out: Path, license: str = DEFAULT_LICENSE) -> Exported:
    """Write the crate of ``runs`` to ``out`` (a folder; a zip for a name ending ``.zip``)."""
    if not runs:
        raise SpecError("export needs at least one run", "harness export RUN... --crate OUT")
    ids = [r.path.resolve() for r in runs]
    if len(set(ids)) != len(ids):
        raise SpecError("a run is given twice", "give each run once")
    out = Path(out)
    check_target(out)
    crate = build(runs, license)
    files = sum(1 for e in crate.data_entities if e.type == "File")
    if out.suffix.lower() == ".zip":
        try:
            with open(out, "xb") as fh:
                try:
                    for chunk in crate.stream_zip():
                        fh.write(chunk)
                except BaseException:
                    out.unlink(missing_ok=True)  # the file this call created, half-written
                    raise
        except FileExistsError:
            raise SpecError(f"{out} exists already: a crate is never written over anything",
                            "give a new path with --crate") from None
    else:
        try:
            out.mkdir()
        except FileExistsError:
            raise SpecError(f"{out} exists already: a crate is never written over anything",
                            "give a new path with --crate") from None
        try:
            crate.write(out)
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)  # the folder this call created
            raise
    return Exported(out, [str(r.meta.get("run_id") or r.run_id) for r in runs], files)
