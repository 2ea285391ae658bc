"""S0 -- NAT + a user-space Stream Relay Daemon for clusters with private addresses (seed 000).

Paper (Choi, Park, Park, Kwon, Park; Sogang Univ., KUT, KISTI): compute nodes of
two clusters have private addresses; only their front nodes are public. On
100 Mbit/s Ethernet with one front and one compute node per cluster they
compare compute-to-compute latency and bandwidth per message size for
1) direct, 2) a user-space proxy on both front nodes, 3) NAT on the source
front + a user-space Stream Relay Daemon (SRD) on the destination front:
two proxies = 2.1x direct latency, NAT+SRD = 1.5x (28% below two proxies);
both relayed methods below half of direct bandwidth; NAT+SRD 18-27% above two
proxies at 1-32 KB, 6-16% at 128 KB-1 MB, ~25% overall.

Here (one lab, four nodes)::

    a1 10.1.0.2 --priv-- 10.1.0.1 fa 198.18.0.1 --public-- 198.18.0.2 fb 10.2.0.1 --priv-- 10.2.0.2 b1

* direct: a1 connects to b1's private address; both fronts forward in the
  kernel (routes to the other cluster's private prefix via the other front).
  No NAT, no relay: the physical lower bound of any relayed method.
* two proxies: a1 connects to fa's private address, where our proxy
  (``srdmux entry``, :file:`harness/relay/mux.c`) carries every stream of the
  cluster over ONE connection to fb's public address, where its other half
  (``srdmux exit``) opens a connection to b1 per stream: the paper's proxy
  (Table 1, 000:67: one connection between the fronts, user space).
* NAT + SRD: a1 connects to fb's public address; fa routes and masquerades
  the connection (an nftables table of the harness's own, see
  :mod:`harness.config.nat`); the SRD on fb relays it to b1.

What differs between methods 2 and 3 is the paper's point: two user-space
hops over one shared connection, or the kernel's NAT and one user-space hop
(a connection per stream from fa to fb, Table 1's NAT row). The relays are
started afresh for every repetition, so each repetition is a fresh connection
set, the shared one included. Message sizes are powers of two from 1 B to 1 MiB; the tool is
:mod:`harness.tools.pingpong` (why not NPtcp: see there). Links are shaped to
100 Mbit/s by default (``rate_mbit``; 0 = unshaped). A second, unshaped lab
compares kernel forwarding, socat and our SRD as relays (throughput with
iperf3, relay CPU, 1 B latency; NPtcp as a cross-check of the tool).

Addresses exist only inside the namespaces the run creates; no node has a
default route, only routes for the lab's prefixes.

On real machines (``inventory``): a1, fa, fb and b1 must all be in it, the
fronts with their ``priv`` and ``pub`` interfaces (checked on the machines
before any change); the fronts get ``net.ipv4.ip_forward=1`` (recorded and
restored); routes between the two private prefixes, which "direct" needs,
must exist in the site's network (checked before measuring). The benchmark
then runs on those machines as they are (no second lab).

This module holds the study (:class:`S0`), the checks made before anything
changes, and the measurement flow (:func:`measure`) with its archive. The
parameters, topology, plan and constants it shares with its helper modules are
in :mod:`.design` (re-exported here). :mod:`.measure` measures the three
methods, :mod:`.bench` runs the relay benchmark, :mod:`.far` the distance
sweep, :mod:`.analysis` reads the archive (:mod:`.figures` draws it). The
relays (srd and socat alike) are :mod:`harness.relay.process`; socket and CPU
facts come from :mod:`harness.tools.sockets` and :mod:`harness.tools.cpu`.
"""

from __future__ import annotations

import json
import time

import pandas as pd

