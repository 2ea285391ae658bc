"""What an IPython kernel executed, recorded inside the kernel: the notebook of a notebook run.

A notebook run from JupyterLab, plain papermill or nbclient has no executed notebook
that the kernel can read: JupyterLab keeps outputs in the browser until the user
saves, nbclient keeps them in its own process's memory, and papermill tells the
kernel no output path. The kernel itself, though, sends every output: each
message on the IOPub channel (``execute_input``, ``stream``, ``display_data``,
``execute_result``, ``error``, ``clear_output``, ``update_display_data``) passes
through its ``Session.send``. :class:`Recorder` wraps that one method and keeps
the messages per executed cell, exactly the messages a front end turns into
outputs, so the notebook it builds is the same whichever front end drove the
kernel.

:func:`executed_notebook` lays the recorded cells over the source notebook:
markdown and metadata from the file, each code cell's outputs from its latest
execution, cells the file does not have (papermill's injected parameters) after
the cell that ran just before them.
"""

from __future__ import annotations

import copy
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

OUTPUT_TYPES = ("stream", "display_data", "execute_result", "error")

_recorder: Recorder | None = None  # this kernel's, once :func:`record` installed it


def kernel_shell():
    """The IPython shell of the kernel we run in, or None (a script, a terminal IPython)."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    return shell if shell is not None and hasattr(shell, "kernel") else None


def record() -> Recorder | None:
    """Start recording this kernel's outputs (once per kernel); None outside a kernel.

    A notebook's parameters cell calls it (:meth:`harness.studies.Study.parameters`), so the
    outputs of every cell from there on are in the notebook a notebook run archives."""
    global _recorder
    shell = kernel_shell()
    if shell is None:
        return None
    if _recorder is None or _recorder.shell is not shell:
        _recorder = Recorder(shell)
    return _recorder


def recorder() -> Recorder | None:
    """This kernel's recorder, if :func:`record` installed one."""
    return _recorder


@dataclass
class ExecutedCell:
    """One execution of a cell, in execution order."""

    source: str
    execution_count: int | None
    outputs: list[dict] = field(default_factory=list)
    clear_on_next: bool = False

    def add(self, output: dict) -> None:
        if self.clear_on_next:
            self.outputs.clear()
            self.clear_on_next = False
        if (output["output_type"] == "stream" and self.outputs
                and self.outputs[-1]["output_type"] == "stream"
                and self.outputs[-1]["name"] == output["name"]):
            self.outputs[-1]["text"] += output["text"]
            return
        self.outputs.append(output)


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _carriage_returns(text: str) -> str:
    """A terminal's view of a stream: each line as its last ``\\r`` left it (progress bars)."""
    return "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))


class Recorder:
    """Every output a kernel sends, per executed cell, from the moment it is installed."""

    def __init__(self, shell) -> None:
        self.shell = shell
        self.cells: list[ExecutedCell] = []
        self._by_request: dict[str, ExecutedCell] = {}
        self._displays: dict[str, list[dict]] = {}
        self._lock = threading.Lock()
        self._earlier_cells()
        session = shell.kernel.session
        original = session.send

        def send(stream, msg_or_type, content=None, parent=None, *args, **kwargs):
            msg = original(stream, msg_or_type, content, parent, *args, **kwargs)
            try:
                if isinstance(msg, dict):
                    self.see(msg)
            except Exception:  # noqa: BLE001 -- recording must never break the kernel
                pass
            return msg

        session.send = send

    def _earlier_cells(self) -> None:
        """Cells run before the recorder existed: their sources from the kernel's history
        (their outputs were sent already); the running cell's outputs are recorded from now."""
        inputs = list(self.shell.user_ns.get("In", []))
        for count, source in enumerate(inputs[1:], start=1):
            self.cells.append(ExecutedCell(source, count))
        parent = self.shell.kernel.get_parent("shell") if hasattr(self.shell, "kernel") else {}
        request = (parent or {}).get("header", {}).get("msg_id")
        if request and self.cells:
            self._by_request[request] = self.cells[-1]

    def see(self, msg: dict) -> None:
        kind = msg["header"]["msg_type"]
        request = (msg.get("parent_header") or {}).get("msg_id")
        content = msg.get("content") or {}
        with self._lock:
            if kind == "execute_input":
                cell = ExecutedCell(content.get("code", ""), content.get("execution_count"))
                self.cells.append(cell)
                self._by_request[request] = cell
                return
            cell = self._by_request.get(request)
            if cell is None:
                return
            if kind == "clear_output":
                if content.get("wait"):
                    cell.clear_on_next = True
                else:
                    cell.outputs.clear()
            elif kind == "update_display_data":
                for output in self._displays.get((content.get("transient") or {})
                                                 .get("display_id"), []):
                    output["data"] = content.get("data", {})
                    output["metadata"] = content.get("metadata", {})
            elif kind in OUTPUT_TYPES:
                output = nbformat.v4.output_from_msg(msg)
                display_id = (content.get("transient") or {}).get("display_id")
                if display_id:
                    self._displays.setdefault(display_id, []).append(output)
                cell.add(output)

    def snapshot(self) -> list[ExecutedCell]:
        with self._lock:
            return copy.deepcopy(self.cells)


def executed_notebook(cells: list[ExecutedCell], source: Path | None) -> NotebookNode:
    """The executed notebook: ``source``'s cells with the recorded outputs (see module doc)."""
    for cell in cells:
        for output in cell.outputs:
            if output["output_type"] == "stream":
                output["text"] = _carriage_returns(output["text"])
    if source is None:
        nb = nbformat.v4.new_notebook()
        nb.cells = [_code_cell(c) for c in cells]
        return nb
    nb = nbformat.read(str(source), as_version=4)
    known = {_norm(c.source) for c in nb.cells if c.cell_type == "code"}
    latest = {_norm(c.source): c for c in cells}
    after: dict[str | None, dict[str, ExecutedCell]] = {}
    previous = None
    for cell in cells:
        text = _norm(cell.source)
        if text in known:
            previous = text
        elif text:
            after.setdefault(previous, {})[text] = cell  # a re-execution replaces the older
    merged = []
    leading = [_code_cell(c) for c in after.get(None, {}).values()]  # before the first code cell
    for cell in nb.cells:
        if cell.cell_type == "code" and leading:
            merged += leading
            leading = []
        merged.append(cell)
        if cell.cell_type != "code":
            continue
        text = _norm(cell.source)
        ran = latest.get(text)
        cell.outputs = [nbformat.from_dict(o) for o in ran.outputs] if ran else []
        cell.execution_count = ran.execution_count if ran else None
        merged += [_code_cell(c) for c in after.get(text, {}).values()]
    nb.cells = merged + leading
    return nb


def _code_cell(cell: ExecutedCell) -> NotebookNode:
    return nbformat.v4.new_code_cell(cell.source, execution_count=cell.execution_count,
                                     outputs=[nbformat.from_dict(o) for o in cell.outputs])


@dataclass(frozen=True)
class LastCell:
    """A notebook's last non-empty code cell: its id (nbformat >= 4.5) and normalised source."""

    cell_id: str | None
    source: str

    @classmethod
    def of(cls, notebook: Path) -> LastCell | None:
        nb = nbformat.read(str(notebook), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
        return cls(code[-1].get("id"), _norm(code[-1].source)) if code else None

    def ran(self, source: str, cell_id: str | None) -> bool:
        """Whether an executed cell is this one: JupyterLab sends the cell's id; papermill and
        nbclient send only its source."""
        return (cell_id is not None and cell_id == self.cell_id) or _norm(source) == self.source
