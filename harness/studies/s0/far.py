"""S0's distance sweep: the front-to-front one-way delay swept, the paper's argument of 000:111.

"As the clusters move apart the front-to-front latency grows, so the latency
difference can be ignored." Measured on a lab of its own, the main lab's
topology with netem under the public link's shaper: per repetition the relays
start afresh, and for every delay of :data:`.registration.FAR_DELAYS_MS` (in an
order shuffled per repetition from the run's seed) the public link's netem is
set in both directions and one ping-pong client measures the three methods
(fresh connections, the methods shuffled per size) at the latency claims'
sizes.

netem: this host's kernel may lack it (this machine's does: CONFIG_NET_SCH_NETEM
is not set), and then the sweep's lab is placed in a VM like any lab that needs
a feature the host lacks (:func:`harness.lab.placement.decide`). Under TCG every
hop costs far more than on the host (the relay hop's fixed cost included), which
makes "negligible" harder to reach, not easier; the rows say where they ran.
The netem changes are made inside the lab's own namespaces, which go with it
(as :meth:`harness.lab.lab.Lab.calibrate_delays` does).
"""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from dataclasses import replace

from ...lab.lab import Lab
from ...lab.placement import decide, guest_capabilities, vm_offer
from ...lab.probe import probe
from ...progress import progress
from ...run.session import Session
from ...run.testbed import LabTestbed
from ...tools import pingpong
from ...tools.sockets import check_answers
from ..order import MeasuringOrder
from .design import LABELS, METHODS, SERVER_PORT, Measurement, Params, Plan, offloads_off, topology
from .measure import main_relays, method_path
from .registration import FAR_DELAYS_MS, LATENCY_SIZES

PUBLIC_ENDS = (("fa", "pub"), ("fb", "pub"))


def far_bed(session: Session, stack: ExitStack,
            params: Params) -> tuple[LabTestbed, str, dict]:
    """The sweep's lab (netem on the public link), on this host or in a VM: (testbed, where,
    its placement as run.json records a lab's: ``machines`` and the ``vm`` booted, whose
    accelerator the distance claim's gate reads)."""
    topo = topology(params, name="s0-relay-far", public_delay_ms=max(FAR_DELAYS_MS))
    host = session.bed.lab.host
    caps = session.capabilities.get("local") or probe(host)
    need = topo.required_features() | {"nat"}
    offer = vm_offer() if caps.missing(need) else None
    decision = decide(need, caps, offer, "study s0's distance sweep") if offer else None
    if decision is None or decision.where == "host":
        lab = stack.enter_context(Lab(topo, session.journal, host, capabilities=caps))
        return LabTestbed(lab), "namespace lab on this host", {"where": "host", "machines": 1}
    from ...vm.fleet import boot_lab_vms

    vms, _nics = boot_lab_vms(topo, "s0far", session.journal, stack)
    vm = vms[""]
    vm_caps = guest_capabilities(vm, caps, decision)
    lab = stack.enter_context(Lab(topo, session.journal, vm, capabilities=vm_caps,
                                  machines_end_with_run=True))
    placement = {"where": "vm", "machines": 1, "vm": vm.boot.to_dict()}
    return LabTestbed(lab), f"namespace lab in a VM ({decision.reason})", placement


def set_delay(bed: LabTestbed, delay_ms: float) -> None:
    """The public link's netem delay, both directions, changed in place."""
    for node, ifname in PUBLIC_ENDS:
        plan = replace(bed.lab.egress_plan(node, ifname), delay_us=int(round(delay_ms * 1000)))
        bed.node(node).run(["tc", *plan.netem_change_command(bed.device(node, ifname))],
                           timeout=30)


def measure_far(session: Session, params: Params, nat_records: list,
                order: MeasuringOrder) -> tuple[list[dict], str, dict]:
    """The sweep: (rows, where its lab ran, its placement)."""
    with ExitStack() as stack:
        bed, where, placement = far_bed(session, stack, params)
        session.apply(*offloads_off(bed))
        meas = Measurement(session, bed, Plan.of(bed), nat_records=nat_records, order=order)
        rows: list[dict] = []
        a1 = meas.node("a1")
        # a Python start in a TCG guest on a loaded host: 10 s was seen to pass (load 27)
        with pingpong.server(meas.journal, meas.node("b1"), meas.plan.b1, SERVER_PORT,
                             timeout=60), \
                progress(params.far_repetitions, "s0 distance sweep", unit="repetition") as bar:
            check_answers(meas.journal, a1, meas.plan.b1, SERVER_PORT, "the sweep's direct path")
            check_answers(meas.journal, meas.node("fb"), meas.plan.b1, SERVER_PORT,
                          "the relays' target")
            for rep in range(1, params.far_repetitions + 1):
                with main_relays(meas, check=False), ExitStack() as paths:
                    ways = {m: paths.enter_context(method_path(meas, m)) for m in METHODS}
                    for delay in order.shuffle(FAR_DELAYS_MS):
                        set_delay(bed, delay)
                        rows += far_point(meas, a1, ways, rep, delay, where)
                bar.step(f"repetition {rep}")
    return rows, where, placement


def far_point(meas: Measurement, a1, ways: dict, rep: int, delay_ms: float,
              where: str) -> list[dict]:
    """One delay of one repetition: the three methods at the latency claims' sizes."""
    started = time.monotonic()
    rtt_s = 2 * delay_ms / 1000
    result = pingpong.client(meas.journal, a1, {m: (w.host, w.port) for m, w in ways.items()},
                             meas.order.shuffle(LATENCY_SIZES), max(0.05, 10 * rtt_s), 0,
                             stream=False, warmup=3, seed=meas.order.draw_seed())
    meas.session.raw(f"far-r{rep}-{delay_ms:g}ms.json", json.dumps(result, indent=1))
    rows = []
    for method, target in result["targets"].items():
        for point in target["points"]:
            lat = point["latency"]
            rows.append({"method": method, "label": LABELS[method], "repetition": rep,
                         "one_way_delay_ms": delay_ms, "size": point["size"],
                         "order": point["order"], "half_rtt_us": lat["median_us"],
                         "half_rtt_p10_us": lat["p10_us"], "half_rtt_p90_us": lat["p90_us"],
                         "iterations": lat["n"], "where": where,
                         "wall_s": time.monotonic() - started})
    return rows
