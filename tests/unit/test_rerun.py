"""`harness rerun`: the original's notebook and parameters, with warnings where this machine
differs; `harness run -f`: parameters from a YAML file, -p over it."""

from __future__ import annotations

import platform

import pytest

from harness.archive.archive import project_root
from harness.archive.provenance import git_state
from harness.errors import SpecError
from harness.run.execute import check_parameters, parameters_file
from harness.run.rerun import placement_warning, plan
from harness.studies import study_of_notebook
from unit.archived import NOTEBOOK, fingerprint, make_run


def test_rerun_plans_the_same_notebook_and_parameters(data_root):
    study = study_of_notebook(NOTEBOOK)
    params = study.parameters(profile="quick", count=7, interval_s=0.05)
    original = make_run(data_root, params.to_dict(), commit=git_state(project_root())["commit"])
    before = fingerprint(data_root)
    todo = plan(original)
    assert fingerprint(data_root) == before  # the original is only read
    assert todo.notebook == NOTEBOOK
    _study, again = check_parameters(todo.notebook, todo.parameters)
    assert again == params
    assert not [w for w in todo.warnings if w.startswith("code differs")]


def test_rerun_warns_when_commit_and_kernel_differ(data_root):
    original = make_run(data_root, {"count": 5}, commit="0" * 40)
    warnings = plan(original).warnings
    assert any(f"commit {'0' * 40}" in w for w in warnings)
    if platform.release() != "6.1.0-test":
        assert any("kernel differs: the original ran on 6.1.0-test" in w for w in warnings)


def test_rerun_warns_when_the_placement_moved(data_root):
    original = make_run(data_root, {"count": 5})
    moved = make_run(data_root, {"count": 5})
    assert placement_warning(original, moved) is None
    from harness.archive.archive import Run

    other = Run.create("ping-demo", {"count": 5}, data_root)
    other.update(placement={"where": "vm", "scaling": {"factor": 0.25}})
    assert "the original ran on host (rate factor None), the rerun on vm (rate factor 0.25)" \
        in placement_warning(original, other)


def test_a_run_without_a_notebook_cannot_be_rerun(data_root):
    original = make_run(data_root, {"count": 5}, notebook=None)
    with pytest.raises(SpecError, match="names no notebook"):
        plan(original)


def test_parameters_file_is_read_and_p_overrides_it(tmp_path, data_root, monkeypatch):
    from harness import cli

    seen = {}

    def fake_run(notebook, params, progress):  # the real checks, then stop before running
        seen.update(params)
        check_parameters(NOTEBOOK, params)
        raise SpecError("stop here")

    monkeypatch.setattr("harness.run.execute.run_notebook", fake_run)
    path = tmp_path / "params.yaml"
    path.write_text("count: 9\ninterval_s: 0.05\n")
    assert cli.main(["run", str(NOTEBOOK), "-f", str(path), "-p", "count", "11"]) == 2
    assert seen == {"count": 11, "interval_s": 0.05}


@pytest.mark.parametrize("text, message", [
    ("- 1\n- 2\n", "must be a mapping"),
    ("count: [1\n", "not valid YAML"),
])
def test_a_bad_parameters_file_is_refused_with_how_to_fix_it(tmp_path, text, message):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=message):
        parameters_file(path)
    with pytest.raises(SpecError, match="does not exist"):
        parameters_file(tmp_path / "missing.yaml")
