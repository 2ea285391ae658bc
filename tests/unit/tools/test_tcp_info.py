"""tcp_info sampled from a transfer's sockets (harness.tools.tcp_info): the window a transfer
reached, read from ``ss -ti`` on its sending side."""

from __future__ import annotations

import subprocess

import pytest

from harness.tools.tcp_info import MARK, parse_samples, sampled, split, ss_command, window_reached

#: two listings of iperf3's connections as ss 6.1 prints them (abridged from a real one):
#: the control connection (a few hundred bytes) and one data connection
LISTINGS = """\
@ 1764376400.100
ESTAB 0 0 198.18.3.2:41530 198.18.3.1:5302
\t cubic wscale:7,7 rto:408 rtt:204/2 mss:1448 pmtu:1500 cwnd:10 bytes_sent:201 bytes_acked:201 snd_wnd:64256
ESTAB 0 812000 198.18.3.2:41540 198.18.3.1:5302
\t cubic wscale:7,7 rto:412 rtt:205/3 mss:1448 pmtu:1500 cwnd:300 bytes_sent:9000000 unacked:290 snd_wnd:500000
@ 1764376400.600
ESTAB 0 0 198.18.3.2:41530 198.18.3.1:5302
\t cubic wscale:7,7 rto:408 rtt:204/2 mss:1448 pmtu:1500 cwnd:10 bytes_sent:201 bytes_acked:201 snd_wnd:64256
ESTAB 0 900000 198.18.3.2:41540 198.18.3.1:5302
\t cubic wscale:7,7 rto:412 rtt:205/3 mss:1448 pmtu:1500 cwnd:560 bytes_sent:19000000 unacked:540 snd_wnd:786432
"""


def test_the_data_connections_window_is_read_and_the_control_connection_left_out():
    samples = parse_samples(LISTINGS)
    assert len(samples) == 2 and len(samples[1].sockets) == 2
    reached = window_reached(samples)
    assert reached.connections == 1 and reached.samples == 2
    assert reached.snd_wnd_max == 786432  # not 786432 + the control connection's 64256
    assert reached.cwnd_max == 560 * 1448 and reached.inflight_max == 540 * 1448
    record = reached.record(600000)
    assert record["window_bdps"] == pytest.approx(1.31, abs=0.01)


def test_no_listing_reaches_no_window():
    reached = window_reached(parse_samples("ss: nothing\n"))
    assert reached.samples == 0 and reached.snd_wnd_max is None
    assert reached.record(600000)["window_bdps"] != reached.record(600000)["window_bdps"]  # nan


def test_a_sampled_command_keeps_its_output_and_exit_status_apart_from_the_samples():
    command = sampled("echo out; sleep 0.5; exit 3", "echo sampled", 0.1, 50)
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=20)
    assert done.returncode == 3
    own, samples = split(done.stdout)
    assert own == "out\n" and MARK not in own
    assert 2 <= samples.count("sampled") <= 50 and samples.count("@ ") >= 2
    assert ss_command("198.18.3.1", 5302) == "ss -tinH dst 198.18.3.1:5302"
    with pytest.raises(ValueError, match="positive"):
        sampled("true", "true", 0, 1)


def test_an_interrupted_sampled_command_leaves_no_file(tmp_path):
    import os
    import signal
    import time

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(["sh", "-c", sampled("sleep 30", "echo x", 0.1, 500)], env=env,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(1.0)
    assert list(tmp_path.iterdir()), "the samples' file exists while it runs"
    os.killpg(proc.pid, signal.SIGTERM)
    proc.communicate(timeout=20)
    assert not list(tmp_path.iterdir())
    done = subprocess.run(["sh", "-c", sampled("true", "echo x", 0.1, 3)], env=env,
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 0 and not list(tmp_path.iterdir())
