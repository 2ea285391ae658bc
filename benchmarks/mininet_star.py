"""Mininet's side of ``lab_bench.py --star N``: one star built and stopped, timed (JSON out).

Run by Debian's python3 (Mininet 2.3 is Debian's package ``mininet``; its Python
module is in /usr/lib/python3/dist-packages), as root:

    /usr/bin/python3 benchmarks/mininet_star.py N

One switch (a Linux bridge, ``LinuxBridge``: no controller, no Open vSwitch) and N
hosts, each on a ``TCLink`` at 100 Mbit/s (Mininet shapes both ends with htb, as
the harness does). Timed from the start of the build to the end of ``net.stop()``,
with the switch started in between; a ping from the first host to the last after
the build is kept out of the figure and reported. ``mn -c`` is never run: it
deletes and kills by name pattern. What Mininet leaves is checked by the caller.
"""

from __future__ import annotations

import json
import sys
import time

from mininet.link import TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import Topo


class Star(Topo):
    def build(self, n: int = 48) -> None:  # noqa: D102 -- Mininet's hook
        switch = self.addSwitch("s1")
        for i in range(1, n + 1):
            self.addLink(self.addHost(f"h{i}"), switch, bw=100)


def main() -> None:
    n = int(sys.argv[1])
    setLogLevel("critical")
    started = time.monotonic()
    net = Mininet(topo=Star(n=n), switch=LinuxBridge, link=TCLink, controller=None,
                  autoSetMacs=True)
    net.start()
    built = time.monotonic()
    first, last = net.hosts[0], net.hosts[-1]
    ping = first.cmd(f"ping -c 1 -W 2 {last.IP()}")
    verified = time.monotonic()
    net.stop()
    stopped = time.monotonic()
    print(json.dumps({
        "hosts": n, "build_s": built - started, "teardown_s": stopped - verified,
        "total_s": (built - started) + (stopped - verified),
        "verify_s": verified - built, "ping_ok": " 0% packet loss" in ping,
    }))


if __name__ == "__main__":
    main()
