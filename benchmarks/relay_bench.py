#!/usr/bin/env python3
"""Benchmark the Stream Relay Daemon (srd) against kernel forwarding and every peer relay.

Lab: three network namespaces in a line, unshaped veth links, 198.18.0.0/15:

    client 198.18.0.1 -- 198.18.0.2 middle 198.18.1.1 -- 198.18.1.2 server

Paths from client to server, each through the middle namespace:
  forward  kernel IP forwarding in the middle (the NAT/kernel baseline)
  socat    socat -b 262144 ...,nodelay in the middle (a copying user-space relay)
  haproxy  HAProxy 2.6, mode tcp, option splice-request/splice-response (issue 39)
  nginx    nginx's stream module, proxy_pass with its documented defaults (issue 39)
  gosplice Go's standard library relay: io.Copy between TCPConns is splice(2) (issue 39)
  srd      our relay in the middle (splice, zero-copy)
  (each peer's configuration and the documentation it follows: harness.relay.peers)
  socat2, srd2, ...   two relays of that kind in a row (S0's "proxies" path): the first
           listens on 198.18.0.2 and connects to the second on 198.18.1.1, which
           connects to the server; both run in the middle namespace, so the hop
           between them is that namespace's loopback, and every byte crosses four
           TCP terminations in user space instead of two.

Per path: iperf3 TCP throughput (client -> server, JSON) with the sender's
retransmits and the middle namespace's own retransmitted segments (the relays'
outgoing sockets), the relay process group's own CPU seconds (/proc) and the host's
(/proc/stat) per GB, 1-byte and 1-KiB ping-pong half-RTT with TCP_NODELAY (a small Python
client/server, median of many round trips) and, if NetPIPE is installed, NPtcp's 1-byte
and 1-KiB latency. The machine is shared (2 cores), so everything runs
``--runs`` times, the paths in an order shuffled per run from ``--seed``
(recorded); the summary reports the best value, the spread and the per-run
ratios, each peer's ratio to srd with its 95 % interval over the runs (Student t below
30 runs), srd's throughput as a share of what a relay costing no CPU would reach, and the
targets of :mod:`harness.relay.targets` (S0's peer rows among them) judged on the runs. A
peer whose program is missing is reported absent with its install command (``--peers``
chooses the peers).

Usage (root):  python benchmarks/relay_bench.py [--runs 3] [--duration 5] [--out FILE]
``--out`` never replaces an existing file unless ``--replace`` is given (the
repository's copy, data/benchmarks/relay.json, is in git). Everything it creates
(namespaces, links, processes, temp files) is recorded in a journal and removed
at the end, also on error or Ctrl-C.

Notes: where srd lost to kernel forwarding (2026-11-27, srd 1.0, host load 7-13
from other engineers' VMs, so absolute rates are 3-10x below an idle machine's)
- Socket buffers: srd sets neither SO_SNDBUF nor SO_RCVBUF (tests/integration/relay
  checks it on its live sockets), so both autotune: during iperf3 its client-side
  socket showed rcv_space 4.6 MB and Recv-Q 0 (it drains at once), its target-side
  socket a 3.9 MB Send-Q with 2.5 MB not yet sent; socat's client-side socket held
  12.7 MB unread and advertised a zero window 552-861 times in 4 s (nstat
  TcpExtTCPToZeroWindowAdv in the middle), srd's 2-619 times.
- Retransmits are not losses at a buffer: no softnet backlog drop
  (/proc/net/softnet_stat), no prune, collapse or receive-queue drop in any
  namespace; the senders saw DSACKs and reordering (ss: dsack_dups, reord_seen;
  nstat TcpExtTCPSACKReorder, TcpExtTCPOFOQueue at the receivers). A veth without
  NAPI queues each packet on the sending CPU's backlog, so a sender that moves
  between the two CPUs reorders its own flow, and RACK retransmits before the late
  segments arrive. Kernel forwarding retransmitted too under this load (2-363 per
  4 s test); socat's slow reads keep the sender window-limited (fewer segments in
  flight to reorder), which is why its counts were lower in S0's quick run.
- Pipe and chunking: the pipe is 1 MiB (fs.pipe-max-size here), splices move up to
  1 MiB at once (strace: 1048576-byte splices in and out), SPLICE_F_MORE is not used
  (it corks: 416 ms half-RTT seen) and TCP_NODELAY is on every socket. 64 KiB,
  256 KiB and 1 MiB pipes gave 2.0-2.6, 2.1-3.0 and 1.7-2.4 Gbit/s under load 12-13:
  no difference the noise could show.
- Wake-ups were the waste: one thread, edge-triggered epoll, and while the pipe was
  full and the target's send buffer too, every segment arriving on the client
  socket raised a new EPOLLIN edge. strace over 0.3 s of iperf3: 454 epoll_wait,
  413 recvfrom, 767 splice, most wake-ups ending in one splice and one recv that
  both answered EAGAIN; perf stat over 3 s: 1038 wake-ups, 1132 recvfrom, 0.144
  CPUs at 2.3 Gbit/s. srd now drops EPOLLIN from a source whose pipe cannot drain
  and takes it back (EPOLL_CTL_MOD re-polls) when the pipe drains, and a write edge
  pumps a direction only when its pipe holds bytes: 478 wake-ups, 34 recvfrom,
  58 epoll_ctl, 0.088 CPUs at 2.1 Gbit/s; interleaved 3 s tests gave srd 2.7-3.2
  Gbit/s against 2.2-2.3 before (forwarding 2.5-4.3, socat 1.6-1.8).
- What is left is the kernel's work, not srd's: a relayed byte crosses two more
  TCP stacks (receive, ACKs, send) than a forwarded one, on two cores that also run
  the iperf3 sender and receiver. perf is installed (linux-perf); srd itself used
  under a tenth of a core.
- The middle's own retransmits (srd's outgoing socket) are spurious too: over 4 s
  tests nstat in the middle counted TcpRetransSegs 1145 and 15653 with
  TcpExtTCPDSACKRecvSegs 1055 and 15104 (the server had the originals), nearly all
  fast retransmits; socat's 693 and 13. srd keeps its outgoing socket's queue full, so
  that socket transmits both from srd's splice and from ACK processing in softirq on
  the other CPU, two queues for one flow. GRO on the four veth ends (NAPI) did not
  remove it under this load (srd 1753 and 7972, socat 3791 and 19, forwarding's
  sender 1911 and 5603).
- The load-12 result archived before (5 runs: one srd 0.89x [0.64, 1.23] of forwarding,
  inconclusive) was replaced by a run at load 2.2-5.3 (one srd 0.71x [0.66, 0.77], two
  0.52x; the sender's retransmits, median per test, srd 92548 against socat 2743).

Notes of 2026-11-27, srd 1.1 (experiments side by side in one lab, the paths shuffled per
run, iperf3 5 s; "ratio" is throughput / forwarding's in the same run):
- (a) TCP_NOTSENT_LOWAT on both of srd's sockets (``--notsent-lowat``): a splice into a
  socket stops once that many bytes wait unsent and EPOLLOUT returns only below it, so
  the queue follows the ACKs instead of holding the whole 1 MiB pipe. Kept, 128 KiB.
  Load 1-3, 3 runs: sender retransmits srd (unset) 48903 / 76722 / 99706, 128 KiB
  2919 / 2296 / 2758, 512 KiB 13775 / 5443 / 6742, 1 MiB 15577 / 13832 / 21219, socat
  27837 / 17517 / 20211; the middle's own 22.6k-63.5k unset, 1.3k-2.0k at 128 KiB.
  Ratios unset 0.65 / 0.53 / 0.68, 128 KiB 0.63 / 0.54 / 0.64, socat 0.69 / 0.50 / 0.66.
  Load 2.6-5.5, 3 runs: unset 17898 / 124717 / 7910, 32 KiB 1834 / 6149 / 3048,
  128 KiB 19838 / 6731 / 1837, 256 KiB 6093 / 5098 / 553, socat 18650 / 8043 / 13259;
  two srds unset 9943 / 16858 / 22182, 32 KiB 1425 / 54 / 852, 128 KiB 1422 / 1411 / 1489,
  two socats 15513 / 3245 / 9193. Load 5-7.4, 5 runs: 32 KiB 599 / 3713 / 70 / 479 / 450
  (ratio 0.56-0.84), 128 KiB 104 / 164 / 2626 / 667 / 2109 (0.44-0.83), socat 1450-11407
  (0.55-0.86); two srds at 128 KiB 797-2026 (0.38-0.48), two socats 2-5886 (0.38-0.68).
  At 32 KiB the middle retransmitted nothing (0-19 segments in 13 tests) and 64 KiB,
  256 KiB did as well as 128 KiB within the noise; 128 KiB is the default because it
  measured the same and leaves the relay 4x longer to wake up before a socket runs dry
  (32 KiB drains in 26 us at 10 Gbit/s). The relay's own CPU rose from 0.20-0.33 to
  0.35-0.48 cores (more, smaller splices), which the host's total did not show.
- (b) Splicing at most 64 KiB per call into the socket (instead of all the pipe holds):
  dropped. The loop refilled the queue at once, so retransmits stayed as high
  (13426 / 118867 / 75375 against srd's 48903 / 76722 / 99706) and ratios 0.66-0.72.
  Cutting each splice to the room TCP_INFO reports is what TCP_NOTSENT_LOWAT does in the
  kernel already (the splice returns short), without the extra getsockopt per splice.
- (c) SO_RCVLOWAT on the source: dropped unmeasured for throughput, because it breaks a
  relay: a socket with SO_RCVLOWAT 64 KiB holding 1 byte stays unreadable (poll answered
  nothing for 1 s, until the peer's FIN), so a ping-pong through srd would stall.
- (d) srd pinned to one CPU (taskset -c 0), with and without 128 KiB: no help. Pinned
  alone retransmitted 22425 / 195355 / 136262 (ratios 0.61-0.76); pinned with 128 KiB
  1905 / 10385 / 14204 (0.68-0.88) against 128 KiB unpinned 2294 / 9626 / 6006
  (0.60-0.96): ACKs are processed in softirq on whichever CPU the receiver ran on.
- Where the rest of the gap is: CPU. Every relayed test kept both CPUs >= 1.85 busy
  (/proc/stat, all CPUs, during iperf3); forwarding did too under load, and at load 1-3 it
  moved 13-14 Gbit/s with 1.3-1.5 busy, i.e. forwarding was not always CPU-bound when the
  relays were. Host CPU per GB moved, load 2.6-5.5: forward 1.40-1.70 core-s, srd at
  128 KiB 1.54-2.37, socat 2.20-2.27, two srds 3.03-3.56, two socats 2.73-3.26. srd
  itself is a fifth to a quarter of its path's CPU, so on saturated CPUs even a relay
  costing nothing would reach only its ratio / (1 - share). The
  benchmark now reports this per run (``summary.cpu_analysis``: the throughput ratio over
  the CPU-cost ratio, whether both paths saturated, the relay's share, the ratio a free
  relay would reach), with the caveat that busy time includes other work on a shared
  machine. On two cores shared by the iperf3 sender and receiver, the extra two TCP
  terminations per relay (receive + ACK + send in softirq) are what the relay costs; the
  relay's own ceiling shows on a machine with >= 4 cores where iperf3's sender and
  receiver are pinned to cores the relay and its softirqs (RPS/IRQ affinity of the
  middle's veths) do not use, so that neither path is CPU-bound.
- Result, data/benchmarks/relay.json (srd 1.1, ``--runs 5``, 267 s, load 1.4 -> 6.7 as
  other engineers started work; paired per run): one srd 0.77x [0.55, 1.08] of forwarding
  (0.58-1.13 per run, inconclusive against 0.9x), two in a row 0.48x [0.39, 0.60] (not
  met); srd / socat 0.70-1.72x, srd2 / socat2 0.56-1.73x. The sender's retransmits per
  test, srd 3 / 52 / 2543 / 4774 / 5033 against socat 4970-15562: met (srd minus socat
  -5822 [-10604, -1040]); two srds 262-3298 against two socats 376-8366 (inconclusive,
  [-5156, 100]); forwarding's own sender 17-54039; the middle's own: srd 48-3652, socat
  77-14743. CPU: in 16 of the 20 relay tests both the path and forwarding kept the two
  CPUs >= 1.8 busy, and there the throughput ratio was the CPU-cost ratio (their quotient
  0.90-1.07, median 0.96); srd was 13-24 % of its path's CPU, socat 14-33 %, and a relay
  costing no CPU would have reached 0.70-1.31x (median 0.83x) for one relay and
  0.55-0.91x (median 0.73x) for two: on this machine the gap is the kernel's TCP work
  of the extra terminations, not srd. Added half-RTT: runs 3-5 read 4.3-5.2 us for one
  srd and 4.2-4.4 us per relay for two; in runs 1-2 forwarding's own Python ping-pong
  read 40.3 and 29.4 us (NPtcp in the same tests 4.2 and 4.1 us) while the load rose, so
  those runs' differences are negative (-30.5, -20.0 us) and the one-srd target is
  inconclusive, the two-srd one "met" on a mean that includes them.
Notes of 2026-11-29, srd 1.2 against the peers (issue 39; harness.relay.peers configures
each as its documentation does; the table is in docs/studies/s0.md):
- Result, data/benchmarks/relay.json (``--runs 5 --duration 4 --iters 2000``, 902 s, load
  25 -> 15 from six other sessions): one relay, medians over runs, srd 1.95 Gbit/s against
  Go's splice relay 2.67, socat 1.76, HAProxy 1.66, nginx 1.31 (forwarding 2.57); the
  relay's own CPU per GB srd 0.573 core-s, Go 0.345, HAProxy 0.534, socat 0.727, nginx 1.017.
  S0's peer targets: throughput 0.71x [0.48, 1.04] of Go's (one), 0.92x [0.69, 1.23] (two),
  inconclusive; CPU per GB 1.63x [1.44, 1.84] of Go's (one), 1.32x [1.23, 1.42] of HAProxy's
  (two), not met. srd reached 0.93x [0.84, 1.03] and 0.87x [0.83, 0.91] of the free-relay
  bound (``summary.srd_share_of_free_relay_bound``).
- Why srd costs more CPU per byte than Go's relay: its TCP_NOTSENT_LOWAT (128 KiB, srd
  1.1). Interleaved 3-run experiments, ``--peers gosplice --no-nptcp``, load 15-16:
  TCP_NOTSENT_LOWAT 0: srd's CPU per GB 0.84x [0.71, 0.99] of Go's (one relay), 0.99x
  [0.85, 1.14] (two), throughput 1.19x [0.53, 2.68] and 1.27x [0.79, 2.02]; 128 KiB: 1.45x
  [1.12, 1.88] and 1.17x [1.07, 1.28], throughput 0.70x and 0.83x. Loopback, perf stat on
  the relay over 4 s iperf3 tests: srd 0.29-0.37 core-s/GB at 128 KiB, 0.18-0.21 at 0, Go
  0.31-0.32; syscalls per GB srd 3.9-4.8k, Go 6.3-7.0k (Go wakes per goroutine, 2.8-3.0k
  context switches per GB against srd's 0.8-1.2k). A small unsent queue makes the socket
  transmit from srd's splice in srd's own context rather than from ACK processing in softirq.
  The cap stays for now: it was kept for the sender's retransmits at load 1-7 (5-50x fewer),
  and this machine stayed at load 13-25 all session, where both settings retransmitted
  little (srd 1-95 per test without it, 11-332 with it). Re-measure both on a quiet machine
  before changing RelaySpec's default.
- Other peers' half round trips: nginx's stream module and socat wake once per message
  like srd; Go's relay adds 14-16 us per relay at 1 B (goroutine hand-offs through the
  netpoller) and HAProxy 23 us at 1 B but 7 us at 1 KiB in this loaded run; the Python
  ping-pong's medians moved by tens of us with the load, so these differences are
  indicative only.
Notes of 2026-11-29, srd 1.3: TCP_NOTSENT_LOWAT left to the kernel (issue 39 item 3;
benchmarks/relay_profile.py counts per GB what each relay does, interleaved like this one):
- Syscalls and wake-ups are not where srd's CPU goes. perf stat on the relay over 2-3 s iperf3
  tests (one relay, per GB): srd at 128 KiB 5.0-7.9k syscalls (splice 4.4-6.5k of which
  1.0-1.3k EAGAIN, epoll_wait 0.5-1.1k, epoll_ctl 0.03-0.08k, recvfrom + sendto of the copy
  mode 0.05-0.3k), 1.3-2.2k context switches; at 0 5.6-8.7k syscalls, epoll_wait 1.0-1.6k,
  1.3-2.3k context switches (without the cap srd is woken by arriving data more often, not
  less); 256 KiB, 512 KiB and 1 MiB 5.1-9.3k; Go's relay 8.8-11.5k (splice 3.7-4.6k,
  epoll_pwait 1.5-2.3k, nanosleep 1.7-3.4k, futex 0.7-1.1k), 4.2-6.2k context switches;
  HAProxy 32k (splice 31k: its default pipe size). Two relays: srd 13.8-17.3k at 128 KiB,
  8.6-12.4k at 0, Go 20-29k, HAProxy 74k. The copy mode costs nothing in bulk transfers.
- Where it goes (perf record -g on the relay, share of its samples with callees): the TCP
  transmit path. tcp_write_xmit 58 % of srd's samples at 128 KiB, 36 % at 0, 31 % in Go's
  relay; tcp_splice_read 21-30 %, epoll_wait 2-4 %, outside system calls (srd's own code) 2 %. With a small
  unsent queue the socket sends each segment from srd's splice, in srd's context; without
  the cap most of it is sent from ACK processing in softirq, charged to whichever process
  the ACK interrupted, as for every peer (none sets TCP_NOTSENT_LOWAT).
- Interleaved, ``relay_profile.py --variant srd128=srd:lowat=131072 --variant
  srd0=srd:lowat=0 --variant go=gosplice --variant hap=haproxy --variant socat=socat --hops
  1,2 --runs 5 --duration 3`` (data/benchmarks/relay-profile-20261129.json, load 0.3 rising to
  5.6), paired per run, geometric mean [95 % t]: without the cap srd's own CPU per GB was
  0.75x [0.66, 0.85] (one relay) and 0.72x [0.67, 0.78] (two) of the cap's, its throughput
  1.12x [0.77, 1.63] and 1.12x [0.95, 1.33], the host's CPU per GB 0.89x [0.55, 1.44] and
  0.93x [0.80, 1.06]. Against the cheapest peer: 0.83x [0.66, 1.05] of Go's (one relay; 1.10x
  [0.84, 1.45] with the cap) and 0.97x [0.85, 1.09] of HAProxy's (two; 1.34x [1.17, 1.53]
  with the cap). The reason the cap was kept, re-measured: the sender's retransmits per 3 s
  test, medians, srd 4033 without the cap, 1809 with it, socat 1627, Go 545, HAProxy 5249;
  srd minus socat +3512 [-456, 7480] without, +361 [-2509, 3230] with; two relays +302 [-181,
  785] and +202 [-540, 944]; the middle's own +4225 [-1575, 10025] (one) and +6850 [1793,
  11908] (two) against the cap. So the cap still halves the retransmits of one relay (not
  the 5-50x of srd 1.1's load-1-7 runs), but they are spurious (DSACKs, see above), and
  neither throughput nor the host's CPU per GB was worse without it: the default is now 0,
  as every peer leaves it; ``--notsent-lowat`` (``RelaySpec.notsent_lowat``) keeps the cap
  for a run that wants it.
- Two relays again at load 2.3-3.1 (``--variant srd128=srd:lowat=131072 --variant
  srd0=srd:lowat=0 --variant socat=socat --hops 2 --runs 5 --duration 3``,
  data/benchmarks/relay-profile-20261129-two.json): without the cap throughput 1.12x [1.10,
  1.15], srd's CPU per GB 0.69x [0.66, 0.72], the host's 0.93x [0.90, 0.97]; the sender's
  retransmits the same (-147 [-1400, 1105] per test), the middle's own +9941 [8157, 11726].
  Against two socats both settings retransmitted more at this load: +1877 [1051, 2704]
  without the cap, +2024 [324, 3725] with it.
- Result with srd 1.3, data/benchmarks/relay.json (measured as relay-20261129-srd13.json; it
  replaced the srd 1.2 run of load 15-25, kept as relay-20261129T011423Z-srd12.json)
  (``--runs 5 --duration 4 --iters 2000``, 421 s, load 2.2-4.3):
  medians, one relay, srd 10.60 Gbit/s, Go 10.02, HAProxy 9.65, socat 9.55, nginx 6.25
  (forwarding 13.17); relay CPU per GB srd 0.343 core-s, Go 0.416, HAProxy 0.422, socat
  0.587, nginx 1.011. S0's peer targets: throughput 1.03x [0.88, 1.21] of the fastest peer
  (one) and 1.00x [0.78, 1.28] (two), inconclusive; CPU per GB 0.81x [0.60, 1.10] of the
  cheapest (one, inconclusive) and 0.88x [0.79, 0.97] (two, met). The retransmit targets at
  this load: one srd minus socat +5186 [-896, 11268] (inconclusive; Go 19817, HAProxy 17316,
  forwarding's own sender 10304 per test), two srds minus two socats +2898 [1061, 4735] (not
  met; with the cap it is not met either, above).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field

IPERF_PORT, ECHO_PORT, NP_PORT = 5201, 7000, 6000
# see harness.relay.line
MIDDLE_LEFT_IP, MIDDLE_RIGHT_IP, SERVER_IP = "198.18.0.2", "198.18.1.1", "198.18.1.2"
PEER_KINDS = ("socat", "haproxy", "nginx", "gosplice")  # harness.relay.peers.PEERS
KINDS = (*PEER_KINDS, "srd")
PATHS = ("forward", *(path for kind in KINDS for path in (kind, kind + "2")))
# a relay listens on server port + offset; the second of two on + offset + 1 (middle's right)
RELAY_PORT_OFFSET = {path: 2 + 3 * i + (1 if path.endswith("2") else 0)
                     for i, kind in enumerate(KINDS) for path in (kind, kind + "2")}
SIZES = (1, 1024)  # ping-pong and NPtcp message sizes (bytes)


def kind_of(path: str) -> str:
    """The relay kind of a path: ``'nginx2'`` -> ``'nginx'``."""
    return path[:-1] if path.endswith("2") else path


def paths_of(kinds) -> tuple[str, ...]:
    """forward, then one and two relays of every kind in ``kinds``, in :data:`PATHS` order."""
    return tuple(p for p in PATHS if p == "forward" or kind_of(p) in kinds)


# -- helpers run inside the namespaces (as separate processes) ---------------------------------

def echo_server(port: int) -> None:
    """Echo every byte back at once (TCP_NODELAY), one thread per connection."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(64)

    def serve(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def ping(host: str, port: int, iters: int, size: int, warmup: int) -> dict:
    """Ping-pong ``size`` bytes ``iters`` times; half round-trip times in microseconds."""
    sock = socket.create_connection((host, port), timeout=10)
    sock.settimeout(None)  # a timeout would add a poll() to every recv
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    msg, buf = b"x" * size, bytearray(size)
    view = memoryview(buf)
    half = []
    clock = time.perf_counter_ns
    for i in range(warmup + iters):
        t0 = clock()
        sock.sendall(msg)
        got = 0
        while got < size:
            n = sock.recv_into(view[got:])
            if n == 0:
                raise ConnectionError("echo server closed the connection")
            got += n
        if i >= warmup:
            half.append((clock() - t0) / 2000.0)
    sock.close()
    half.sort()
    q = lambda p: half[min(len(half) - 1, int(p * len(half)))]
    return {"n": len(half), "median_us": statistics.median(half), "mean_us": statistics.fmean(half),
            "p10_us": q(0.10), "p90_us": q(0.90), "p99_us": q(0.99), "min_us": half[0]}


# -- the lab ---------------------------------------------------------------------------------

@dataclass
class PathResult:
    path: str
    run: int
    throughput_gbps: float | None = None
    retransmits: int | None = None
    relay_cpu_cores: float | None = None    # CPU of the relay's processes during iperf3
    relay_cpu_s_per_gb: float | None = None  # ... per GB relayed: less sensitive to contention
    middle_retransmits: int | None = None  # segments the middle's relays retransmitted
    host_busy_cores: float | None = None    # all CPUs busy (/proc/stat) during iperf3, in cores
    host_cpu_s_per_gb: float | None = None  # ... per GB moved: what the whole path costs the host
    pingpong: dict | None = None  # 1 B
    pingpong_1k: dict | None = None  # 1 KiB
    nptcp_half_rtt_us: float | None = None  # 1 B
    nptcp_half_rtt_1k_us: float | None = None  # 1 KiB
    errors: list[str] = field(default_factory=list)


def wait_listening(node, port: int, timeout: float = 10.0) -> None:
    from harness.nodes import facts

    if facts.wait_listening(node, port, timeout):
        return
    raise RuntimeError(f"nothing listens on port {port} in {node.name} after {timeout:g}s")


def host_cpu_times() -> tuple[float, float]:
    """(busy, all) CPU seconds of every CPU since boot, from /proc/stat's first line.

    Busy is everything but idle, iowait and steal: the kernel's TCP work in softirq
    counts (it is most of what a path costs here), time the hypervisor took does not.
    """
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice (guest is in user)
    idle, iowait, steal = fields[3], fields[4], fields[7] if len(fields) > 7 else 0
    total = sum(fields[:8])
    tick = os.sysconf("SC_CLK_TCK")
    return (total - idle - iowait - steal) / tick, total / tick


def group_cpu_seconds(pgid: int) -> float:
    """CPU time of a process group: live members plus the children they have reaped.

    socat forks a child per connection; srd is one process. Both run in the
    group that the journal started, so the same count works for both.
    """
    from harness.nodes.procfs import read_stat

    ticks = 0
    for entry in filter(str.isdigit, os.listdir("/proc")):
        stat = read_stat(int(entry))  # None: exited meanwhile
        if stat is not None and stat.pgid == pgid:
            ticks += stat.utime + stat.stime + stat.cutime + stat.cstime
    return ticks / os.sysconf("SC_CLK_TCK")


class Bench:
    def __init__(self, journal, line, args, tmp: str, go_binary: str | None = None):
        self.journal, self.line, self.args, self.tmp = journal, line, args, tmp
        self.go_binary = go_binary  # the built gosplice relay (harness.relay.peers)
        self.relay_groups: list[int] = []

    @contextmanager
    def path(self, name: str, server_port: int) -> Iterator[tuple[str, int]]:
        """Make ``name`` the way from client to ``server_port``; yield where the client connects."""
        self.relay_groups = []
        if name == "forward":  # the middle routes (the lab is built with forwarding on)
            yield SERVER_IP, server_port
            return
        port = server_port + RELAY_PORT_OFFSET[name]
        kind = kind_of(name)
        with ExitStack() as stack:
            target = f"{SERVER_IP}:{server_port}"
            if name.endswith("2"):  # the second relay first: the first connects to it
                second = f"{MIDDLE_RIGHT_IP}:{port + 1}"
                stack.enter_context(self.relay(kind, second, target))
                target = second
            stack.enter_context(self.relay(kind, f"{MIDDLE_LEFT_IP}:{port}", target))
            yield MIDDLE_LEFT_IP, port

    @contextmanager
    def relay(self, kind: str, listen: str, target: str) -> Iterator[None]:
        """One relay of ``kind`` in the middle, its process group noted for the CPU count."""
        from harness.relay import RelaySpec, peers, running_relay

        middle = self.line.node("middle")
        if kind != "srd":
            cmd = peers.command(kind, listen, target, self.tmp, binary=self.go_binary)
            with self.journal.process(middle, cmd) as proc:
                self.relay_groups.append(proc.pid)
                wait_listening(middle, peers.split_host_port(listen)[1])
                yield
                if proc.poll() is not None:
                    raise RuntimeError(f"{kind} exited during the test (status {proc.poll()})")
            return
        spec = RelaySpec.parse(listen, target, notsent_lowat=self.args.srd_notsent_lowat)
        with running_relay(self.journal, middle, spec) as relay:
            self.relay_groups.append(relay.process.pid)
            yield
        if relay.exit_status != 0:
            raise RuntimeError(f"srd exited with status {relay.exit_status}")

    def middle_retransmits(self) -> int:
        """TCP segments the middle namespace has retransmitted (its relays' sockets)."""
        lines = self.line.node("middle").run(["cat", "/proc/net/snmp"], timeout=30).stdout
        tcp = [line.split() for line in lines.splitlines() if line.startswith("Tcp:")]
        return int(tcp[1][tcp[0].index("RetransSegs")])

    def iperf(self, result: PathResult) -> None:
        with self.path(result.path, IPERF_PORT) as (host, port):
            cpu_now = lambda: sum(map(group_cpu_seconds, self.relay_groups))  # noqa: E731
            cpu0 = cpu_now() if self.relay_groups else None
            retr0 = self.middle_retransmits()
            host0 = host_cpu_times()
            t0 = time.monotonic()
            out = self.line.node("client").run(
                ["iperf3", "-c", host, "-p", str(port), "-t", str(self.args.duration), "-O", "1",
                 "-J"], timeout=self.args.duration + 60, check=False)
            host1 = host_cpu_times()
            cpu = cpu_now() - cpu0 if cpu0 is not None else None
            elapsed = time.monotonic() - t0
            result.middle_retransmits = self.middle_retransmits() - retr0
        data = json.loads(out.stdout or "{}")
        if "error" in data or not out.ok:
            result.errors.append(f"iperf3: {data.get('error') or out.stderr.strip()}")
            return
        result.throughput_gbps = data["end"]["sum_received"]["bits_per_second"] / 1e9
        # All intervals, also the omitted first second (-O 1): the CPU was spent on those too.
        gbytes = sum(iv["sum"]["bytes"] for iv in data.get("intervals", [])) / 1e9
        busy = host1[0] - host0[0]
        result.host_busy_cores = round(busy / elapsed, 3)
        result.host_cpu_s_per_gb = round(busy / gbytes, 4) if gbytes else None
        if cpu is not None:
            result.relay_cpu_cores = round(cpu / elapsed, 3)
            result.relay_cpu_s_per_gb = round(cpu / gbytes, 4) if gbytes else None
        result.retransmits = data["end"]["sum_sent"].get("retransmits")

    def pingpong(self, result: PathResult) -> None:
        with self.path(result.path, ECHO_PORT) as (host, port):
            for size in SIZES:
                out = self.line.node("client").run(
                    [sys.executable, os.path.abspath(__file__), "_ping", host, str(port),
                     str(self.args.iters), str(size), str(self.args.iters // 10)],
                    timeout=120, check=False)
                if not out.ok:
                    result.errors.append(f"ping-pong {size} B: {out.stderr.strip()[-300:]}")
                    continue
                setattr(result, "pingpong" if size == 1 else "pingpong_1k", json.loads(out.stdout))

    def nptcp(self, result: PathResult) -> None:
        if not shutil.which("NPtcp"):
            return
        for size in SIZES:
            value = self.nptcp_size(result, size)
            if size == 1:
                result.nptcp_half_rtt_us = value
            else:
                result.nptcp_half_rtt_1k_us = value

    def nptcp_size(self, result: PathResult, size: int) -> float | None:
        """NPtcp's half round trip of ``size``-byte messages on the path, in microseconds."""
        np_args = ["-l", str(size), "-u", str(size), "-n", str(self.args.iters), "-p", "0"]
        server = f"cd {self.tmp} && exec NPtcp -P {NP_PORT} " + " ".join(np_args)
        outfile = os.path.join(self.tmp, f"np-{result.path}-{result.run}-{size}.out")
        server_node = self.line.node("server")
        with self.journal.process(server_node, server):
            wait_listening(server_node, NP_PORT)
            with self.path(result.path, NP_PORT) as (host, port):
                out = self.line.node("client").run(
                    ["sh", "-c", f"cd {self.tmp} && exec NPtcp -h {host} -P {port} "
                     + " ".join(np_args) + f" -o {outfile}"], timeout=120, check=False)
        try:
            with open(outfile) as fh:
                return nptcp_half_rtt_us(fh.read(), size)
        except (OSError, ValueError) as exc:
            result.errors.append(f"NPtcp {size} B: {exc}; {out.stdout.strip()[-200:]} "
                                 f"{out.stderr.strip()[-200:]}")
            return None
        finally:
            if os.path.exists(outfile):
                os.remove(outfile)


def nptcp_half_rtt_us(text: str, size: int) -> float:
    """The half round trip (us) NPtcp's output file gives for ``size``-byte messages.

    Each line of the file is ``bytes Mbit/s seconds`` (seconds: half a round trip); a file
    without a line of that size raises ValueError naming the sizes it has.
    """
    sizes = []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 3:
            continue
        sizes.append(int(float(cols[0])))
        if sizes[-1] == size:
            return float(cols[2]) * 1e6
    raise ValueError(f"NPtcp's output has no {size}-byte line (sizes: {sizes or 'none'})")


# -- summary ---------------------------------------------------------------------------------

def spread(values: list[float], best=max) -> dict | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"best": best(values), "min": min(values), "max": max(values),
            "median": statistics.median(values), "n": len(values), "values": values}


def summarize(results: list[PathResult]) -> dict:
    measured = tuple(p for p in PATHS if any(r.path == p for r in results))
    by = {p: [r for r in results if r.path == p] for p in measured}
    summary: dict = {"paths": list(measured)}
    for p, rs in by.items():
        summary[p] = {
            "throughput_gbps": spread([r.throughput_gbps for r in rs]),
            "half_rtt_us": spread([r.pingpong and r.pingpong["median_us"] for r in rs], best=min),
            "half_rtt_1k_us": spread([r.pingpong_1k and r.pingpong_1k["median_us"] for r in rs],
                                     best=min),
            "half_rtt_p99_us": spread([r.pingpong and r.pingpong["p99_us"] for r in rs], best=min),
            "nptcp_half_rtt_us": spread([r.nptcp_half_rtt_us for r in rs], best=min),
            "nptcp_half_rtt_1k_us": spread([r.nptcp_half_rtt_1k_us for r in rs], best=min),
            "relay_cpu_cores": spread([r.relay_cpu_cores for r in rs], best=min),
            "relay_cpu_s_per_gb": spread([r.relay_cpu_s_per_gb for r in rs], best=min),
            "retransmits": spread([r.retransmits for r in rs], best=min),
            "middle_retransmits": spread([r.middle_retransmits for r in rs], best=min),
            "host_busy_cores": spread([r.host_busy_cores for r in rs], best=min),
            "host_cpu_s_per_gb": spread([r.host_cpu_s_per_gb for r in rs], best=min),
        }
    runs = sorted({r.run for r in results})

    def per_run(fn) -> list[float]:
        out = []
        for run in runs:
            row = {r.path: r for r in results if r.run == run}
            try:
                value = fn(row)
            except (KeyError, TypeError, ZeroDivisionError):
                continue
            if value is not None:
                out.append(value)
        return out

    tput = lambda row, p: row[p].throughput_gbps  # noqa: E731
    lat = lambda row, p: row[p].pingpong["median_us"]  # noqa: E731
    lat_1k = lambda row, p: row[p].pingpong_1k["median_us"]  # noqa: E731
    summary["ratios"] = {
        f"{p}_vs_forward_throughput": spread(per_run(lambda r, p=p: tput(r, p) / tput(r, "forward")))
        for p in measured[1:]}
    summary["ratios"]["srd_vs_socat_throughput"] = spread(
        per_run(lambda r: tput(r, "srd") / tput(r, "socat")))
    summary["ratios"]["srd2_vs_socat2_throughput"] = spread(
        per_run(lambda r: tput(r, "srd2") / tput(r, "socat2")))
    cost = lambda row, p: row[p].host_cpu_s_per_gb  # noqa: E731
    for p in measured[1:]:
        summary["ratios"][f"{p}_vs_forward_cpu_cost"] = spread(
            per_run(lambda r, p=p: cost(r, "forward") / cost(r, p)))
    summary["cpu_analysis"] = cpu_analysis(results, runs)
    for p in measured[1:]:
        hops = 2 if p.endswith("2") else 1
        summary["ratios"][f"{p}_added_half_rtt_us_per_relay"] = spread(
            per_run(lambda r, p=p, hops=hops: (lat(r, p) - lat(r, "forward")) / hops), best=min)
        summary["ratios"][f"{p}_added_half_rtt_1k_us_per_relay"] = spread(
            per_run(lambda r, p=p, hops=hops: (lat_1k(r, p) - lat_1k(r, "forward")) / hops),
            best=min)
    summary["versus_srd"] = versus_srd(results)
    summary["srd_share_of_free_relay_bound"] = share_of_free_relay_bound(summary["cpu_analysis"])
    return summary


def estimate_dict(estimate) -> dict | None:
    """An interval estimate (harness.verdicts.intervals.Estimate) as archived JSON."""
    if estimate is None:
        return None
    return {"value": estimate.value, "low": estimate.low, "high": estimate.high,
            "n": estimate.n, "unit": estimate.unit, "method": estimate.method}


def paired(results: list[PathResult], a: str, b: str, value) -> list[tuple[float, float]]:
    """(value of path ``a``, value of path ``b``) per run where both have one."""
    by_run: dict[int, dict[str, float]] = {}
    for r in results:
        if r.path in (a, b):
            v = value(r)
            if v is not None:
                by_run.setdefault(r.run, {})[r.path] = v
    return [(row[a], row[b]) for _, row in sorted(by_run.items()) if a in row and b in row]


def _median_us(field: str):
    return lambda r: (getattr(r, field) or {}).get("median_us")


#: what a peer is compared with srd on: key -> (a result's value, "ratio" or "difference")
VERSUS_SRD = {
    "throughput_x": (lambda r: r.throughput_gbps, "ratio"),
    "relay_cpu_s_per_gb_x": (lambda r: r.relay_cpu_s_per_gb, "ratio"),
    "host_cpu_s_per_gb_x": (lambda r: r.host_cpu_s_per_gb, "ratio"),
    "half_rtt_1b_us_minus_srd": (_median_us("pingpong"), "difference"),
    "half_rtt_1k_us_minus_srd": (_median_us("pingpong_1k"), "difference"),
    "retransmits_minus_srd": (lambda r: r.retransmits, "difference"),
}


def versus_srd(results: list[PathResult]) -> dict:
    """Each peer path against srd with as many relays, paired per run: peer / srd ratios
    (geometric mean) and peer - srd differences (half-RTTs per relay), each with its 95 %
    interval over the runs (harness.verdicts.intervals.mean_estimate: Student t below 30)."""
    from harness.verdicts.intervals import mean_estimate

    present = {r.path for r in results}
    out = {}
    for path in PATHS:
        if path == "forward" or kind_of(path) == "srd" or path not in present:
            continue
        srd = "srd2" if path.endswith("2") else "srd"
        hops = 2 if path.endswith("2") else 1
        row = {}
        for key, (value, how) in VERSUS_SRD.items():
            pairs = paired(results, path, srd, value)
            if how == "ratio":
                est = mean_estimate([a / b for a, b in pairs if b], "x", "runs", log=True)
            else:
                per = hops if "half_rtt" in key else 1
                est = mean_estimate([(a - b) / per for a, b in pairs],
                                    "us" if "half_rtt" in key else "segments", "runs")
            row[key] = estimate_dict(est)
        out[path] = row
    return out


def share_of_free_relay_bound(analysis: dict) -> dict:
    """srd's throughput ratio to forwarding as a share of the ratio a relay costing no CPU
    would reach (cpu_analysis's ``free_relay_ratio``), per path, with its interval over runs."""
    from harness.verdicts.intervals import mean_estimate

    out = {}
    for path in ("srd", "srd2"):
        rows = [x for x in analysis["per_run"] if x["path"] == path and x["free_relay_ratio"]]
        out[path] = estimate_dict(mean_estimate(
            [x["throughput_ratio"] / x["free_relay_ratio"] for x in rows], "x", "runs", log=True))
    return out


#: a path "saturates" the machine when all CPUs together were at least this busy during iperf3
SATURATED = 0.9


def cpu_analysis(results: list[PathResult], runs: list[int]) -> dict:
    """Is the gap to kernel forwarding the relay's extra kernel TCP work? Per run and path.

    A relayed byte crosses two more TCP terminations than a forwarded one (four more for
    two relays), all on the machine's CPUs that also run iperf3's sender and receiver. If
    both paths keep every CPU busy, the throughput each reaches is (CPUs / CPU-s per GB),
    so the throughput ratio equals the ratio of the host's CPU cost per GB
    (``cpu_cost_ratio`` = forward's CPU-s/GB over the relay's), and ``explained`` -- the
    throughput ratio over that -- is near 1. The relay process's own share of that cost
    (``relay_share``) says how much of it a faster relay could save at most, and
    ``free_relay_ratio`` the throughput ratio a relay costing no CPU would reach. Busy time is
    all CPUs' (/proc/stat), so other work on a shared machine counts too: quote the load.
    """
    cpus = os.cpu_count() or 1
    per_run: list[dict] = []
    for run in runs:
        row = {r.path: r for r in results if r.run == run}
        fw = row.get("forward")
        if not fw or not fw.throughput_gbps or not fw.host_cpu_s_per_gb:
            continue
        for p in PATHS[1:]:
            r = row.get(p)
            if not r or not r.throughput_gbps or not r.host_cpu_s_per_gb:
                continue
            tput_ratio = r.throughput_gbps / fw.throughput_gbps
            cost_ratio = fw.host_cpu_s_per_gb / r.host_cpu_s_per_gb
            per_run.append({
                "run": run, "path": p, "throughput_ratio": round(tput_ratio, 3),
                "cpu_cost_ratio": round(cost_ratio, 3),
                "explained": round(tput_ratio / cost_ratio, 3),
                "forward_busy_cores": fw.host_busy_cores, "path_busy_cores": r.host_busy_cores,
                "both_saturated": bool(fw.host_busy_cores >= SATURATED * cpus
                                       and r.host_busy_cores >= SATURATED * cpus),
                "relay_share": (round(r.relay_cpu_s_per_gb / r.host_cpu_s_per_gb, 3)
                                if r.relay_cpu_s_per_gb else None),
                # the throughput ratio a relay process costing no CPU at all would reach
                "free_relay_ratio": (round(fw.host_cpu_s_per_gb
                                           / (r.host_cpu_s_per_gb - r.relay_cpu_s_per_gb), 3)
                                     if r.relay_cpu_s_per_gb else None)})
    by_path = {}
    for p in PATHS[1:]:
        rows = [x for x in per_run if x["path"] == p]
        if not rows:
            continue
        sat = [x for x in rows if x["both_saturated"]]
        by_path[p] = {
            "cpu_cost_ratio": spread([x["cpu_cost_ratio"] for x in rows]),
            "explained": spread([x["explained"] for x in rows]),
            "explained_when_both_saturated": spread([x["explained"] for x in sat]),
            "relay_share": spread([x["relay_share"] for x in rows]),
            "free_relay_ratio": spread([x["free_relay_ratio"] for x in rows]),
            "runs_both_saturated": len(sat), "runs": len(rows)}
    return {"cpus": cpus, "saturated_at_cores": SATURATED * cpus, "per_run": per_run,
            "by_path": by_path}


def judged_targets(report: dict) -> list[dict]:
    """The targets of harness.relay.targets judged on this report's runs (claims-table rows)."""
    from harness.relay import targets

    frame = targets.targets_table(report)
    return json.loads(frame.to_json(orient="records"))


def fmt(s: dict | None, unit: str, digits: int = 2) -> str:
    if not s:
        return "n/a"
    return (f"{s['best']:.{digits}f} {unit}  [{s['min']:.{digits}f} .. {s['max']:.{digits}f},"
            f" n={s['n']}]")


def print_table(summary: dict) -> None:
    print("\nbest [min .. max over runs]")
    print(f"{'path':<9} {'iperf3 throughput':<34} {'1 B half-RTT (python, median)':<34}"
          f" {'1 B half-RTT (NPtcp)':<30}")
    paths = summary["paths"]
    for p in paths:
        s = summary[p]
        print(f"{p:<9} {fmt(s['throughput_gbps'], 'Gbit/s'):<34} "
              f"{fmt(s['half_rtt_us'], 'us', 1):<34} {fmt(s['nptcp_half_rtt_us'], 'us', 1):<30}")
    for p in paths[1:]:
        print(f"{p} CPU per GB relayed: {fmt(summary[p]['relay_cpu_s_per_gb'], 'core-s/GB', 3)}"
              f"   CPU while relaying: {fmt(summary[p]['relay_cpu_cores'], 'cores', 2)}")
    for p in paths:
        print(f"{p} host CPU (all CPUs, /proc/stat): {fmt(summary[p]['host_busy_cores'], 'cores', 2)}"
              f"   per GB moved: {fmt(summary[p]['host_cpu_s_per_gb'], 'core-s/GB', 2)}")
    for p, a in summary["cpu_analysis"]["by_path"].items():
        print(f"{p}: throughput ratio / CPU-cost ratio {fmt(a['explained'], 'x', 2)};"
              f" both paths saturated in {a['runs_both_saturated']} of {a['runs']} runs;"
              f" the relay process's share of the path's CPU {fmt(a['relay_share'], '', 2)};"
              f" a relay costing no CPU would reach {fmt(a['free_relay_ratio'], 'x', 2)}")
    for key, value in summary["ratios"].items():
        unit = "us" if key.endswith("_us_per_relay") else "x"
        print(f"{key + ' (per run):':<48} {fmt(value, unit, 1 if unit == 'us' else 2)}")
    print("retransmits per test (sender / middle), median over runs: " + ", ".join(
        f"{p} {summary[p]['retransmits']['median'] if summary[p]['retransmits'] else '-'}"
        f" / {summary[p]['middle_retransmits']['median'] if summary[p]['middle_retransmits'] else '-'}"
        for p in paths))
    print()
    print("\n".join(side_by_side(summary)))


def _interval(est: dict | None, digits: int) -> str:
    if not est:
        return "-"
    if est["low"] is None:
        return f"{est['value']:.{digits}f}"
    return f"{est['value']:.{digits}f} [{est['low']:.{digits}f}, {est['high']:.{digits}f}]"


def _median(s: dict | None, digits: int) -> str:
    return "-" if not s else f"{s['median']:.{digits}f}"


def side_by_side(summary: dict) -> list[str]:
    """The peers beside srd as a Markdown table (docs/studies/s0.md shows it): medians over the
    runs, each peer's ratio to srd (and difference in half-RTT per relay) with its 95 % interval."""
    lines = ["| relays | relay | Gbit/s | x srd | relay CPU-s/GB | x srd | host CPU-s/GB | x srd "
             "| +half-RTT 1 B (us/relay) | +half-RTT 1 KiB (us/relay) | sender retransmits |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    versus = summary.get("versus_srd", {})
    ratios = summary.get("ratios", {})
    for hops in (1, 2):
        for p in summary["paths"]:
            if p == "forward" or p.endswith("2") != (hops == 2):
                continue
            s, v = summary[p], versus.get(p, {})
            lines.append(
                f"| {hops} | {kind_of(p)} | {_median(s['throughput_gbps'], 2)} "
                f"| {_interval(v.get('throughput_x'), 2) if v else '1'} "
                f"| {_median(s['relay_cpu_s_per_gb'], 3)} "
                f"| {_interval(v.get('relay_cpu_s_per_gb_x'), 2) if v else '1'} "
                f"| {_median(s['host_cpu_s_per_gb'], 2)} "
                f"| {_interval(v.get('host_cpu_s_per_gb_x'), 2) if v else '1'} "
                f"| {_median(ratios.get(f'{p}_added_half_rtt_us_per_relay'), 1)} "
                f"| {_median(ratios.get(f'{p}_added_half_rtt_1k_us_per_relay'), 1)} "
                f"| {_median(s['retransmits'], 0)} |")
    fw = summary.get("forward")
    if fw:
        lines.append(f"| 0 | forward | {_median(fw['throughput_gbps'], 2)} | | | | "
                     f"{_median(fw['host_cpu_s_per_gb'], 2)} | | | | {_median(fw['retransmits'], 0)} |")
    return lines


def print_targets(rows: list[dict]) -> None:
    print("\ntargets (harness.relay.targets, paired per run):")
    for row in rows:
        print(f"  {row['claim']:<66} {row['ours']:<40} {row['outcome']}")


# -- main ------------------------------------------------------------------------------------

def preflight(peer_names) -> dict[str, str]:
    """Refuse to start without root or the lab's tools; the requested peers that cannot run
    here (name -> what is missing and its install command), which are reported absent."""
    from harness.relay import peers

    if os.geteuid() != 0:
        sys.exit("relay_bench: needs root (it creates network namespaces); run it with sudo")
    missing = [t for t in ("ip", "iperf3", "ss") if not shutil.which(t)]
    if missing:
        sys.exit(f"relay_bench: missing tools: {', '.join(missing)}; apt-get install iproute2 iperf3")
    absent = peers.missing(peer_names)
    for name, why in absent.items():
        print(f"relay_bench: peer {name} absent ({why}); measuring the others", file=sys.stderr)
    return absent


def benchmark(args) -> dict:
    from harness.journal.journal import Journal
    from harness.lab.lab import Lab
    from harness.relay import build_local, peers, targets
    from harness.relay.line import line_topology

    absent = preflight(args.peers)
    kinds = [k for k in args.peers if k not in absent] + ["srd"]
    paths = paths_of(kinds)
    registered = targets.registration()  # fixed before any measurement (its files' digests too)
    registered_digests = targets.registration_digests()
    seed = args.seed or random.SystemRandom().randrange(1, 2**31)
    rng = random.Random(seed)
    load_start = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="relay-bench-")
    journal = Journal(os.path.join(tmp, "journal.jsonl"))
    results: list[PathResult] = []
    loads: list[dict] = []  # the machine's load at each run's start and end
    started = time.time()
    binary = str(build_local())
    versions = {"srd": srd_version(binary), **{k: peers.PEERS[k].version() for k in kinds
                                                if k != "srd"}}
    keep_tmp = False
    try:
        go_binary = peers.build_go_relay(tmp) if "gosplice" in kinds else None
        with Lab(line_topology(forwarding=True, name="relay-bench"), journal) as line:
            server = line.node("server")
            bench = Bench(journal, line, args, tmp, go_binary)
            iperf_server = f"exec iperf3 -s -p {IPERF_PORT}"
            echo = shlex_join([sys.executable, os.path.abspath(__file__), "_echo", str(ECHO_PORT)])
            with journal.process(server, iperf_server), journal.process(server, "exec " + echo):
                wait_listening(server, IPERF_PORT)
                wait_listening(server, ECHO_PORT)
                for run_no in range(1, args.runs + 1):
                    order = rng.sample(paths, len(paths))
                    print(f"run {run_no}: {' '.join(order)}  (load {os.getloadavg()[0]:.2f})",
                          flush=True)
                    loads.append({"run": run_no, "start": os.getloadavg()})
                    for p in order:
                        res = PathResult(p, run_no)
                        bench.iperf(res)
                        bench.pingpong(res)
                        if not args.no_nptcp:
                            bench.nptcp(res)
                        results.append(res)
                        tp = f"{res.throughput_gbps:.2f} Gbit/s" if res.throughput_gbps else "-"
                        lt = f"{res.pingpong['median_us']:.1f} us" if res.pingpong else "-"
                        npt = f"{res.nptcp_half_rtt_us:.1f} us" if res.nptcp_half_rtt_us else "-"
                        print(f"run {run_no} {p:<8} {tp:>14}  half-RTT {lt:>9}  NPtcp {npt:>9}"
                              + (f"  errors: {res.errors}" if res.errors else ""), flush=True)
                    loads[-1]["end"] = os.getloadavg()
        if journal.pending():
            journal.undo_all()
    except BaseException:
        try:
            journal.undo_all()
        except Exception as exc:  # noqa: BLE001 - reported, journal kept
            keep_tmp = True
            print(f"relay_bench: cleanup incomplete ({exc}); journal kept at {journal.path}",
                  file=sys.stderr)
        raise
    finally:
        if not keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    report = {
        "benchmark": "relay_bench",
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_s": round(time.time() - started, 1),
        "commit": git_commit(),
        "command": "benchmarks/relay_bench.py " + " ".join(sys.argv[1:]),
        "machine": {"host": platform.node(), "kernel": platform.release(),
                    "cpus": os.cpu_count(), "loadavg_at_start": load_start,
                    "loadavg_at_end": os.getloadavg(), "load_per_run": loads},
        "config": {"runs": args.runs, "iperf_seconds": args.duration, "pingpong_iters": args.iters,
                   "seed": seed, "order": "the paths shuffled per run from the seed",
                   "srd_binary": binary, "srd_notsent_lowat": args.srd_notsent_lowat,
                   "socat": "socat -b 262144 TCP-LISTEN:P,fork,reuseaddr,nodelay TCP:S,nodelay",
                   "peers": {k: {"version": versions[k], "configured": peers.PEERS[k].doc,
                                 "example": peer_example(k)} for k in kinds if k != "srd"},
                   "peers_absent": absent, "versions": versions,
                   "sizes": list(SIZES),
                   "lab": "3 netns line, veth unshaped, 198.18.0.0/15; srd2/socat2: two relays "
                          "in the middle namespace, joined over its loopback"},
        "targets_registered": registered,  # harness/relay/registration.toml's, then S0's peer rows
        "targets_registration": registered_digests,
        "results": [asdict(r) for r in results],
        "summary": summarize(results),
    }
    try:
        report["targets"] = judged_targets(report)
    except Exception as exc:  # noqa: BLE001 - the runs are kept: harness.relay.targets judges them later
        report["targets"], report["targets_error"] = [], f"{type(exc).__name__}: {exc}"
        print(f"relay_bench: judging the targets failed ({exc}); writing the runs without them",
              file=sys.stderr)
    return report


def srd_version(binary: str) -> str:
    import subprocess

    try:
        return subprocess.run([binary, "--version"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"? ({exc})"


def peer_example(kind: str) -> str:
    """Peer ``kind``'s configuration (or command) for the one-relay iperf3 path, as archived."""
    from harness.relay import peers

    listen = f"{MIDDLE_LEFT_IP}:{IPERF_PORT + RELAY_PORT_OFFSET[kind]}"
    target = f"{SERVER_IP}:{IPERF_PORT}"
    if kind == "haproxy":
        return peers.haproxy_config(listen, target)
    if kind == "nginx":
        return peers.nginx_config(listen, target, "TMP")
    if kind == "gosplice":
        return f"splice-relay -listen {listen} -target {target} (harness/relay/splice_relay.go)"
    return peers.socat_command(listen, target)


def git_commit() -> str:
    """The commit of the harness that measured (with '+dirty' if srd.c differs from it)."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "diff", "--quiet", "HEAD", "--",
                                "harness/relay/srd.c"], timeout=10).returncode
    except (OSError, subprocess.SubprocessError):
        return "?"
    return (head or "?") + ("+dirty" if dirty else "")


def shlex_join(parts: list[str]) -> str:
    import shlex

    return shlex.join(parts)


def arg_parser() -> argparse.ArgumentParser:
    """The options; their defaults are the design harness/relay/registration.toml registers
    (tests/unit/relay/test_registration.py holds them equal)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="repetitions of every path (3)")
    parser.add_argument("--duration", type=int, default=5, help="iperf3 seconds per test (5)")
    parser.add_argument("--iters", type=int, default=20000, help="ping-pong round trips (20000)")
    parser.add_argument("--no-nptcp", action="store_true", help="skip the NetPIPE latency test")
    parser.add_argument("--srd-notsent-lowat", type=int, default=None, metavar="BYTES",
                        help="srd's TCP_NOTSENT_LOWAT (default: RelaySpec's, 0: the kernel's; "
                             "srd 1.1-1.2 used 128 KiB) -- for experiments on srd's CPU per byte")
    parser.add_argument("--peers", default=",".join(PEER_KINDS),
                        help=f"the peer relays beside srd, comma-separated ({','.join(PEER_KINDS)})")
    parser.add_argument("--out", default="relay_bench.json",
                        help="JSON output file (the repository keeps data/benchmarks/relay.json)")
    parser.add_argument("--replace", action="store_true",
                        help="replace --out if it exists (else refused before measuring)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the paths' order per run (0: a fresh one, recorded)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_echo":
        echo_server(int(argv[1]))
        return 0
    if argv and argv[0] == "_ping":
        host, port, iters, size, warmup = argv[1], *map(int, argv[2:6])
        print(json.dumps(ping(host, port, iters, size, warmup)))
        return 0
    parser = arg_parser()
    args = parser.parse_args(argv)
    args.peers = [p for p in args.peers.split(",") if p]
    if args.srd_notsent_lowat is None:
        from harness.relay.spec import NOTSENT_LOWAT

        args.srd_notsent_lowat = NOTSENT_LOWAT
    unknown = sorted(set(args.peers) - set(PEER_KINDS))
    if unknown:
        parser.error(f"--peers: unknown {', '.join(unknown)}; choose from {','.join(PEER_KINDS)}")
    if args.runs < 1 or args.duration < 1 or args.iters < 100:
        parser.error("--runs >= 1, --duration >= 1 and --iters >= 100")
    if os.path.exists(args.out) and not args.replace:
        parser.error(f"{args.out} exists: give another --out, or --replace to overwrite it "
                     "(the repository's copy is in git history)")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        parser.error(f"--out: folder {out_dir} does not exist; create it first")
    report = benchmark(args)
    print_table(report["summary"])
    print_targets(report["targets"])
    tmp_out = args.out + ".partial"
    with open(tmp_out, "w") as fh:
        json.dump(report, fh, indent=2)
    os.replace(tmp_out, args.out)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
