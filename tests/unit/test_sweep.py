"""Sweep files (harness batch): points and refusals."""

import pytest

from harness.errors import SpecError
from harness.run.sweep import Sweep, _same


def test_sweep_points_are_the_cartesian_product(tmp_path):
    nb = tmp_path / "n.ipynb"
    nb.write_text("{}")
    f = tmp_path / "s.yaml"
    f.write_text("notebook: n.ipynb\nparameters: {profile: quick}\n"
                 "sweep: {sender_cpus: [0.0, 0.5], streams: ['1', '2']}\n")
    sweep = Sweep.load(f)
    assert sweep.notebook == nb.resolve()
    assert len(sweep.points()) == 4
    assert {"profile": "quick", "sender_cpus": 0.5, "streams": "2"} in sweep.points()


@pytest.mark.parametrize("text, message", [
    ("parameters: {}\n", "needs 'notebook:'"),
    ("notebook: n.ipynb\nsweep: {a: 1}\n", "non-empty list"),
    ("notebook: n.ipynb\nparameters: {a: 1}\nsweep: {a: [1]}\n", "both fixed and swept"),
    ("notebook: n.ipynb\nrepeat: 3\n", "unknown keys"),
    ("notebook: [", "not valid YAML"),
])
def test_malformed_sweeps(tmp_path, text, message):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    with pytest.raises(SpecError, match=message):
        Sweep.load(f)


def test_completed_point_matching_ignores_tuple_list_and_empty_values():
    assert _same({"streams": [1, 2], "inventory": None}, {"streams": (1, 2)})
    assert not _same({"streams": [1, 2]}, {"streams": (1, 3)})


def test_batch_resume_counts_a_run_its_notebook_made_outside_harness_run(data_root, tmp_path):
    from harness.run.sweep import run_sweep
    from harness.studies import study_of_notebook
    from unit.archived import NOTEBOOK, make_run

    study = study_of_notebook(NOTEBOOK)
    make_run(data_root, study.parameters(profile="quick", count=5).to_dict())  # notebook named
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"notebook: {NOTEBOOK}\nparameters: {{profile: quick}}\nsweep: {{count: [5]}}\n")
    assert run_sweep(sweep, progress=False) == [("skipped", {"profile": "quick", "count": 5}, None)]
