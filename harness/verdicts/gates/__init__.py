"""Regime gates: named checks, computed from what a run measured and recorded, that a claim
must pass before it is judged at all.

A paper's claim holds in the paper's regime: its machines (a uniprocessor kernel, a CPU the
protocol keeps busy), its wire (frames serialised at the link's rate). A lab that is not in
that regime measures something else, and a verdict on it says more than the lab supports.
A claim therefore names, in its registration, the gates its regime needs (``gates`` of a
:class:`~harness.verdicts.claims.Claim`); every study's claims table passes through
:func:`~harness.verdicts.gates.registry.apply`
(not opt-in: :class:`~harness.studies.base.Study` wraps each study's ``claims``), and a claim
whose gate fails is *not testable here*, with the measured figures. Its estimate stays
beside it (what the lab gave) but decides nothing.

A gate reads facts the run recorded (``run.json``: the controller's CPUs, the VMs' vCPUs and
accelerator) or a table it measured; never a setting the lab was merely asked for. A fact
the run did not record fails the gate ("not recorded"), so an old run never passes by
omission.

The gates (:data:`~harness.verdicts.gates.registry.GATES`):

- ``no_oversubscription``: all vCPUs of the run's VMs fit on the host cores the run had
  (two VMs of 2 vCPUs on a 2-core host time-share four emulator threads on two cores: the
  host, not the kernel under study, sets the figures; ``vcpus_per_vm``: the vCPUs per VM
  the claim's rows need, when more than the run booted);
- ``accelerated_virtualisation``: VMs run under a hardware accelerator (KVM), for claims
  about CPU time or latency measured inside VMs (under TCG every guest instruction is
  emulated, so a guest's CPU time and its per-message latency are the emulator's);
- ``uniprocessor``: one vCPU per VM, the paper's uniprocessor kernel model (or VMs whose
  kernel booted on one CPU, ``maxcpus=1``/``nosmp``, the claim reading that level's rows);
- ``cpu_bound``: a measured busy share of a CPU at least a registered level
  (``table``, ``column``, ``min_pct``; ``rows`` = ``"column=value"`` selects the rows the
  claim rests on), for claims about the CPU cost of a protocol;
- ``serialising_wire``: the run's wire probe (run.json ``wire_probe``,
  :mod:`harness.lab.serialisation`) shows the wire serialising at least one of the message
  sizes ``min_size``..``max_size`` (bytes) the claim counts, for per-message latency and
  ping-pong throughput claims: a size the probe measured faster than a serialising wire
  of the link's rate carries is one the lab cannot show, and the claim's analysis leaves
  it out; with none left the claim is not testable here, with the probe's figures.
- ``links_verified``: every direction of the run's links whose name contains ``link``
  (e.g. ``wan``) passed the link verification before measuring (``run.json``'s
  ``link_verification``: rate and RTT against the topology), for claims that rest on that
  link being what the topology declares; a failed direction is named with its figures;
  ``direction`` (optional, e.g. ``switch->reducer``): only the direction the claim's data
  crosses counts;
- ``at_least``: a measured quantity at least a registered level on every row the claim
  rests on (``table``, ``column``, ``min``; ``rows`` as for ``cpu_bound``; ``what`` names
  the quantity in the figures; ``per`` a column to divide it by, row by row), e.g. the
  TCP window a socket reached against the BDP;
- ``at_most``: the same with ``max``, a registered ceiling, e.g. S0's relayed path carrying
  no more unshaped than the wire (the paper's relays were its bottleneck) or S4's sender
  throttled in fewer than a registered share of its CFS periods (limited, not starved).

Any gate may be registered with ``unmet`` words (:data:`~harness.verdicts.gates.registry.UNMET`):
it is then a *stated condition*, read and shown like a gate, but its claim is judged all the
same, the verdict's reason opening with the words and the figures where it fails (S0's relays:
the paper explains its bandwidth results by them, 000:105, and states nothing that limited them,
until its change #26). A gate registered with ``unstated`` words
(:data:`~harness.verdicts.gates.registry.UNSTATED`) names a cause the paper gives without stating
it of its testbed and decides; where such gates are the only ones to fail, the reason ends with
what the claim reads under the paper's stated testbed only (S0's relays since change #26: a region
the lab cannot reach is not judged, and no negative result is hidden).
- ``congestion_control``: a transport's points ran the paper's congestion control
  (``transport``, ``controller``; ``what`` names it in the figures, e.g. "coupled
  controller"), read from run.json's ``controllers``: what the measuring tool reported for
  that transport's points, and what the kernel offers
  (``net.ipv4.tcp_available_congestion_control``), for claims a different controller can
  move (S4: the paper's MPTCP ran the coupled BALIA, upstream Linux has no coupled one).
- ``cpu_throttled``: a CPU-limited sender was held at its limit: throttled in more than a
  registered share (``more_than``, 0..1) of its CFS periods (the cgroup's ``cpu.stat`` counters,
  ``cpu_throttled_periods`` / ``cpu_periods`` per point), summed over each group of points the
  claim compares (``groups``: selections separated by ``;``, within ``rows``), for claims about a
  CPU-bound sender (S4's anchored claims: the paper limited its sender's CPU, 004:66);
- ``stack``: a transport's points ran the paper's protocol implementation and measuring tool
  (``transport``; ``sysctl`` the paper's implementation is switched by, read from run.json's
  ``controllers.client_kernel``; ``tool`` the results' ``tool`` of the claim's rows; ``paper``
  what the paper ran, in words with its seed lines), its figures naming the run's own stack
  (kernel release and tool version as probed) and what it measured, for claims where the cost
  of each byte decides the figure (S4's anchored MPTCP claims: v0.95 and iperf in the paper,
  upstream v1 and iperf3 here).

A run on namespaces of the host kernel, or on a user's machines, has no VMs: the two VM
gates pass there (the kernel is a real one), ``uniprocessor`` needs the machines' CPU
count, which only VMs record today, and fails with that reason elsewhere.

The modules, one concern each, imported one way (``registry`` -> the gates -> ``facts``):

- :mod:`.registry`: :class:`Gate` as a claim registers it, :data:`GATES` (which gates exist,
  what each takes), :func:`evaluate` one gate and :func:`apply` a claims table's gates;
- :mod:`.facts`: :class:`RunFacts`, what the machine gates read from run.json, and
  :class:`GateResult`, what every gate gives;
- :mod:`.machines`: ``no_oversubscription``, ``accelerated_virtualisation``, ``uniprocessor``;
- :mod:`.levels`: ``cpu_bound``, ``at_least``, ``at_most`` (a measured quantity against a
  registered level);
- :mod:`.reachable`: ``reachable`` (the lab's measured ceiling against the claim's region);
- :mod:`.serialisation`: ``serialising_wire`` and the wire probe's figures in words;
- :mod:`.links`: ``links_verified`` and a failed link direction in words;
- :mod:`.congestion`: ``congestion_control``;
- :mod:`.cfs`: ``cpu_throttled`` (a CPU limit measured to bind);
- :mod:`.stack`: ``stack`` (the protocol implementation and tool, as recorded).
"""
