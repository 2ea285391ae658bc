"""harness.run.execute: parameters checked against the notebook and the study before any run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import SpecError
from harness.run.execute import check_parameters, notebook_defaults, parse_value
from harness.studies.s4.study import S4

ROOT = Path(__file__).resolve().parents[2]
S4_NOTEBOOK = ROOT / "notebooks" / "s4_mptcp.ipynb"


@pytest.mark.parametrize("text, value", [
    ("10", 10), ("0.5", 0.5), ("true", True), ("1-10", "1-10"), ("1,2,4", "1,2,4"),
    ("[1, 2]", [1, 2]), ("", None), ("{a: 1", "{a: 1"),
])
def test_command_line_values_are_read_as_yaml(text, value):
    assert parse_value(text) == value


def test_notebook_defaults_are_python_values():
    defaults = notebook_defaults(S4_NOTEBOOK)
    assert defaults["profile"] == "quick" and defaults["streams"] is None
    assert defaults["path_rate_mbit"] == 500.0 and defaults["gridftp"] is True
    assert defaults["run_dir"] == "" and defaults["inventory"] == ""


def test_parameters_resolve_through_the_notebooks_study():
    study, params = check_parameters(S4_NOTEBOOK, {"streams": "1,10", "profile": "paper"})
    assert isinstance(study, S4)
    assert params.streams == (1, 10) and params.repetitions == 3


@pytest.mark.parametrize("given, message", [
    ({"streamz": 4}, "unknown parameter.*streamz"),
    ({"run_dir": "/tmp/x"}, "run_dir is set by `harness run`"),
    ({"streams": 0}, "streams has 0, out of range|streams=0 is out of range"),
    ({"inventory": "/no/such/inventory.yaml"}, "does not exist"),
])
def test_bad_parameters_are_refused(given, message):
    with pytest.raises(SpecError, match=message):
        check_parameters(S4_NOTEBOOK, given)


def test_a_notebook_that_declares_what_its_study_does_not_know_is_refused(tmp_path):
    nb = json.loads(S4_NOTEBOOK.read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    cell["source"] = "".join(cell["source"]) + "\nstreamss = None\n"
    path = tmp_path / "s4_typo.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(SpecError, match="declares parameter.*streamss.*does not know"):
        check_parameters(path, {})


def test_a_missing_notebook_is_refused(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        check_parameters(tmp_path / "none.ipynb", {})

