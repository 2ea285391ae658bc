"""The ``congestion_control`` gate: a transport's points ran the paper's congestion control, as
the measuring tool reported it and the kernel offers it (run.json ``controllers``)."""

from __future__ import annotations

from collections.abc import Mapping

from .facts import GateResult, RunFacts


def congestion_control(_facts: RunFacts, _tables, params, meta: Mapping) -> GateResult:
    """The ``transport``'s points ran ``controller``: every point of that transport reported it
    (run.json ``controllers.reported_by_iperf3``), a controller the kernel offers
    (``controllers.client_kernel``). A run that recorded neither fails ("not recorded")."""
    name = "congestion_control"
    transport, want = str(params["transport"]), str(params["controller"]).lower()
    what = str(params.get("what") or "congestion control")
    paper = f"the paper's {what} ({want.upper()})"
    record = meta.get("controllers")
    if not isinstance(record, Mapping):
        return GateResult(name, False, f"the run recorded no congestion controls (run.json "
                          f"controllers), so whether its {transport.upper()} points ran {paper} "
                          "is unknown")
    kernel = record.get("client_kernel") or {}
    offered = str(kernel.get("net.ipv4.tcp_available_congestion_control") or "").split()
    reported = (record.get("reported_by_iperf3") or {}).get(transport)
    ran = sorted({str(c).lower() for c in reported or ()})
    if ran == [want]:
        return GateResult(name, True, f"every {transport.upper()} point ran {want} (as the tool "
                          f"reported), {paper}")
    if not offered:
        kernel_says = f"{paper}: the kernel's congestion controls were not recorded"
    elif want in offered:
        kernel_says = f"{paper} is available in this kernel, but the points did not run it"
    else:
        kernel_says = f"{paper} is not available in this kernel (it offers {', '.join(offered)})"
    how = str(record.get(transport) or "")
    said = (f"ran {', '.join(ran)} (as the tool reported)" if ran
            else "reported no controller")
    return GateResult(name, False, f"{kernel_says}; the {transport.upper()} points {said}"
                      + (f": {how}" if how and how.lower() not in ran else ""))

