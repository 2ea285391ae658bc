"""The peer relays' configurations (harness.relay.peers): what each is told, where its files go."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from harness.errors import HarnessError
from harness.relay import peers

LISTEN, TARGET = "198.18.0.2:5211", "198.18.1.2:5201"


def test_haproxy_relays_in_tcp_mode_splicing_both_ways_from_one_address():
    cfg = peers.haproxy_config(LISTEN, TARGET)
    lines = [line.strip() for line in cfg.splitlines()]
    assert "mode tcp" in lines
    assert "option splice-request" in lines and "option splice-response" in lines
    assert "bind 198.18.0.2:5211" in lines  # one address of the middle, never *:port
    assert "server target 198.18.1.2:5201" in lines
    assert not any(line.startswith(("stats", "daemon", "chroot", "user")) for line in lines)


def test_nginx_relays_with_the_stream_module_and_keeps_its_files_in_the_folder(tmp_path):
    cfg = peers.nginx_config(LISTEN, TARGET, str(tmp_path))
    assert cfg.startswith(f"load_module {peers.NGINX_STREAM_MODULE};")
    assert "daemon off;" in cfg and "proxy_half_close on;" in cfg
    assert "listen 198.18.0.2:5211;" in cfg and "proxy_pass 198.18.1.2:5201;" in cfg
    # every file nginx writes (pid, error log) is in the private folder
    written = [line.split()[1].rstrip(";") for line in cfg.splitlines()
               if line.startswith(("pid ", "error_log "))]
    assert len(written) == 2 and all(w.startswith(str(tmp_path) + "/") for w in written)
    assert "http" not in cfg  # a stream relay only: no HTTP server, no temp paths in /var


@pytest.mark.skipif(not shutil.which("haproxy"), reason="haproxy not installed")
def test_haproxy_accepts_the_configuration_it_is_given(tmp_path):
    cmd = peers.command("haproxy", LISTEN, TARGET, str(tmp_path))
    cfg = cmd.split(" -f ")[1]
    done = subprocess.run(["haproxy", "-c", "-f", cfg], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(not (shutil.which("nginx") and peers.PEERS["nginx"].missing() == []),
                    reason="nginx or its stream module not installed")
def test_nginx_accepts_the_configuration_it_is_given(tmp_path):
    """nginx -t binds the listen address: a free loopback port stands in for the middle's."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cmd = peers.command("nginx", f"127.0.0.1:{port}", TARGET, str(tmp_path))
    folder = tmp_path / f"nginx-127-0-0-1_{port}"
    done = subprocess.run(["nginx", "-t", "-p", str(folder), "-e", str(folder / "e.log"),
                           "-c", str(folder / "nginx.conf")], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    assert cmd.startswith("exec nginx -p ") and str(folder / "nginx.conf") in cmd


def test_each_relay_gets_its_own_config_file_so_two_in_a_row_do_not_share_one(tmp_path):
    first = peers.command("haproxy", "198.18.0.2:5211", "198.18.1.1:5212", str(tmp_path))
    second = peers.command("haproxy", "198.18.1.1:5212", TARGET, str(tmp_path))
    assert first != second
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["haproxy-198-18-0-2_5211.cfg", "haproxy-198-18-1-1_5212.cfg"]
    assert "server target 198.18.1.1:5212" in (tmp_path / files[0]).read_text()


def test_socat_and_go_commands_name_both_ends(tmp_path):
    assert peers.command("socat", LISTEN, TARGET, str(tmp_path)) == (
        "exec socat -b 262144 TCP-LISTEN:5211,bind=198.18.0.2,fork,reuseaddr,nodelay "
        "TCP:198.18.1.2:5201,nodelay")
    go = peers.command("gosplice", LISTEN, TARGET, str(tmp_path), binary="/tmp/x/splice-relay")
    assert go == "exec /tmp/x/splice-relay -listen 198.18.0.2:5211 -target 198.18.1.2:5201"
    with pytest.raises(HarnessError, match="built binary"):
        peers.command("gosplice", LISTEN, TARGET, str(tmp_path))


@pytest.mark.parametrize("bad", ["198.18.0.2", "198.18.0.2:", ":5201", "198.18.0.2:http",
                                 "198.18.0.2:70000"])
def test_a_bad_address_is_refused_before_anything_is_written(tmp_path, bad):
    with pytest.raises(HarnessError, match="host:port") as err:
        peers.command("haproxy", bad, TARGET, str(tmp_path))
    assert "198.18.0.2:5203" in err.value.hint
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_peer_is_refused_naming_the_known_ones(tmp_path):
    with pytest.raises(HarnessError, match="unknown relay peer 'envoy'") as err:
        peers.command("envoy", LISTEN, TARGET, str(tmp_path))
    assert "haproxy" in err.value.hint


def test_a_missing_peer_is_reported_with_its_install_command(monkeypatch):
    monkeypatch.setattr(peers.shutil, "which", lambda name: None)
    monkeypatch.setattr(peers.os.path, "exists", lambda path: False)
    gone = peers.missing(["haproxy", "nginx"])
    assert gone["haproxy"] == "haproxy not found: apt-get install haproxy"
    assert gone["nginx"].endswith("apt-get install nginx libnginx-mod-stream")
    assert peers.NGINX_STREAM_MODULE in gone["nginx"]


def test_a_present_peer_is_not_reported(monkeypatch):
    monkeypatch.setattr(peers.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert peers.missing(["socat", "haproxy", "gosplice"]) == {}


def test_the_version_is_the_line_that_names_it():
    peer = peers.Peer("x", ("sh",), "-", ("sh", "-c", "echo 'x by someone'; echo 'x version 1.7.4'"),
                      "-")
    assert peer.version() == "x version 1.7.4"
    assert peers.version_number("HAProxy version 2.6.12-1+deb12u4 2026/10/17") == "2.6.12"
    assert peers.version_number("no digits") is None
