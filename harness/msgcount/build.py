"""The message-count streamer (msgcount.c), compiled on first use (see harness.cbuild).

Why C: it stands against perftest (C) in S1's bandwidth claims; an interpreter's own
cost per message would be counted against TCP.
"""

from __future__ import annotations

from pathlib import Path

from ..cbuild import BuildFailed, CProgram

PROGRAM = CProgram(
    "msgcount", Path(__file__).with_name("msgcount.c"),
    ("-O2", "-std=gnu11", "-Wall", "-Wextra", "-D_FORTIFY_SOURCE=2"),
    "the message-count streamer")
build_local = PROGRAM.build_local
build_on = PROGRAM.build_on

__all__ = ["PROGRAM", "BuildFailed", "build_local", "build_on"]
