"""Studies, their notebooks and their tools are found by the harness, never listed by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import CapabilityMissing, SpecError
from harness.lab.probe import Capabilities, require
from harness.run.execute import HARNESS_PARAMETERS, notebook_parameters
from harness.studies import Study, discover, get_study, study_of_notebook
from harness.studies.base import register
from harness.studies.registry import import_file
from harness.tools.registry import Tool, registered

ROOT = Path(__file__).resolve().parents[3]


def test_every_study_module_in_the_package_is_discovered():
    studies = discover()
    assert {"s0", "s3", "s4"} <= set(studies)
    for name, cls in studies.items():
        assert issubclass(cls, Study) and cls.name == name


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")),
                         ids=lambda p: p.name)
def test_each_notebooks_parameters_cell_matches_its_study(notebook):
    """The parameters cell is the papermill interface; the dataclass holds the rules: the two
    must name the same parameters (a typo on either side is caught here)."""
    study = study_of_notebook(notebook)
    declared = set(notebook_parameters(notebook))
    assert declared - set(HARNESS_PARAMETERS) == set(study.Params.rules())
    assert set(HARNESS_PARAMETERS) <= declared


def test_an_unknown_study_is_refused_with_where_studies_are_looked_for():
    with pytest.raises(SpecError, match="unknown study 'nope'") as info:
        get_study("nope")
    assert "HARNESS_STUDY_PATH" in info.value.hint


def test_two_different_studies_cannot_share_a_name():
    class First:
        name = "clash-demo"
        __qualname__ = "First"
        __module__ = "a"

    class Second:
        name = "clash-demo"
        __qualname__ = "Second"
        __module__ = "b"

    register(First)
    with pytest.raises(SpecError, match="two studies are named 'clash-demo'"):
        register(Second)


def test_a_notebook_must_name_its_study(tmp_path):
    nb = tmp_path / "x.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    with pytest.raises(SpecError, match="does not name its study"):
        study_of_notebook(nb)
    nb.write_text("{not json")
    with pytest.raises(SpecError, match="is not a notebook"):
        study_of_notebook(nb)


def test_a_study_module_beside_its_notebook_is_imported_from_the_metadata(tmp_path):
    (tmp_path / "tiny_study.py").write_text(
        "from harness.studies import Study, Parameters\n"
        "class Tiny(Study):\n"
        "    name = 'tiny-registry-demo'\n"
        "    title = 'tiny'\n"
        "    Params = Parameters\n"
        "    def topology(self, params): ...\n"
        "    def requirements(self, params): ...\n"
        "    def measure(self, session, bed, params, configured): ...\n"
        "    def claims(self, data): ...\n"
        "    def figures(self, data): ...\n")
    nb = tmp_path / "tiny.ipynb"
    nb.write_text(json.dumps({"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {
        "harness": {"study": "tiny-registry-demo", "module": "tiny_study.py"}}}))
    study = study_of_notebook(nb)
    assert study.name == "tiny-registry-demo" and study.Params.resolve().profile == "quick"
    with pytest.raises(SpecError, match="does not exist"):
        import_file(tmp_path / "missing.py")


def test_tools_are_declared_once_and_a_missing_one_names_its_package():
    tool = Tool("demo-tool-xyz", "demo-tool-xyz --version", "demo-package")
    assert registered()["demo-tool-xyz"] is tool
    Tool("demo-tool-xyz", "demo-tool-xyz --version", "demo-package")  # the same again: fine
    with pytest.raises(ValueError, match="declared twice"):
        Tool("demo-tool-xyz", "other --version", "demo-package")
    caps = Capabilities(node="n1", tools={"demo-tool-xyz": None})
    with pytest.raises(CapabilityMissing, match="lacks the programs demo-tool-xyz") as info:
        require(caps, tools=[tool])
    assert "apt-get install demo-package" in info.value.hint
    require(Capabilities(node="n1", tools={"demo-tool-xyz": "1.0"}), tools=[tool])


def test_a_study_that_is_asked_to_run_itself_names_the_runner():
    """Notebooks written before harness.run.runner called study.run(...): one clear error with
    the line that replaces it, before anything is made."""
    study = get_study("s4")
    params = study.parameters(repetitions=1)
    with pytest.raises(SpecError, match=r"Study.run\(\) is gone") as info:
        study.run(params, run_dir="", inventory="")
    assert "run_study(study, params, run_dir=run_dir, inventory=inventory)" in info.value.hint
    with pytest.raises(SpecError, match=r"Study.dry_run\(\) is gone") as info:
        study.dry_run(params)
    assert "dry_run_study" in info.value.hint


# the package spelled in two pieces: /work/packages-move/rewrite.py would read it whole as the
# flat module of before (the study module of today) and write that name instead
@pytest.mark.parametrize("module", ["harness.studies" + ".s4", "harness.studies.s4.study"])
def test_a_notebook_naming_a_study_package_imports_its_study_module(tmp_path, module):
    """A study is a package (harness/studies/s4/) whose __init__ defines nothing: a notebook's
    metadata naming the package, or its study module, imports the module that defines the
    Study (a fresh process: no discovery has run, so nothing else registers S4)."""
    import subprocess
    import sys

    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": [], "nbformat": 4, "nbformat_minor": 5,
                                "metadata": {"harness": {"study": "s4", "module": module}}}))
    root = Path(__file__).resolve().parents[3]
    script = ("import sys\n"
              "from pathlib import Path\n"
              "from harness.studies import registry\n"
              "before = 'harness.studies.s4.study' in sys.modules\n"
              f"registry.import_notebook_module(Path({str(path)!r}), {module!r})\n"
              "print(before, 'harness.studies.s4.study' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root,
                         env={**__import__("os").environ, "PYTHONPATH": str(root)}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False True"
