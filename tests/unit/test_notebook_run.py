"""A run begun by a notebook's own kernel (nbclient here, as papermill and JupyterLab drive it):
complete only after its last cell, with the executed notebook and report; incomplete when a
cell fails or the kernel dies. A real kernel, no namespaces: the run is begun directly."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, DeadKernelError

from harness.run.kernel_record import ExecutedCell, executed_notebook

ROOT = Path(__file__).resolve().parents[2]


def notebook(tmp_path: Path, middle: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["harness"] = {"study": "nbrun-demo"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    params = nbformat.v4.new_code_cell("x = 3")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A demo\nprose the kernel never sees"),
        params,
        nbformat.v4.new_code_cell("from harness.run.notebook_run import begin, record\nrecord()\n"
                                  "print('before the run')"),
        nbformat.v4.new_code_cell("run = begin('nbrun-demo', {'x': x})\nprint('measured', x)"),
        nbformat.v4.new_code_cell(middle),
        nbformat.v4.new_code_cell("print('the end', x * 2)"),
    ]
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, str(path))
    return path


def execute(path: Path, data: Path, monkeypatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("HARNESS_DATA", str(data))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def only_run(data: Path) -> Path:
    runs = list((data / "runs" / "nbrun-demo").iterdir())
    assert len(runs) == 1
    return runs[0]


def failed_run(tmp_path, monkeypatch, middle: str, error) -> tuple[Path, dict]:
    path = notebook(tmp_path, middle)
    with pytest.raises(error):
        execute(path, tmp_path / "data", monkeypatch)
    run = only_run(tmp_path / "data")
    return run, json.loads((run / "run.json").read_text())


def test_a_notebook_run_is_complete_after_its_last_cell_with_notebook_and_report(
        tmp_path, monkeypatch):
    path = notebook(tmp_path, "from IPython.display import display, HTML\n"
                              "display(HTML('<b>a figure stand-in</b>'))\n42")
    execute(path, tmp_path / "data", monkeypatch)
    run = only_run(tmp_path / "data")
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "complete" and meta["error"] is None and meta["ended"]
    assert meta["notebook"] == str(path.resolve())
    assert meta["parameters"] == {"x": 3}
    archived = nbformat.read(str(run / "notebook.ipynb"), as_version=4)
    assert archived.cells[0].cell_type == "markdown"  # the source notebook's prose
    texts = ["".join(o.get("text", "") for o in c.get("outputs", [])) for c in archived.cells]
    assert "measured 3" in texts[3]
    assert "the end 6" in texts[-1]  # the last cell's own output is in
    middle = archived.cells[4].outputs
    assert [o.output_type for o in middle] == ["display_data", "execute_result"]
    assert middle[1].data["text/plain"] == "42"
    report = (run / "report.html").read_text()
    assert "a figure stand-in" in report and "the end 6" in report
    assert not (run / "run.json").stat().st_mode & stat.S_IWUSR  # frozen


def test_a_failing_cell_leaves_the_run_incomplete_with_its_notebook(tmp_path, monkeypatch):
    run, meta = failed_run(tmp_path, monkeypatch, "raise RuntimeError('analysis broke')",
                           CellExecutionError)
    assert meta["status"] == "incomplete"
    assert "analysis broke" in meta["error"]
    archived = nbformat.read(str(run / "notebook.ipynb"), as_version=4)
    assert archived.cells[4].outputs[0].output_type == "error"
    assert (run / "report.html").exists()


def test_a_dead_kernel_leaves_the_run_incomplete(tmp_path, monkeypatch):
    run, meta = failed_run(tmp_path, monkeypatch, "import os\nos._exit(1)", DeadKernelError)
    assert meta["status"] == "incomplete" and meta["ended"] is None
    assert "last code cell" in meta["finish"]
    assert not (run / "notebook.ipynb").exists()


def test_outside_a_kernel_begin_makes_no_run(tmp_path, monkeypatch):
    from harness.run.notebook_run import begin

    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    assert begin("nbrun-demo", {}) is None
    assert not (tmp_path / "runs").exists()


def test_recorded_cells_are_laid_over_the_source(tmp_path):
    source = nbformat.v4.new_notebook()
    source.cells = [nbformat.v4.new_markdown_cell("prose"), nbformat.v4.new_code_cell("a = 1"),
                    nbformat.v4.new_code_cell("print(a)")]
    path = tmp_path / "s.ipynb"
    nbformat.write(source, str(path))
    out = {"output_type": "stream", "name": "stdout", "text": "10%\r50%\r100%\n1\n"}
    cells = [ExecutedCell("a = 1", 1), ExecutedCell("# Parameters\na = 2", 2),
             ExecutedCell("print(a)", 3, [out])]
    nb = executed_notebook(cells, path)
    assert [c.source for c in nb.cells] == ["prose", "a = 1", "# Parameters\na = 2", "print(a)"]
    assert nb.cells[3].outputs[0]["text"] == "100%\n1\n"  # progress reduced to its last state
    assert nb.cells[3].execution_count == 3
    assert os.path.exists(path)


def test_the_index_lists_a_complete_and_a_failed_notebook_run(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (tmp_path / "ok").mkdir()
    execute(notebook(tmp_path / "ok", "1"), data, monkeypatch)
    (tmp_path / "bad").mkdir()
    with pytest.raises(CellExecutionError):
        execute(notebook(tmp_path / "bad", "1 / 0"), data, monkeypatch)
    page = (data / "index.html").read_text()  # refreshed as each run finished
    statuses = {json.loads((run / "run.json").read_text())["status"]: run.name
                for run in (data / "runs" / "nbrun-demo").iterdir()}
    assert set(statuses) == {"complete", "incomplete"}
    for run_id in statuses.values():
        assert run_id in page
    assert "ZeroDivisionError" in page


def test_jupyterlab_names_the_notebook_through_its_session(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from harness.run.notebook_run import find_source

    lab = tmp_path / "lab.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), str(lab))
    monkeypatch.chdir(tmp_path)
    shell = SimpleNamespace(user_ns={"__session__": str(lab)})
    assert find_source(shell, "nbrun-demo") == lab.resolve()
    relative = SimpleNamespace(user_ns={"__session__": "some/folder/lab.ipynb"})
    assert find_source(relative, "nbrun-demo") == lab.resolve()  # Lab's path is root-relative


def test_the_last_cell_is_known_by_its_id_or_its_source(tmp_path):
    from harness.run.kernel_record import LastCell

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a = 1"), nbformat.v4.new_code_cell("print(a)  \n"),
                nbformat.v4.new_markdown_cell("the end"), nbformat.v4.new_code_cell("")]
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, str(path))
    last = LastCell.of(path)
    assert last.ran("print(a)", None)  # papermill, nbclient: the source, blanks aside
    assert last.ran("print(a, 'edited in JupyterLab')", nb.cells[1].id)  # Lab: the cell's id
    assert not last.ran("a = 1", nb.cells[0].id)


def test_a_harness_run_drops_the_lines_of_its_kernel_shut_down(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM: nbclient shuts the kernel down, and "Kernel died while waiting for
    execute reply." and, at exit, an abandoned task's DeadKernelError traceback followed the
    run's own ending line (seen 2026-11-30); `harness run` drops exactly those."""
    import logging

    import papermill

    from harness.archive.archive import Run
    from harness.run import execute
    from harness.run.kernel_death import KernelGoneFilter

    for name in ("asyncio", "papermill"):  # as a fresh process has them
        monkeypatch.setattr(logging.getLogger(name), "filters", [])

    def kernel_shut_down(*_args, **_kwargs):
        raise DeadKernelError("Kernel died")

    monkeypatch.setattr(papermill, "execute_notebook", kernel_shut_down)
    run = Run.create("nbrun-demo", {}, tmp_path)
    result = execute._execute(tmp_path / "demo.ipynb", {}, run, None, False)
    assert result.status == "incomplete" and "Kernel died" in result.error
    [quiet] = [f for f in logging.getLogger("papermill").filters
               if isinstance(f, KernelGoneFilter)]
    died = logging.LogRecord("papermill", logging.ERROR, __file__, 1,
                             "Kernel died while waiting for execute reply.", (), None)
    assert not quiet.filter(died)
    assert any(isinstance(f, KernelGoneFilter) for f in logging.getLogger("asyncio").filters)
