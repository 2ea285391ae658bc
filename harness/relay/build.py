"""The Stream Relay Daemon (srd.c), compiled on first use (see harness.cbuild).

Why C: a relay in Python is slower than socat here (see srd.c).
"""

from __future__ import annotations

from pathlib import Path

from ..cbuild import BuildFailed, CProgram

PROGRAM = CProgram(
    "srd", Path(__file__).with_name("srd.c"),
    ("-O2", "-std=gnu11", "-Wall", "-Wextra", "-D_FORTIFY_SOURCE=2"),
    "the relay daemon")
build_local = PROGRAM.build_local
build_on = PROGRAM.build_on

# S0's "two proxies" baseline: streams multiplexed onto one relay-to-relay connection (mux.c)
MUX_PROGRAM = CProgram(
    "srdmux", Path(__file__).with_name("mux.c"),
    ("-O2", "-std=gnu11", "-Wall", "-Wextra", "-D_FORTIFY_SOURCE=2"),
    "the multiplexing relay")

__all__ = ["MUX_PROGRAM", "PROGRAM", "BuildFailed", "build_local", "build_on"]