from ...config.interface import ETHTOOL
from ...config.sysctl import Sysctl
from ...errors import CapabilityMissing, SpecError
from ...relay import targets as relay_targets
from ...run.session import Session
from ...run.testbed import InventoryTestbed
from ...tools import pingpong
from ...tools.cpu import machine_load
from ...tools.iperf3 import IPERF3
from ...tools.registry import PYTHON3
from ...tools.sockets import check_answers, check_ports_free
from ...topology.topology import Topology
from ..base import Citation, Requirements, RunData, Study
from ..order import MeasuringOrder
from .bench import measure_bench
from .design import (
    A_PRIVATE,
    B1_PORTS,
    B_PRIVATE,
    FA_PORTS,
    FB_PORTS,
    IPERF_OFFSET,
    IPERF_PORT,
    LAB_PUBLIC,
    LABELS,
    MAX_SIZE,
    METHODS,
    MUX_PORT,
    NPTCP_PORT,
    OFFLOADS,
    PORTS_USER,
    POW2,
    PROFILES,
    PROXY_PORT,
    PUBLIC,
    SERVER_PORT,
    SOCAT_OFFSET,
    SRD_PORT,
    Measurement,
    Params,
    Plan,
    check_size,
    message_sizes,
    offloads_off,
    topology,
)
from .far import measure_far
from .measure import count_connections, measure_capacity, probe_wire, sweep
from .registration import REGISTRATION_FILE

# the study's own names, and those of .s0_lab it re-exports (they were defined here before)
__all__ = [
    "S0", "STUDY", "check_fronts", "check_inventory", "check_tools",
    "prepare_inventory",
    "A_PRIVATE", "B1_PORTS", "B_PRIVATE", "FA_PORTS", "FB_PORTS", "IPERF_OFFSET", "IPERF_PORT",
    "LAB_PUBLIC", "LABELS", "MAX_SIZE", "METHODS", "MUX_PORT", "NPTCP_PORT", "OFFLOADS",
    "PORTS_USER", "POW2", "PROFILES", "PROXY_PORT", "PUBLIC", "SERVER_PORT", "SOCAT_OFFSET",
    "SRD_PORT", "Measurement", "Params", "Plan", "check_size", "message_sizes", "offloads_off",
    "topology",
]

STUDY = "s0"
#: a run's placement (run.json placement.where) in words
_PLACES = {"host": "namespaces on this host", "vm": "namespaces in a VM",
           "inventory": "the inventory's machines"}


# -- checks before anything changes -----------------------------------------------------------

def check_inventory(inventory: str) -> None:
    """The fronts must be real machines of the inventory: they run the relays and NAT."""
    if not inventory:
        return
    from ...machines.inventory import Inventory

    hosts = Inventory.load(inventory).hosts
    for front in ("fa", "fb"):
        if front not in hosts:
            raise SpecError(f"inventory {inventory} has no front node {front!r}",
                            f"study S0 runs a relay or NAT on {front}: add nodes.{front} with "
                            "its 'priv' and 'pub' interfaces")


def check_fronts(bed) -> None:
    """Each front node must really have its private and public address (clear error first)."""
    for front in ("fa", "fb"):
        node = bed.node(front)
        links = json.loads(node.run(["ip", "-j", "addr", "show"], timeout=10).stdout or "[]")
        have = {(link["ifname"], a["local"]) for link in links
                for a in link.get("addr_info", []) if a.get("family") == "inet"}
        for ifname in ("priv", "pub"):
            dev, ip = bed.device(front, ifname), bed.address(front, ifname)
            if (dev, ip) not in have:
                raise SpecError(
                    f"front node {front} has no {ifname} interface {dev} with address {ip}",
                    f"a front node needs a private and a public interface; its IPv4 addresses "
                    f"are: {', '.join(f'{d} {a}' for d, a in sorted(have)) or 'none'}")


def check_tools(bed, bench: bool) -> None:
    need = {"fa": ["conntrack", "nft"], "fb": [], "a1": [], "b1": []}
    if bench:
        need["fa"].append("socat")
        need["fb"].append("socat")
    for name, tools in need.items():
        node = bed.node(name)
        for tool in tools:
            if not node.has_command(tool):
                raise CapabilityMissing(f"{name} lacks {tool}, which study S0 needs there",
                                        f"apt-get install {tool}")


