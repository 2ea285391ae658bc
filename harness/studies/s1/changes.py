"""S1's registration, its changes: each change of a claim or of the design made after
archived runs existed, with its date and reason (the claims and the design themselves are
:mod:`harness.studies.s1.registration`, whose constants the texts quote).
"""

from __future__ import annotations

from ...verdicts.registration import DesignChange
from .registration import LARGE_MIN, WIRE_BOUND_FRACTION

#: Changes of a claim or of the design after archived runs existed.
CHANGES: tuple[DesignChange, ...] = (
    DesignChange(
        "2026-11-26", "Nagle irregularity: the RMS distance of each interior point from the "
        "line through its neighbours in log2 bandwidth against log2 size (was: the RMS second "
        "difference of log2 bandwidth over consecutive sizes)",
        "the second difference ignores how far apart the sizes are: S1's sizes 4, 64, 512, "
        "1024 B are 4, 3 and 1 doublings apart, so a perfect power law scored 1.58 doublings "
        "and a smooth saturating curve 1.66 -- 'irregular' by construction. The new measure "
        "is 0 for a power law and 0.14 for 400*s/(s+2000) at those sizes (issue 24 review; "
        "unit test). The region (Nagle at least twice as rough) is unchanged.",
        ("s1.tcp_nagle_irregular",)),
    DesignChange(
        "2026-11-26", "bw_large: region above 1 (was between 1 and 1.25)",
        "the upper bound 1.25 was not in the paper's words ('다소 우수', somewhat better, "
        "001:56 names no number); only 'better' is, so the rule is 'above 1' (issue 24 "
        "review).", ("s1.verbs_bw_large",)),
    DesignChange(
        "2026-11-26", "hw_bandwidth: region at least 2x (was above 1)",
        "'월등히 우수' (far better, 001:72) is more than better; 'above 1' would pass any "
        "better. The text has no number, so 'far' is read as at least twice; the claim is "
        "not testable in this lab (no RDMA NIC), so no outcome informed it.",
        ("s1.hardware_bandwidth",)),
    DesignChange(
        "2026-11-26", "validity: a bandwidth point of 0 Mbit/s (or none) is a failed point "
        "(validity.Invalid) that makes the bandwidth claim resting on it invalid, and a "
        "polling/events CPU share above 100 % of the one thread measured is impossible "
        "(validity.check_share) and makes the CPU claim invalid (were: dropped silently; "
        "taken as measured)",
        "a 0 Mbit/s row was left out of the geometric mean without a word, and the CPU claim "
        "rested on shares of 117 % and 102 % for one single-threaded client, which no "
        "process can use: the share counts CPU over the process's life net of a 5-iteration "
        "floor against only its round trips' wall time, so set-up CPU the floor did not "
        "take off lands in a shorter interval (issue 24 review).",
        ("s1.verbs_bw_better_small", "s1.verbs_bw_large", "s1.polling_costs_cpu")),
    DesignChange(
        "2026-11-26", "verdict repetitions 15 -> 10 (the count fixed before any data)",
        "15 was chosen (2026-11-26 01:28) from two 10-repetition runs' outcomes: the two "
        "undecided claims' intervals asked for about 12 and 16. A count moved after seeing "
        "outcomes, so the count registered before data is registered again, before the "
        "first run of this design."),
    DesignChange(
        "2026-11-26", "polling_cpu: region above 50 percentage points (was above 0)",
        "'above 0' passes any process with a hair more CPU, noise included: a region a "
        "client doing nothing extra could pass (issue 24 review). The paper's 'uses the CPU "
        "while it polls' means on the CPU for its waits, most of a round trip: more than "
        "half of the round trips' time beyond the events client. Chosen from the words; the "
        "last reference's interval straddled 0 (inconclusive), so no outcome is flattered.",
        ("s1.polling_costs_cpu",)),
    DesignChange(
        "2026-11-27", "polling_cpu quantity: the client thread's CPU time during its measured "
        "exchanges only (/proc/PID/schedstat and the clock read when perftest prints its "
        "results header and again at its result row) over that interval's wall time (was: "
        "the process's whole-life CPU net of a 5-iteration run's, over the round trips' "
        "time); the 5-iteration floor invocation is no longer run. The interval is read on "
        "the scheduler's clock that counts the CPU time: against `date` an events client "
        "read 36-124 % of one thread inside the TCG guests (a quick run, 2026-11-27)",
        "made AFTER the reference 20261126T225254Z-faa2c6 showed invalid points (one-thread "
        "shares of 103-120 %, the claim 'invalid' at +53.6 pp): that is why it changed. "
        "Start-up, QP set-up and exit under TCG vary by more than the floor took off, and "
        "landed in the round trips' shorter time. CPU over wall time of one thread in one "
        "interval cannot exceed 100 % (unit test: a busy loop through the wrapper reads at "
        "most 100 %, a sleeper about 0). The region (above 50 pp) is unchanged.",
        ("s1.polling_costs_cpu",)),
    DesignChange(
        "2026-11-27", "order: the sizes too are shuffled, per method and repetition, from the "
        "recorded seed (were ascending within each method)",
        "issue 24: every factor's order randomised per repetition so drift is paired out; "
        "each perftest size is already an invocation of its own in the sweep's script, so "
        "its sizes can run in any order. Not prompted by an outcome."),
    DesignChange(
        "2026-11-27", "latency and bandwidth claims judged against qperf's tcp_lat / tcp_bw "
        "at every size (method tcp-qperf; C against perftest's C), latency as means on both "
        "sides (qperf reports no median); the Python ping-pong/streaming tool (TCP_NODELAY) "
        "becomes the cross-check in each verdict's note and keeps the Nagle claim alone",
        "issue 24: the TCP side was the harness's Python tool while verbs were C, so the "
        "comparison mixed interpreters with transports (qperf's tcp_lat read 791 us at 64 B "
        "where the Python tool read 1399-1677 us). Planned in the issue before the reference "
        "20261126T225254Z-faa2c6; made after it (its outcomes: 4 B 0.87x inconclusive, "
        "every size 0.22x, bandwidth 0.097x and 0.27x not reproduced). Regions unchanged.",
        ("s1.latency_tcp_over_verbs_4b", "s1.verbs_below_tcp_every_size",
         "s1.verbs_bw_better_small", "s1.verbs_bw_large")),
    DesignChange(
        date="2026-11-27",
        what="bw_large: judged only where both stacks are wire-bound -- the wire shaped (new "
             "parameter wire_mbit, default 0: unshaped) and each stack's median goodput at "
             f"every size >= {LARGE_MIN} B at least {WIRE_BOUND_FRACTION:.0%} of the payload its "
             "framing carries over the wire; otherwise not testable, naming the rates and the "
             "wire (was: judged on any wire). With the wire shaped, every bandwidth point "
             "(verbs and TCP, all bandwidth claims) is checked against its stack's payload "
             "bound and is invalid above it. The regime text of every claim now says the wire "
             "is unshaped unless wire_mbit shapes it. Region, sizes, metric, repetitions and "
             "order unchanged",
        why="made AFTER the reference 20261127T040951Z-36b3c9 showed 0.30x [0.26, 0.36] "
            "(not reproduced): its own registered regime said the paper's regime is both "
            "stacks running into the 100 Mbit/s Fast Ethernet wire and ours CPU-bound, yet the "
            "claim was judged outside that regime (a referee's point, issue 24). That run, "
            "unshaped: ib_send_bw 48 Mbit/s against qperf tcp_bw 187 at 64 KiB (medians) -- a "
            "CPU contest under TCG. The 90 % is read from the words 'run into the wire', not "
            "from any data: it was fixed before the first run with a shaped wire",
        claims=("s1.verbs_bw_large", "s1.verbs_bw_better_small", "s1.tcp_nagle_irregular",
                "s1.latency_tcp_over_verbs_4b", "s1.verbs_below_tcp_every_size",
                "s1.polling_lowers_latency", "s1.polling_costs_cpu")),
    DesignChange(
        date="2026-11-27",
        what="s1.smp_latency_larger registered and measured (a cpus factor, levels 1 and 2 "
             "online vCPUs in both VMs, in a random order per repetition from the run's seed; "
             "at level 1 CPU 1 is taken offline in both VMs and ib_send_lat -e, qperf tcp_lat "
             "and ib_send_lat (polling, cross-check) are measured at every size; at level 2 "
             "every method as before). Every other claim keeps its rows, now labelled cpus=2, "
             "and its region, metric, sizes and repetitions; their regime text says their "
             "rows are the 2-vCPU level's",
        why="issue 24: the paper's SMP observation (001:52) was not measured (DESIGN smp "
            "said so). Registered before any data of it existed: no run had measured a 1-CPU "
            "level when the claim, its quantity, stacks and region were written. The methods' "
            "order within a repetition now follows the levels' draw from the same seed, so "
            "a seed gives another order than before this change. After the first data of "
            "it (the small integration run of 2026-11-27 09:02: quick sizes, 2 repetitions, "
            "2.41x) only its regime's wording was corrected (it had taken over the other "
            "claims' 'both vCPUs online'); its quantity, stacks, sizes, region and "
            "repetitions are as first written",
        claims=("s1.smp_latency_larger", "s1.verbs_bw_large", "s1.verbs_bw_better_small",
                "s1.tcp_nagle_irregular", "s1.latency_tcp_over_verbs_4b",
                "s1.verbs_below_tcp_every_size", "s1.polling_lowers_latency",
                "s1.polling_costs_cpu")),
    DesignChange(
        date="2026-11-27",
        what="bandwidth claims: TCP measured with the same count of messages as verbs "
             "(method tcp-count: msgcount, a C program sending bw_iterations messages per "
             "size on a connection of its own and timing them from the first write to the "
             "receiver's acknowledgement that it read them all, as ib_send_bw times its -n "
             "messages from the first post to the last completion; Nagle on, as qperf's "
             "tcp_bw it replaces). Was: qperf tcp_bw for 1 s, thousands of messages against "
             "perftest's 300. qperf tcp_bw, msgcount with TCP_NODELAY (tcp-count-nodelay, "
             "new) and the Python streaming tool are cross-checks in the verdicts' notes. "
             "A size msgcount could not finish is a row without a rate: a failed point, "
             "shown, never dropped. Regions, sizes, repetitions and the verbs side "
             "unchanged",
        why="issue 24 asks for equal message counts on both sides (it found 50 verbs "
            "messages against 2000 TCP). qperf's -n hangs its socket tests (measured "
            "2026-11-27), so the count needed a tool of its own. Made AFTER the reference "
            "20261127T091330Z-3115f2 (bandwidth <= 512 B 0.04x [0.03, 0.06], not reproduced; "
            "large messages not testable, the wire unshaped); prompted by the issue, not by "
            "that outcome. Before registering, msgcount on the host's loopback was seen to "
            "take ~41-44 ms for 300 messages of 4 and 64 B with Nagle on (the last segment "
            "waits for the receiver's delayed ACK) and 0.2 ms with TCP_NODELAY: Nagle stays "
            "on because the registration already named TCP's default socket (qperf sets no "
            "TCP_NODELAY), and the TCP_NODELAY count is shown beside it",
        claims=("s1.verbs_bw_better_small", "s1.verbs_bw_large")),
)
