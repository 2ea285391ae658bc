"""The fan-in generator (fanin.c), compiled on first use (see harness.cbuild).

Why C: the study compares the CPU cost of three transports; an interpreter's
own cost would blur exactly that difference.
"""

from __future__ import annotations

from pathlib import Path

from ..cbuild import BuildFailed, CProgram

PROGRAM = CProgram(
    "fanin", Path(__file__).with_name("fanin.c"),
    ("-O2", "-std=gnu11", "-Wall", "-Wextra", "-D_FORTIFY_SOURCE=2", "-pthread"),
    "the fan-in generator")
build_local = PROGRAM.build_local
build_on = PROGRAM.build_on

__all__ = ["PROGRAM", "BuildFailed", "build_local", "build_on"]
