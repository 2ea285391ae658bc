"""Validate an exported RO-Crate with roc-validator (``rocrate_validator``), offline.

The validator resolves the crate's JSON-LD context over HTTP (to parse the metadata, and
to check the context is retrievable). The test suite runs without a network: the context
is served from the copy the ``rocrate`` library ships. That copy is RO-Crate 1.3's context,
served for the 1.1 URL the crate names (Process Run Crate 0.5 is a profile of RO-Crate 1.1):
1.3's context keeps every term of 1.1 with the same IRI and adds terms, so the crate's
metadata parses to the same graph. Any other URL the validator asks for is an issue, named.
Nothing else of the validator is changed: every check of the profile the crate claims runs.
Online, ``rocrate-validator validate -p process-run-crate-0.5 CRATE`` fetches the real 1.1
context (docs/how-to/sharing.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import requests

PROFILE = "process-run-crate-0.5"


def local_documents() -> dict[str, Path]:
    import rocrate

    context = Path(rocrate.__file__).parent / "data" / "ro-crate.jsonld"
    return {json.loads(context.read_text())["@id"]: context,
            "https://w3id.org/ro/crate/1.1/context": context}


def _served(url: str, asked: list[str]) -> requests.Response:
    asked.append(url)
    documents = local_documents()
    response = requests.Response()
    response.url = url
    if url.rstrip("/") in documents:
        response.status_code = 200
        response.headers["Content-Type"] = "application/ld+json"
        response._content = documents[url.rstrip("/")].read_bytes()
    else:
        response.status_code = 599  # the validator reports it as not retrievable
        response._content = b""
    return response


def validate(crate: Path, monkeypatch, severity: str = "REQUIRED", profile: str = PROFILE) -> list[str]:
    """Every issue roc-validator finds in ``crate`` at ``severity`` and above, as text
    ('SEVERITY check-id: message'); the URLs it asked for that were not served are issues too."""
    from rocrate_validator import models, services
    from rocrate_validator.utils.http import HttpRequester

    asked: list[str] = []
    monkeypatch.setattr(HttpRequester, "get", lambda self, url, *a, **k: _served(url, asked),
                        raising=False)
    settings = services.ValidationSettings(rocrate_uri=str(crate), profile_identifier=profile,
                                           requirement_severity=getattr(models.Severity, severity))
    result = services.validate(settings)
    issues = [f"{i.severity.name} {i.check.identifier}: {i.message}" for i in result.get_issues()]
    served = local_documents()
    issues += [f"asked for {url}, not served offline" for url in asked if url.rstrip("/") not in served]
    return issues


def assert_exports_valid(run_dir: Path, out: Path, monkeypatch) -> None:
    """``harness export`` of a study's run: the crate roc-validator passes at its profile, and
    the run re-opens from it (what a quick run of every study's integration test checks)."""
    from harness.archive.archive import Run
    from harness.archive.crate import export
    from harness.archive.runref import resolve_run

    export([Run(run_dir)], out)
    assert validate(out, monkeypatch) == []
    reopened = resolve_run(str(out))
    assert (reopened.path / "run.json").read_bytes() == (run_dir / "run.json").read_bytes()
