"""The ``stack`` gate: a transport's points ran the paper's protocol implementation and measuring
tool, as the run recorded them.

Where a claim's sender is bound by its CPU, what each byte costs it decides the figure, and that
cost belongs to the stack: the kernel's implementation of the protocol and the tool that feeds
it. S4's paper ran MPTCP v0.95 (004:60), the out-of-tree kernel switched by
``net.mptcp.mptcp_enabled`` (004:66), with ``iperf -P`` (004:66); this lab runs upstream Linux
MPTCP v1 with iperf3 (S4's third review: its 10 MPTCP streams, throttled in 100 % of their CFS
periods, carried about half what one stream did in every run).

The gate reads the run's record, never a setting asked for: the kernel's MPTCP sysctls (run.json
``controllers.client_kernel``; the paper's implementation has the ``sysctl`` it names), the tool
of the claim's rows (the results' ``tool``), and the kernel release and tool versions the run's
capability probe found (run.json ``capabilities``). Its figures say what the lab measured with
its own stack at those rows (mean goodput at the fewest and the most streams)."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from .facts import GateResult, RunFacts
from .levels import select_rows


def _probed(meta: Mapping, tool: str) -> tuple[str, str]:
    """The kernel release and ``tool``'s version string the run's capability probe recorded."""
    kernel = version = ""
    for caps in (meta.get("capabilities") or {}).values():
        if not isinstance(caps, Mapping):
            continue
        kernel = kernel or str(caps.get("kernel") or "")
        version = version or str((caps.get("tools") or {}).get(tool) or "")
    return kernel, version


def _measured(rows: pd.DataFrame, transport: str) -> str:
    """Mean goodput at the fewest and the most streams among ``rows`` ('' when not measured)."""
    if rows.empty or "streams" not in rows or "goodput_mbit" not in rows:
        return ""
    means = rows.groupby("streams").goodput_mbit.agg(["mean", "size"]).sort_index()
    picked = means.iloc[[0, -1]] if len(means) > 1 else means
    return f"{transport.upper()} " + ", ".join(
        f"{int(n)} stream{'' if int(n) == 1 else 's'} {row['mean']:.0f} Mbit/s (mean of "
        f"{int(row['size'])})" for n, row in picked.iterrows())


def stack(_facts: RunFacts, tables: Mapping[str, pd.DataFrame], params, meta: Mapping) -> GateResult:
    """``transport``'s points (``table``, default results, within ``rows``) ran the paper's
    implementation (the client kernel recorded the ``sysctl`` it is switched by) and its tool
    (every row's ``tool`` is ``tool``); ``paper`` says what the paper ran, with its seed lines."""
    name = "stack"
    transport, sysctl, want = str(params["transport"]), str(params["sysctl"]), str(params["tool"])
    paper = " ".join(str(params["paper"]).split())
    record = meta.get("controllers")
    kernel_record = record.get("client_kernel") if isinstance(record, Mapping) else None
    frame = tables.get(str(params.get("table") or "results"))
    if frame is None or "transport" not in frame or "tool" not in frame:
        return GateResult(name, False, f"the paper's stack: {paper}; this run's {transport.upper()} "
                          "points are not in its results, so what ran them is unknown")
    rows = select_rows(frame, params)
    if isinstance(rows, str):
        return GateResult(name, False, rows)
    rows = rows[rows.transport.astype(str) == transport]
    tools = sorted({str(t) for t in rows.tool.dropna()})
    if not isinstance(kernel_record, Mapping):
        implementation, same_kernel = "not recorded (run.json controllers.client_kernel)", False
    else:
        same_kernel = kernel_record.get(sysctl) not in (None, "")
        implementation = (str(record.get(transport) or transport) if not same_kernel
                          else f"{sysctl} = {kernel_record[sysctl]}")
        if not same_kernel:
            implementation += f" (its kernel has no {sysctl})"
    release, version = _probed(meta, tools[0] if tools else want)
    ran = ", ".join(tools) or "no point"
    lab = (f"this run's {transport.upper()} points: {implementation}"
           + (f", kernel {release}" if release else "")
           + f"; measured with {ran}" + (f" ({version})" if version and tools else ""))
    same_tool = tools == [want]
    measured = _measured(rows, transport)
    figures = (f"the paper's stack: {paper}; {lab}"
               + (f"; what this stack measured here: {measured}" if measured else ""))
    if not (same_kernel and same_tool):
        differs = [w for w, same in (("implementation", same_kernel), ("tool", same_tool)) if not same]
        figures += f" (differs in its {' and '.join(differs)})"
    return GateResult(name, same_kernel and same_tool, figures)
