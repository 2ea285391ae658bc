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


def test_a_run_on_machines_is_rerun_only_on_an_inventory_named_on_the_command_line(
        data_root, tmp_path):
    """run.json's inventory path is never used: a crafted one could name an inventory that
    reconfigures this machine's own network card (issue 37)."""
    import yaml

    def inventory(name: str) -> str:
        path = tmp_path / name
        path.write_text(yaml.safe_dump({"nodes": {
            node: {"host": f"{node}.example.org",
                   "interfaces": {"eth0": {"device": "ens3", "address": f"192.0.2.{i}/24"}}}
            for i, node in enumerate(("a", "b"), 1)}}))
        return str(path)

    crafted = inventory("crafted.yaml")  # a file that exists: today's code used it
    original = make_run(data_root, {"count": 5, "inventory": crafted})
    with pytest.raises(SpecError, match=r"ran on the machines of an inventory \(its run.json "
                                        f"says '{crafted}'\\)") as err:
        plan(original)
    assert f"harness rerun {original.run_id} --inventory FILE" in err.value.hint
    mine = inventory("mine.yaml")
    assert plan(original, inventory=mine).parameters["inventory"] == mine
    here = make_run(data_root, {"count": 5})
    assert "inventory" not in plan(here).parameters
    assert any("the rerun runs on the machines of" in w for w in
               plan(here, inventory=mine).warnings)
    with pytest.raises(SpecError, match="does not run inside a Slurm allocation"):
        plan(original, inventory="slurm")


def test_a_rerun_is_archived_under_the_users_own_data_folder(data_root, tmp_path, monkeypatch):
    """Not beside the original: a run folder from elsewhere (/tmp/share/runs/s4/X) sits in
    folders another user may change, and root would create the new run there."""
    from harness.run.rerun import rerun

    shared = tmp_path / "share"
    original = make_run(shared, {"count": 5})
    seen = {}

    def fake_run(notebook, parameters, root=None, progress=False, note=None):
        seen["root"] = root
        raise SpecError("stop here")

    monkeypatch.setattr("harness.run.execute.run_notebook", fake_run)
    with pytest.raises(SpecError, match="stop here"):
        rerun(original, warn=lambda _text: None)
    from harness.archive.archive import runs_root

    assert runs_root(seen["root"]) == data_root / "runs"
