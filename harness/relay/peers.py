"""The relays a researcher could use instead of srd, each configured as its documentation says.

``benchmarks/relay_bench.py`` measures every peer on the same paths as srd (issue 39). A
peer is a packaged program started in the middle namespace of the relay line with a
configuration written here, into the benchmark's private temporary folder, listening on
one address of that namespace only:

- ``socat``: ``socat -b 262144 TCP-LISTEN:P,bind=H,fork,reuseaddr,nodelay TCP:T,nodelay``
  (a copying relay, a child per connection; S0's own baseline, harness.relay.process).
- ``haproxy``: HAProxy in TCP mode (``mode tcp``) with kernel splicing in both directions
  (``option splice-request``, ``option splice-response``: the configuration manual's
  options that splice "whenever possible", where ``splice-auto`` only splices when its
  heuristics expect a gain), the default pipe size and thread count (one thread per CPU),
  run in the foreground (``-db``); timeouts as the manual's TCP examples set them.
- ``nginx``: nginx's stream module (``libnginx-mod-stream``) with its documented defaults:
  ``proxy_pass`` to the target, ``tcp_nodelay on`` and ``proxy_buffer_size 16k`` (the
  defaults, written out), ``proxy_half_close on`` (1.21.4: each direction closed on its own,
  as every other relay here does; nginx's default drops the reply to a half-closed request),
  ``worker_processes auto``, in the foreground (``daemon off``)
  with its pid file and error log in the private folder.
- ``gosplice``: Go's standard library relay (``splice_relay.go``: ``io.Copy`` between two
  ``*net.TCPConn``, which the ``net`` package carries out with ``splice(2)`` on Linux) --
  the one ``splice(2)``-based relay library packaged in Debian (``golang-go``); no
  relay program of its own is packaged that splices (rinetd, redir, simpleproxy, pen,
  6tunnel copy through user space).

A peer whose program is missing is reported as absent with the command that installs it
(:func:`missing`); the benchmark measures the others. Every config is a pure function of
the addresses and the folder, so the unit tests check them without starting anything.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import HarnessError

GO_SOURCE = Path(__file__).with_name("splice_relay.go")
NGINX_STREAM_MODULE = "/usr/lib/nginx/modules/ngx_stream_module.so"


@dataclass(frozen=True)
class Peer:
    """A relay program: its name, the programs it needs, how to install them, its version."""

    name: str
    programs: tuple[str, ...]
    install: str
    version_cmd: tuple[str, ...]
    doc: str  # where its configuration comes from

    def missing(self) -> list[str]:
        """The programs (or files) of this peer not on this machine."""
        out = [p for p in self.programs if not (shutil.which(p) or os.path.exists(p))]
        return out

    def version(self) -> str:
        """The first line the peer's version command prints ('?' if it cannot say)."""
        try:
            done = subprocess.run(self.version_cmd, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"? ({exc})"
        lines = (done.stdout + done.stderr).strip().splitlines()
        named = [line for line in lines if "version" in line.lower()]
        return (named or lines or ["?"])[0].strip()


PEERS: dict[str, Peer] = {
    "socat": Peer("socat", ("socat",), "apt-get install socat", ("socat", "-V"),
                  "socat(1): TCP-LISTEN with fork, TCP_NODELAY on both sockets, 256 KiB buffer"),
    "haproxy": Peer("haproxy", ("haproxy",), "apt-get install haproxy", ("haproxy", "-v"),
                    "HAProxy 2.6 configuration manual: mode tcp, option splice-request, "
                    "option splice-response, timeout connect/client/server"),
    "nginx": Peer("nginx", ("nginx", NGINX_STREAM_MODULE),
                  "apt-get install nginx libnginx-mod-stream", ("nginx", "-v"),
                  "nginx ngx_stream_proxy_module: proxy_pass, tcp_nodelay on, "
                  "proxy_buffer_size 16k (defaults), proxy_half_close on, worker_processes auto, "
                  "daemon off"),
    "gosplice": Peer("gosplice", ("go",), "apt-get install golang-go", ("go", "version"),
                     "Go net package: io.Copy(*net.TCPConn, *net.TCPConn) uses splice(2) "
                     "(net/splice_linux.go); TCP_NODELAY is Go's default"),
}


def missing(names) -> dict[str, str]:
    """Peers among ``names`` that cannot run here: name -> what is missing and the install."""
    out = {}
    for name in names:
        peer = PEERS[name]
        gone = peer.missing()
        if gone:
            out[name] = f"{', '.join(gone)} not found: {peer.install}"
    return out


def split_host_port(address: str) -> tuple[str, int]:
    """``'198.18.0.2:5203'`` -> ``('198.18.0.2', 5203)``; one clear error otherwise."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise HarnessError(f"not a host:port address: {address!r}", "write it as 198.18.0.2:5203")
    return host, int(port)


# -- configurations --------------------------------------------------------------------------

def haproxy_config(listen: str, target: str) -> str:
    """HAProxy's configuration for one TCP relay from ``listen`` to ``target``."""
    host, port = split_host_port(listen)
    split_host_port(target)
    return "\n".join([
        "global",
        "    maxconn 256",
        "defaults",
        "    mode tcp",
        "    timeout connect 5s",
        "    timeout client 5m",
        "    timeout server 5m",
        "    option splice-request",
        "    option splice-response",
        "listen relay",
        f"    bind {host}:{port}",
        f"    server target {target}",
        ""])


def nginx_config(listen: str, target: str, folder: str) -> str:
    """nginx's configuration (stream module) for one TCP relay; its files in ``folder``."""
    host, port = split_host_port(listen)
    split_host_port(target)
    return "\n".join([
        f"load_module {NGINX_STREAM_MODULE};",
        "daemon off;",
        "worker_processes auto;",
        f"pid {folder}/nginx.pid;",
        f"error_log {folder}/nginx-error.log warn;",
        "events { worker_connections 1024; }",
        "stream {",
        "    server {",
        f"        listen {host}:{port};",
        "        tcp_nodelay on;",
        "        proxy_buffer_size 16k;",
        "        proxy_half_close on;",
        f"        proxy_pass {target};",
        "    }",
        "}",
        ""])


def socat_command(listen: str, target: str) -> str:
    host, port = split_host_port(listen)
    split_host_port(target)
    return (f"exec socat -b 262144 TCP-LISTEN:{port},bind={host},fork,reuseaddr,nodelay "
            f"TCP:{target},nodelay")


def command(name: str, listen: str, target: str, folder: str, binary: str | None = None) -> str:
    """The shell command that runs peer ``name`` in the foreground, writing its config first.

    The config file is written here into ``folder`` (unique per listen address), so the
    command only reads it. ``binary``: the built Go relay for ``gosplice``.
    """
    tag = listen.replace(":", "_").replace(".", "-")
    if name == "socat":
        return socat_command(listen, target)
    if name == "haproxy":
        path = Path(folder) / f"haproxy-{tag}.cfg"
        path.write_text(haproxy_config(listen, target))
        return f"exec haproxy -db -f {shlex.quote(str(path))}"
    if name == "nginx":
        sub = Path(folder) / f"nginx-{tag}"
        sub.mkdir(exist_ok=True)
        path = sub / "nginx.conf"
        path.write_text(nginx_config(listen, target, str(sub)))
        return (f"exec nginx -p {shlex.quote(str(sub))} -e {shlex.quote(str(sub))}/nginx-error.log"
                f" -c {shlex.quote(str(path))}")
    if name == "gosplice":
        if not binary:
            raise HarnessError("the gosplice peer needs its built binary",
                               "build it with harness.relay.peers.build_go_relay(folder)")
        split_host_port(listen), split_host_port(target)
        return f"exec {shlex.quote(binary)} -listen {listen} -target {target}"
    raise HarnessError(f"unknown relay peer {name!r}", f"use one of {', '.join(PEERS)}")


def build_go_relay(folder: str) -> str:
    """Compile ``splice_relay.go`` (standard library only) into ``folder``; its path.

    The Go caches go to ``folder`` too, so the build leaves nothing behind it.
    """
    out = Path(folder) / "splice-relay"
    env = dict(os.environ, GOCACHE=str(Path(folder) / "gocache"), GOPATH=str(Path(folder) / "gopath"),
               GO111MODULE="off", CGO_ENABLED="0", GOFLAGS="")
    done = subprocess.run(["go", "build", "-o", str(out), str(GO_SOURCE)], capture_output=True,
                          text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise HarnessError(f"building {GO_SOURCE.name} failed: {done.stderr.strip()[-400:]}",
                           "install Go (apt-get install golang-go) or leave the peer out "
                           "(--peers)")
    return str(out)


_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


def version_number(line: str) -> str | None:
    """The first dotted version number in a version line (``'HAProxy version 2.6.12-1'`` ->
    ``'2.6.12'``), None if it has none."""
    found = _VERSION.search(line)
    return found.group(1) if found else None
