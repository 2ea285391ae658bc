"""Programs the harness runs on nodes, each declared once where it is used.

A :class:`Tool` names a program, the shell command that prints its version
(archived with every run) and the Debian package that provides it (said in
the error when a node lacks it). Creating a Tool registers it, so
``harness probe`` (which discovers every study first) reports every program any study or
operation needs, and a study lists its tools as objects: there is no table of names to
keep in step.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

_TOOLS: dict[str, Tool] = {}


@dataclass(frozen=True)
class Tool:
    name: str  # the program, as found on $PATH
    version: str  # shell command whose first output line is the version
    package: str  # the package that installs it (Debian's, unless ``vendor`` says otherwise)
    path: str = ""  # a directory to look in besides $PATH (IBM Storage Scale: /usr/lpp/mmfs/bin)
    vendor: str = ""  # who ships ``package`` when it is not Debian (e.g. "IBM")
    module: str = field(default="", compare=False)  # where it was declared (filled in)

    def __post_init__(self) -> None:
        if not self.module:  # the module whose code created this Tool
            object.__setattr__(self, "module", sys._getframe(2).f_globals.get("__name__", ""))
        known = _TOOLS.get(self.name)
        if known is not None and known != self:
            raise ValueError(f"tool {self.name!r} is declared twice, differently: {known} and {self}")
        _TOOLS[self.name] = self


def registered() -> dict[str, Tool]:
    """Every tool declared by the modules imported so far, by name."""
    return dict(_TOOLS)


def all_tools() -> dict[str, Tool]:
    """Every tool the harness's own modules of ``harness.tools`` and ``harness.config``
    declare (imported first), and every tool declared by the modules imported so far.

    A study's programs are declared by its modules, registered when they are imported: a
    run has imported its study; ``harness probe`` discovers every study first
    (:func:`harness.studies.discover`). The tools' registry sits below the studies and
    never imports them."""
    import importlib
    import pkgutil

    from .. import config, tools

    for package in (tools, config):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
    return registered()


def lookup(name: str) -> Tool:
    if name not in _TOOLS:
        all_tools()
    if name not in _TOOLS:
        raise ValueError(f"no tool named {name!r} is declared (by harness.tools, harness.config "
                         "or a module imported so far): declare it with "
                         "harness.tools.registry.Tool(name, version command, Debian package), "
                         "or import the study that declares it")
    return _TOOLS[name]


# Programs the harness itself uses everywhere.
IP = Tool("ip", "ip -V", "iproute2")
TC = Tool("tc", "tc -V", "iproute2")
PYTHON3 = Tool("python3", "python3 --version", "python3")
PING = Tool("ping", "ping -V", "iputils-ping")
