"""harness.kernels: papermill's kernel over Unix sockets, so a run prints no TCP warning."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

SCRIPT = """
import sys, papermill
from harness.kernels import ipc_kernel
with ipc_kernel() as kernel:
    folder = kernel["config"].KernelManager.ip.rsplit("/", 1)[0]
    nb = papermill.execute_notebook(sys.argv[1], sys.argv[2], kernel_name="python3",
                                    progress_bar=False, cwd=sys.argv[3], **kernel)
print("OUTPUT", nb.cells[0].outputs[0]["text"].strip(), "SOCKETS", folder)
"""


def test_a_notebook_runs_over_ipc_without_the_tcp_warning(tmp_path):
    notebook = tmp_path / "n.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nprint(6 * 7, os.getcwd())")]
    nbformat.write(nb, str(notebook))
    cwd = tmp_path / "elsewhere"  # the kernel's cwd differs from ours: the socket path is absolute
    cwd.mkdir()
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(notebook), str(tmp_path / "out.ipynb"), str(cwd)],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert f"OUTPUT 42 {cwd}" in out.stdout
    assert "WARNING" not in out.stderr and "without encryption" not in out.stderr, out.stderr
    folder = Path(out.stdout.split("SOCKETS ")[1].strip())
    assert folder.parent == Path(tempfile.gettempdir()) and not folder.exists()  # removed with the kernel
