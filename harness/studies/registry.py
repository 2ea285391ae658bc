"""Finding studies: no list kept by hand.

A :class:`~harness.studies.base.Study` subclass registers itself when its
module is imported. :func:`discover` imports every place studies may live:

- the study packages of ``harness.studies`` (each one's ``study`` module) and its modules,
- modules published by installed packages under the entry-point group
  ``harness.studies`` (a researcher's own package of studies),
- ``*.py`` files in the folders of ``$HARNESS_STUDY_PATH`` (colon-separated).

A notebook names its study in its metadata, ``{"harness": {"study": NAME}}``,
and may add ``"module": "FILE.py"`` (a file right beside the notebook, no path) for a
study kept beside its notebook, outside any package, or ``"harness.studies.NAME"`` (a study
package) or ``"harness.studies.NAME.MODULE"``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pkgutil
import re
import sys
from importlib.metadata import entry_points
from pathlib import Path

from ..errors import SpecError
from . import base
from .base import Study

PACKAGE = __name__.rpartition(".")[0]  # harness.studies
ENTRY_POINT_GROUP = "harness.studies"
PATH_VARIABLE = "HARNESS_STUDY_PATH"

_discovered = False  # the studies are in base.DEFINED, filled as their modules are imported


def import_file(path: Path) -> None:
    """Import a study module from a file outside any package (once per file)."""
    path = path.resolve()
    module_name = "harness_study_" + "_".join(path.with_suffix("").parts[-3:]).replace("-", "_")
    if module_name in sys.modules:
        return
    if not path.is_file():
        raise SpecError(f"study module {path} does not exist",
                        "check the notebook's metadata harness.module or $HARNESS_STUDY_PATH")
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise


def _study_module(package: str) -> str:
    """A study package's module that defines its :class:`Study` (``harness.studies.s4.study``);
    the package itself when it has none."""
    return f"{package}.study" if importlib.util.find_spec(f"{package}.study") else package


def discover() -> dict[str, type[Study]]:
    """Import every study module there is; return the registry (name -> class)."""
    global _discovered
    if not _discovered:
        # the modules and study packages beside this one, found by folder: the package's
        # __init__ imports this module, so this module does not import the package back
        for info in pkgutil.iter_modules([str(Path(__file__).parent)], PACKAGE + "."):
            importlib.import_module(_study_module(info.name) if info.ispkg else info.name)
        for point in entry_points(group=ENTRY_POINT_GROUP):
            point.load()
        for folder in filter(None, os.environ.get(PATH_VARIABLE, "").split(os.pathsep)):
            for path in sorted(Path(folder).glob("*.py")):
                import_file(path)
        _discovered = True
    return dict(base.DEFINED)


def get_study(name: str) -> Study:
    """The study named ``name``, as an instance."""
    if name not in base.DEFINED:
        discover()
    if name not in base.DEFINED:
        raise SpecError(f"unknown study {name!r}",
                        f"use one of: {', '.join(sorted(base.DEFINED))}, or a notebook path "
                        f"(studies outside harness/studies are found through ${PATH_VARIABLE}, "
                        "an entry point or the notebook's metadata harness.module)")
    return base.DEFINED[name]()


def notebook_metadata(notebook: Path) -> dict:
    if not notebook.exists():
        raise SpecError(f"notebook {notebook} does not exist", "give a path under notebooks/")
    try:
        data = json.loads(notebook.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"{notebook} is not a notebook (invalid JSON: {exc})",
                        "give a .ipynb file") from None
    # A notebook may come from anywhere (a colleague's tarball, an archived run): each level
    # is checked for its shape, so that a list or a number is one error, not a traceback.
    meta = data.get("metadata", {}) if isinstance(data, dict) else None
    harness = (meta.get("harness") or {}) if isinstance(meta, dict) else None
    if not isinstance(harness, dict):
        raise SpecError(f"{notebook} is not a notebook with harness metadata (its JSON or its "
                        "metadata is not a mapping)",
                        'give a .ipynb file whose metadata has "harness": {"study": "NAME"}')
    if not harness.get("study"):
        raise SpecError(f"{notebook} does not name its study",
                        'add "harness": {"study": "NAME"} to the notebook metadata')
    if not isinstance(harness["study"], str):
        raise SpecError(f"{notebook}: metadata harness.study {harness['study']!r} is not a name",
                        'write "harness": {"study": "NAME"}')
    return harness


_MODULE_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}\.py")
_PACKAGE_MODULE = re.compile(r"harness\.studies(?:\.[A-Za-z_][A-Za-z0-9_]{0,127}){1,2}")


def import_notebook_module(notebook: Path, module) -> None:
    """Import the module a notebook's metadata names, but only one of two kinds.

    ``harness.studies.NAME`` (a study package: its ``study`` module is imported) or
    ``harness.studies.NAME.MODULE``, or a plain file name of a
    ``.py`` file right in the notebook's folder (not a symlink). Metadata travels with
    notebooks that came from elsewhere (an archived run's executed notebook, a
    colleague's tarball): a path that leaves the folder (``../../tmp/x.py``, ``/tmp/x.py``)
    would make ``harness params`` or ``lab show`` run any file as root, so it is refused
    before anything is imported."""
    hint = ('name a file beside the notebook ("module": "my_study.py") or a module '
            '"harness.studies.NAME"')
    if isinstance(module, str) and _PACKAGE_MODULE.fullmatch(module):
        try:
            if hasattr(importlib.import_module(module), "__path__"):
                importlib.import_module(_study_module(module))
        except ModuleNotFoundError:
            raise SpecError(f"{notebook}: metadata harness.module {module!r} does not exist",
                            hint) from None
        return
    if not isinstance(module, str) or not _MODULE_FILE.fullmatch(module):
        raise SpecError(f"{notebook}: metadata harness.module {module!r} is not a file in the "
                        "notebook's folder (no path, no '..')", hint)
    path = notebook.parent / module
    if path.is_symlink():
        raise SpecError(f"{notebook}: metadata harness.module {module!r} is a symlink "
                        f"(to {os.readlink(path)}), which is not followed", hint)
    import_file(path)


def study_of_notebook(notebook: str | Path) -> Study:
    """The study a notebook runs, importing its module when the notebook names one."""
    notebook = Path(notebook).resolve()
    meta = notebook_metadata(notebook)
    if meta.get("module"):
        import_notebook_module(notebook, meta["module"])
    return get_study(meta["study"])


def study_for(name_or_notebook: str) -> Study:
    """A study by name, or the study of a notebook file (anything ending in .ipynb)."""
    if name_or_notebook.endswith(".ipynb"):
        return study_of_notebook(name_or_notebook)
    return get_study(name_or_notebook)
