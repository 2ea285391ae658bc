"""The Stream Relay Daemon (SRD) of study S0: accept TCP streams, relay each to a target.

The daemon is a small C program (``srd.c``: epoll + splice through a pipe per
direction, bulk data never copied to user space) compiled on first use (``build``); this
package validates what it is asked to do (``spec``), runs it on a node under
the journal (``daemon``) and reads its event log (``events``). ``line`` holds
the client -- middle -- server lab that its tests and benchmark use;
``process`` runs a relay of either kind (srd or socat) behind one record, for
study S0's comparison of the two.

    spec = RelaySpec.parse("198.18.0.2:5201", "198.18.1.2:5201")
    with running_relay(journal, middle, spec) as relay:
        ...                      # clients connect to 198.18.0.2:5201
    relay.exit_status            # 0 after a clean SIGTERM shutdown
"""

from .build import BuildFailed, build_local, build_on
from .daemon import RelayHandle, RelayStartError, running_relay, start_relay
from .events import RelayEvent, parse_events
from .spec import HostPort, RelaySpec, parse_host_port

__all__ = [
    "BuildFailed",
    "HostPort",
    "RelayEvent",
    "RelayHandle",
    "RelaySpec",
    "RelayStartError",
    "build_local",
    "build_on",
    "parse_events",
    "parse_host_port",
    "running_relay",
    "start_relay",
]
