"""harness.run.kernels: papermill's kernel over Unix sockets, so a run prints no TCP warning; the
sockets' folder is journalled, so a hard-killed harness leaves it to `lab clean`."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

SCRIPT = """
import sys, papermill
from harness.journal.journal import Journal
from harness.run.kernels import ipc_kernel
with ipc_kernel(Journal(sys.argv[4])) as kernel:
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
    journal = tmp_path / "journal.jsonl"
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(notebook), str(tmp_path / "out.ipynb"),
                          str(cwd), str(journal)],
                         capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert f"OUTPUT 42 {cwd}" in out.stdout
    assert "WARNING" not in out.stderr and "without encryption" not in out.stderr, out.stderr
    folder = Path(out.stdout.split("SOCKETS ")[1].strip())
    assert folder.parent == Path(tempfile.gettempdir()) and not folder.exists()  # removed with the kernel
    from harness.journal.journal import Journal
    assert Journal(journal).pending() == []  # recorded, and undone on the way out


KILLED = """
import os, sys
from harness.journal.journal import Journal
from harness.run.kernels import ipc_kernel
with ipc_kernel(Journal(sys.argv[1])) as kernel:
    print(kernel["config"].KernelManager.ip.rsplit("/", 1)[0], flush=True)
    os._exit(9)  # killed hard: no finally runs
"""


def test_a_hard_killed_harness_leaves_the_folder_to_its_journal(tmp_path):
    from harness.journal.journal import Journal

    journal = tmp_path / "journal.jsonl"
    out = subprocess.run([sys.executable, "-c", KILLED, str(journal)], capture_output=True,
                         text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 9, out.stderr
    folder = Path(out.stdout.strip())
    assert folder.is_dir() and folder.name.startswith("harness-kernel-")
    (entry,) = Journal(journal).pending()
    assert (entry.kind, entry.data["path"]) == ("file", str(folder))
    Journal(journal).undo_all()  # what `harness lab clean` does
    assert not folder.exists()


def test_ctrl_c_during_a_session_prints_no_traceback_from_the_kernel(tmp_path):
    """Ctrl-C reaches papermill's process group, not the kernel (its own session): nbclient
    interrupts the kernel and asks it to shut down, and the interrupted cell's reply, sent
    after the session's undo, finds its channels closed. ipykernel's traceback of that (20
    lines ending in ZMQError) reached the user's terminal; the session now quiets it."""
    import os
    import signal
    import time

    started = tmp_path / "started"
    notebook = tmp_path / "n.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import time, pathlib\n"
        "from harness.run.session import open_session\n"
        f"with open_session('tlock', {{}}, root=pathlib.Path({str(tmp_path)!r})):\n"
        f"    pathlib.Path({str(started)!r}).touch()\n"
        "    time.sleep(120)\n")]
    nbformat.write(nb, str(notebook))
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "HARNESS_LOCK_DIR": str(tmp_path / "locks")}
    env.pop("HARNESS_SHARE_MACHINE", None)
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(notebook), str(tmp_path / "o.ipynb"),
                             str(tmp_path), str(tmp_path / "journal.jsonl")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
                            env=env, start_new_session=True,  # a shell job: Ctrl-C reaches it all
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 90
        while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert started.exists(), proc.communicate(timeout=30)
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0  # interrupted, not finished
    [run] = (tmp_path / "runs" / "tlock").iterdir()
    assert '"status": "incomplete"' in (run / "run.json").read_text()
    assert "Exception in message handler" not in err and "ZMQError" not in err, err[-3000:]
