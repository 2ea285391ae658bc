"""harness.run.jupyterlab: `nox -s lab` starts JupyterLab on loopback, with a token, as root too."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from harness.run import jupyterlab
from harness.run.jupyterlab import LabServer, free_port

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_listens_on_loopback_only_behind_the_printed_token():
    lab = LabServer(port=8890, token="t0ken", root_dir=Path("/src/notebooks"), as_root=False)
    argv = lab.argv()
    assert argv[:3] == [sys.executable, "-m", "jupyterlab"]
    assert "--ip=127.0.0.1" in argv and "--port=8890" in argv and "--no-browser" in argv
    assert "--ServerApp.port_retries=0" in argv  # the printed port is the one it gets, or none
    assert "--ServerApp.root_dir=/src/notebooks" in argv
    assert not any("t0ken" in arg for arg in argv)  # argv is readable by every local user
    assert lab.env({"JUPYTER_TOKEN_FILE": "/tmp/x", "HOME": "/h"}) == {"JUPYTER_TOKEN": "t0ken",
                                                                      "HOME": "/h"}
    assert "--allow-root" not in argv
    assert "--allow-root" in LabServer(8890, "t", Path("/x"), as_root=True).argv()
    assert lab.url == "http://127.0.0.1:8890/lab?token=t0ken"


def test_the_instructions_name_the_url_and_the_ssh_tunnel():
    text = LabServer(8890, "t0ken", Path("/src/notebooks"), False).instructions("root", "lab1.example.org")
    assert "http://127.0.0.1:8890/lab?token=t0ken" in text
    assert "ssh -N -L 8890:127.0.0.1:8890 root@lab1.example.org" in text


def test_a_busy_port_is_skipped():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert free_port(taken, tries=5) != taken


def test_defaults_are_the_notebooks_a_fresh_token_and_roots_own_flag(monkeypatch):
    monkeypatch.setattr(jupyterlab.os, "geteuid", lambda: 0)
    one, two = jupyterlab.server(8891), jupyterlab.server(8891)
    assert one.root_dir == ROOT / "notebooks" and one.as_root
    assert one.token != two.token and len(one.token) >= 32


def test_the_ssh_line_never_names_localhost(monkeypatch):
    monkeypatch.setattr(jupyterlab.socket, "getfqdn", lambda: "localhost")
    monkeypatch.setattr(jupyterlab.socket, "gethostname", lambda: "lab1")
    assert jupyterlab.host_name() == "lab1"
    monkeypatch.setattr(jupyterlab.socket, "getfqdn", lambda: "lab1.example.org")
    assert jupyterlab.host_name() == "lab1.example.org"