# -- the whole measurement -------------------------------------------------------------------

def prepare_inventory(session: Session, bed) -> None:
    """Real front nodes must forward (methods 1 and 3): set it, recorded and restored."""
    if isinstance(bed, InventoryTestbed):
        for front in ("fa", "fb"):
            session.apply(Sysctl(bed.node(front), "net.ipv4.ip_forward", 1))


class S0(Study):
    name = STUDY
    title = "NAT + user-space relay between private-IP clusters"
    registration_file = REGISTRATION_FILE
    citation = Citation(
        "Siyoul Choi, Kumrye Park, Sungyong Park, Ohyoung Kwon, Hyoungwoo Park",
        "High Performance Communication Relay method for Clusters that use Private IPs in "
        "GRID environment (그리드 환경에서 사설 IP 클러스터간의 통신을 위한 고성능 중계기법)",
        "Korean-language conference paper of Sogang University, KUT and KISTI; its English "
        "version: S. Choi et al., \u201cAn NAT-Based Communication Relay Scheme for "
        "Private-IP-Enabled MPI over Grid Environments\u201d, Proc. ICCS 2004, LNCS 3036, "
        "pp. 499-502, Springer", 2004, "000_092c15c31e73f5b4.txt",
        note="the seed prints neither venue nor year; 2004 is the English version's, and the "
             "seed's newest reference is from 2003")
    Params = Params

    def topology(self, params: Params) -> Topology:
        return topology(params)

    def requirements(self, params: Params) -> Requirements:
        # nft/socat/conntrack are needed on the fronts only: check_testbed looks there
        return Requirements(tools=(IPERF3, PYTHON3) + ((ETHTOOL,) if params.rate_mbit else ()),
                            node_features={"fa": frozenset({"nat"})})

    def prepare(self, params: Params, inventory: str) -> None:
        check_inventory(inventory)

    def check_testbed(self, session: Session, bed, params: Params) -> None:
        check_fronts(bed)
        check_tools(bed, params.bench)
        for name, ports in (("fa", FA_PORTS), ("fb", FB_PORTS), ("b1", B1_PORTS)):
            check_ports_free(bed.node(name), ports, PORTS_USER)

    def configure(self, session: Session, bed, params: Params) -> None:
        prepare_inventory(session, bed)
        session.apply(*offloads_off(bed))

    def measure(self, session: Session, bed, params: Params, configured: None) -> None:
        """The three methods (latency, streaming, connections), then the relay benchmark."""
        timings: dict[str, float] = {"setup_s": session.timings.get("testbed_s", 0.0)
                                     + session.timings.get("verify_s", 0.0)}
        loadavg = {"start": machine_load(bed.node("a1"))}
        meas = Measurement(session, bed, Plan.of(bed), order=MeasuringOrder(params.seed))
        t = time.monotonic()
        with pingpong.server(meas.journal, meas.node("b1"), meas.plan.b1, SERVER_PORT):
            check_answers(meas.journal, meas.node("a1"), meas.plan.b1, SERVER_PORT,
                          "direct path (needs routes between the private prefixes)")
            # the run's own facts for its gates and bounds (run.json wire_probe, path_capacity)
            probe = probe_wire(meas, params)
            capacity = measure_capacity(meas, params)
            session.note(wire_probe=probe.to_dict(), path_capacity=capacity)
            timings["probe_capacity_s"] = time.monotonic() - t
            t = time.monotonic()
            rows = sweep(meas, params)
            timings["sweep_s"] = time.monotonic() - t
            t = time.monotonic()
            connections = count_connections(meas, params)
            timings["connections_s"] = time.monotonic() - t
        relay_records = meas.relays_seen.get("records", [])
        srd_seen = meas.relays_seen.get("srd_on_fb", {})
        loadavg["after_sweep"] = machine_load(bed.node("a1"))
        session.results(pd.DataFrame(rows))
        session.results(pd.DataFrame(connections), "connections")
        session.results(pd.DataFrame(meas.switch_rows), "switches")
        bench_where = nptcp_us = None
        if params.bench:
            t = time.monotonic()
            bench_rows, bench_where, nptcp_us = measure_bench(session, params, bed,
                                                              meas.nat_records, meas.order)
            timings["bench_s"] = time.monotonic() - t
            loadavg["after_bench"] = machine_load(bed.node("a1"))
            session.results(pd.DataFrame(bench_rows), "bench")
            relay_targets.archive_into(session)  # the relay benchmark the report shows
        far_where, far_placement = None, None
        if params.far and not isinstance(bed, InventoryTestbed):
            t = time.monotonic()
            far_rows, far_where, far_placement = measure_far(session, params, meas.nat_records,
                                                             meas.order)
            timings["far_s"] = time.monotonic() - t
            session.results(pd.DataFrame(far_rows), "far")
        session.results(pd.DataFrame(meas.nat_rows), "nat")
        session.note(s0={
            "methods": {
                "direct": "a1 -> b1 private address; fa and fb forward in the kernel (routes to "
                          "the other cluster's private prefix); no relay, not translated (fa's "
                          "NAT table, present for method 3, only tracks it)",
                "proxies": f"a1 -> fa {meas.plan.fa_priv}:{PROXY_PORT} (srdmux entry: every "
                           f"stream over one connection) -> fb {meas.plan.fb_pub}:{MUX_PORT} "
                           "(srdmux exit: a connection per stream) -> b1",
                "nat_srd": f"a1 -> fb {meas.plan.fb_pub}:{SRD_PORT}, routed by fa and masqueraded "
                           f"to {meas.plan.fa_pub} (nftables); SRD on fb -> b1",
            },
            "relays": relay_records,
            "srd_on_fb": srd_seen, "bench_where": bench_where, "far_where": far_where,
            "far_placement": far_placement,
            "timings": timings,
            "nptcp_direct_half_rtt_1b_us": nptcp_us, "loadavg": loadavg,
            "order": meas.order.record(
                "per repetition: fresh relays and connections, the sizes in an order shuffled "
                "for the repetition, the three methods in an order shuffled per size; the "
                "benchmark's paths in an order shuffled per repetition"),
            "tool": "harness.tools.pingpong (TCP_NODELAY, per-size budgets)",
        })

    def claims(self, data: RunData) -> pd.DataFrame:
        from . import analysis as s0_analysis

        frame = s0_analysis.claims(data.results, data.tables.get("bench"), data.meta,
                                   data.tables.get("far"), data.tables.get("switches"))
        relay = relay_targets.table_of_run(data.path)  # issue 27's targets, archived benchmark
        return frame if relay is None else pd.concat([frame, relay], ignore_index=True)

    def run_conditions(self, meta: dict) -> str:
        """Where each part of the run ran, for a pooled report's table of runs: the sweep on the
        host's namespaces or in a VM, the relay benchmark's lab, the distance sweep's (a TCG VM
        where the host has no netem). The third review read "each its own lab build and VM
        boot" as if the whole run were in a VM: only the distance sweep was."""
        where = (meta.get("placement") or {}).get("where") or ""
        s0 = meta.get("s0") or {}
        parts = [f"sweep: {_PLACES.get(where, where or 'unrecorded')}"] if where or s0 else []
        for name, key in (("relay benchmark", "bench_where"), ("distance sweep", "far_where")):
            if s0.get(key):
                parts.append(f"{name}: {s0[key]}")
        return "; ".join(parts)

    def figures(self, data: RunData) -> dict:
        from . import figures as s0_figures

        figures = {"latency": s0_figures.figure(data.results),
                   "ratios": s0_figures.ratio_figure(data.results)}
        if data.tables.get("bench") is not None and not data.tables["bench"].empty:
            figures["bench"] = s0_figures.bench_figure(data.tables["bench"])
        if data.tables.get("far") is not None and not data.tables["far"].empty:
            figures["far"] = s0_figures.far_figure(data.tables["far"])
        return figures
