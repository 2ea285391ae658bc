"""JupyterLab started for real: its token is not in its argv (readable by every local user)."""

from __future__ import annotations

from pathlib import Path

from harness.run import jupyterlab
from harness.run.jupyterlab import free_port


def test_a_started_server_has_no_token_in_its_cmdline_and_answers_to_it(tmp_path):
    """The real server, briefly: /proc/PID/cmdline (readable by everyone) lacks the token,
    and the server wants exactly it (401 without, 200 with), so it did read JUPYTER_TOKEN."""
    import subprocess
    import time
    import urllib.error
    import urllib.request

    lab = jupyterlab.server(free_port(18888), tmp_path)
    proc = subprocess.Popen(lab.argv(), env=lab.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        api = f"http://127.0.0.1:{lab.port}/api/status"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(api, timeout=2)
                raise AssertionError("the server answered without its token")
            except urllib.error.HTTPError as exc:
                assert exc.code == 403 or exc.code == 401
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.3)
        with urllib.request.urlopen(f"{api}?token={lab.token}", timeout=5) as ok:
            assert ok.status == 200
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # the server's, once it answers
        assert b"jupyterlab" in cmdline and lab.token.encode() not in cmdline
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
