"""Every program the harness declares can be installed by env/setup."""

from __future__ import annotations

from pathlib import Path

from harness.studies import discover
from harness.tools.registry import all_tools

PACKAGES = Path(__file__).resolve().parents[3] / "env" / "system-packages.txt"
# Debian always has these (util-linux is Essential; the harness itself runs on python3).
ALWAYS_THERE = {"util-linux", "python3"}


def listed_packages() -> set[str]:
    return {line.split()[0] for line in PACKAGES.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")}


def test_every_declared_tool_has_its_package_in_the_setup_list():
    discover()  # the studies' own programs (S0's NetPIPE, the relays' socat) too
    tools = all_tools()
    # the harness's own declarations from Debian (not tests' throw-away tools, not IBM's GPFS)
    debian = {name: t for name, t in tools.items()
              if t.module.startswith("harness.") and not t.vendor}
    assert "iperf3" in debian and "mmlscluster" not in debian
    missing = {name: t.package for name, t in debian.items()
               if t.package not in listed_packages() | ALWAYS_THERE}
    assert missing == {}, f"add these packages to {PACKAGES.name}: {missing}"
    # S1's programs are declared, so `harness probe` reports their versions
    for name in ("ib_send_lat", "ib_write_lat", "ib_send_bw", "ib_write_bw", "qperf",
                 "ibv_devinfo", "rdma", "prlimit"):
        assert name in tools
