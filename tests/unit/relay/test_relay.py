"""Relay wrapper without root: spec validation, the build cache, log parsing, srd's own checks."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess

import pytest

from harness import cbuild
from harness.errors import SpecError
from harness.journal.journal import Journal
from harness.nodes.base import Node
from harness.nodes.local import LocalNode
from harness.relay import HostPort, RelaySpec, build, parse_events, parse_host_port, start_relay
from harness.relay.events import error_lines, parse_line
from harness.relay.spec import IDLE_TIMEOUT, MAX_PER_PEER, NOTSENT_LOWAT

needs_cc = pytest.mark.skipif(
    not (shutil.which("gcc") or shutil.which("cc")), reason="no C compiler (apt-get install gcc)"
)


# -- host:port -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, host, port", [
    ("198.18.1.2:5201", "198.18.1.2", 5201),
    ("0.0.0.0:1", "0.0.0.0", 1),
    ("[fd00::2]:65535", "fd00::2", 65535),
    ("server-1.example:80", "server-1.example", 80),
])
def test_parse_host_port_accepts(text, host, port):
    assert parse_host_port(text, "t") == HostPort(host, port)


@pytest.mark.parametrize("text, fragment", [
    ("198.18.1.2", "no ':'"),
    ("198.18.1.2:0", "outside 1..65535"),
    ("198.18.1.2:65536", "outside 1..65535"),
    ("198.18.1.2:http", "port must be a number"),
    ("198.18.1.2:-1", "port must be a number"),
    ("198.18.1.2:", "port must be a number"),
    (":5201", "host is empty"),
    ("fd00::2:5201", "need brackets"),
    ("[fd00::2:5201", "expected [IPv6]:PORT"),
    ("[not-v6]:5201", "not an IPv6 address"),
    ("bad_host!:5201", "neither an IP address nor a valid host name"),
    ("-lead.example:1", "neither an IP address"),
    (5201, "expected 'HOST:PORT'"),
])
def test_parse_host_port_rejects_with_reason(text, fragment):
    with pytest.raises(SpecError) as err:
        parse_host_port(text, "relay target")
    assert fragment in str(err.value)
    assert err.value.hint  # every error says how to fix it


def test_listen_address_must_be_numeric():
    with pytest.raises(SpecError, match="not an IP address"):
        RelaySpec.parse("localhost:5201", "198.18.1.2:5201")
    # ... while the target may be a name
    assert RelaySpec.parse("0.0.0.0:5201", "server:5201").target.host == "server"


# -- the spec --------------------------------------------------------------------------------

def spec(**kw) -> RelaySpec:
    return RelaySpec.parse("198.18.0.2:5201", "198.18.1.2:5202", **kw)


@pytest.mark.parametrize("field, value", [
    ("pipe_size", 100), ("pipe_size", 2**31), ("pipe_size", 65536.0), ("pipe_size", True),
    ("connect_timeout", 0), ("connect_timeout", -1), ("connect_timeout", "5"),
    ("max_streams", 0), ("max_streams", 2_000_000),
    ("drain", -0.5), ("log_path", ""),
    ("notsent_lowat", -1), ("notsent_lowat", 2**31), ("notsent_lowat", 131072.0),
    ("idle_timeout", 0), ("idle_timeout", -1), ("idle_timeout", "900"), ("idle_timeout", 1e6),
    ("max_per_peer", 0), ("max_per_peer", 2_000_000), ("max_per_peer", 16.0),
])
def test_spec_rejects_bad_options(field, value):
    with pytest.raises(SpecError, match=field):
        spec(**{field: value})


@pytest.mark.parametrize("port", [0, 65536, -5, True, "5201", 52.0])
def test_ports_are_checked_in_spec(port):
    with pytest.raises(SpecError):
        RelaySpec(HostPort("198.18.0.2", port), HostPort("198.18.1.2", 5201))


def test_argv_is_what_the_daemon_parses():
    s = spec(pipe_size=262144, connect_timeout=1.5, max_streams=64, drain=2,
             notsent_lowat=65536, idle_timeout=30.5, max_per_peer=8, log_path="/x/y.log")
    assert s.argv("/bin/srd") == [
        "/bin/srd", "--listen", "198.18.0.2:5201", "--target", "198.18.1.2:5202",
        "--pipe-size", "262144", "--connect-timeout", "1.5", "--max-streams", "64",
        "--drain", "2", "--notsent-lowat", "65536", "--idle-timeout", "30.5",
        "--max-per-peer", "8", "--log", "/x/y.log",
    ]
    # defaults are passed explicitly, so a run's command line records the values it used
    assert spec().argv("srd")[-6:] == ["--notsent-lowat", str(NOTSENT_LOWAT), "--idle-timeout",
                                       f"{IDLE_TIMEOUT:g}", "--max-per-peer", str(MAX_PER_PEER)]
    v6 = RelaySpec.parse("[::]:5201", "[fd00::2]:5202")
    assert v6.argv("srd")[1:5] == ["--listen", "[::]:5201", "--target", "[fd00::2]:5202"]


class ExplodingNode(Node):
    """Fails the test if anything is run or started on it."""

    name = "exploding"

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}

    def _execute(self, cmd, timeout, stdin):
        raise AssertionError(f"ran {cmd!r} although the spec was invalid")

    def spawn(self, cmd, *, cgroup=None):
        raise AssertionError(f"started {cmd!r} although the spec was invalid")

    def put(self, local_path, remote_path):
        raise AssertionError("copied a file although the spec was invalid")

    def get(self, remote_path, local_path):
        raise AssertionError("copied a file although the spec was invalid")


def test_start_relay_validates_before_anything_starts(tmp_path):
    good = spec()
    # RelaySpec validates on construction; build an invalid one behind its back.
    broken = RelaySpec.__new__(RelaySpec)
    for f in dataclasses.fields(RelaySpec):
        object.__setattr__(broken, f.name, getattr(good, f.name))
    object.__setattr__(broken, "listen", HostPort("198.18.0.2", 70000))
    journal = Journal(tmp_path / "j.jsonl")
    with pytest.raises(SpecError, match="70000"):
        start_relay(journal, ExplodingNode(), broken)
    assert journal.entries() == []


# -- log parsing -------------------------------------------------------------------------------

def test_parse_events_reads_fields_and_quoted_errors():
    text = (
        "2026-11-21T23:57:26.805628Z srd[2170]: event=listening listen=127.0.0.1:47002 "
        "target=127.0.0.1:47001 pid=2170 pipe_size=1048576\n"
        "srd: error: cannot listen on 1.2.3.4:5: Address already in use: another process\n"
        "2026-11-21T23:59:51.486393Z srd[7435]: event=close id=2 client=198.18.0.1:53440 "
        'reason=reset side=target error="Connection reset by peer" c2s=5852684341 s2c=0\n'
        "garbage line\n"
    )
    events = parse_events(text)
    assert [e.name for e in events] == ["listening", "close"]
    assert events[0].pid == 2170 and events[0].int("pid") == 2170
    assert events[1].get("error") == "Connection reset by peer"
    assert events[1].int("c2s") == 5852684341 and events[1].get("side") == "target"
    message = "cannot listen on 1.2.3.4:5: Address already in use: another process"
    assert error_lines(text) == [message]
    assert parse_line("srd: error: x") is None


# -- the build cache -------------------------------------------------------------------------

@needs_cc
def test_build_is_cached_and_keyed_by_source(tmp_path, monkeypatch):
    first = build.build_local(tmp_path)
    assert first.is_file() and os.access(first, os.X_OK)
    stamp = first.stat().st_mtime_ns
    again = build.build_local(tmp_path)
    assert again == first and again.stat().st_mtime_ns == stamp  # not rebuilt
    changed = tmp_path / "srd.c"
    changed.write_bytes(build.PROGRAM.source.read_bytes() + b"\n/* changed */\n")
    rebuilt = dataclasses.replace(build.PROGRAM, source=changed).build_local(tmp_path)
    assert rebuilt != first and rebuilt.parent.parent == first.parent.parent
    assert not list(tmp_path.glob("*/.build-*"))  # no half-built leftovers


def test_cache_root_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "c"))
    assert build.PROGRAM.local_cache_root() == tmp_path / "c" / "srd"
    monkeypatch.delenv("HARNESS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert build.PROGRAM.local_cache_root() == tmp_path / "x" / "harness" / "srd"


def test_cache_key_changes_with_compiler():
    assert build.PROGRAM.cache_key(b"src", "gcc 12") != build.PROGRAM.cache_key(b"src", "gcc 13")
    assert build.PROGRAM.cache_key(b"src", "gcc 12") == build.PROGRAM.cache_key(b"src", "gcc 12")


def test_missing_compiler_is_a_capability_error(monkeypatch, tmp_path):
    from harness.errors import CapabilityMissing

    monkeypatch.setattr(cbuild.shutil, "which", lambda name: None)
    with pytest.raises(CapabilityMissing, match="C compiler") as err:
        build.build_local(tmp_path)
    assert "apt-get install gcc" in err.value.hint


# -- the daemon's own argument checks (no sockets are opened) ----------------------------------

@pytest.fixture(scope="module")
def srd_binary(tmp_path_factory):
    if not (shutil.which("gcc") or shutil.which("cc")):
        pytest.skip("no C compiler (apt-get install gcc)")
    return str(build.build_local(tmp_path_factory.mktemp("srd-cache")))


@pytest.mark.parametrize("args, fragment", [
    ([], "both --listen"),
    (["--listen", "1.2.3.4:80"], "both --listen"),
    (["--listen", "1.2.3.4:0", "--target", "1.2.3.5:80"], "port must be a number 1..65535"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5:99999"], "port must be a number"),
    (["--listen", "localhost:80", "--target", "1.2.3.5:80"], "numeric IP address"),
    (["--listen", "::1:80", "--target", "1.2.3.5:80"], "need brackets"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5"], "no ':'"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5:80", "--pipe-size", "12"], "pipe-size"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5:80", "--connect-timeout", "0"],
     "connect-timeout"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5:80", "--notsent-lowat", "-1"],
     "notsent-lowat"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5:80", "--idle-timeout", "0"],
     "idle-timeout"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5:80", "--max-per-peer", "0"],
     "max-per-peer"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5:80", "--bogus"], "unknown option"),
    (["--listen", "1.2.3.4:80", "--target", "1.2.3.5:80", "extra"], "unexpected argument"),
])
def test_daemon_rejects_bad_arguments(srd_binary, args, fragment):
    proc = subprocess.run([srd_binary, *args], check=False, capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2
    assert proc.stderr.startswith("srd: error: ") and fragment in proc.stderr


def test_daemon_version_and_help(srd_binary):
    out = subprocess.run([srd_binary, "--version"], check=False,
                         capture_output=True, text=True, timeout=10)
    assert out.returncode == 0 and out.stdout.startswith("srd ")
    usage = subprocess.run([srd_binary, "--help"], check=False,
                           capture_output=True, text=True, timeout=10)
    assert usage.returncode == 0 and "--target HOST:PORT" in usage.stdout
    # srd run by hand keeps the values the harness passes (and registers) by default
    assert f"(default {NOTSENT_LOWAT};" in usage.stdout
    assert f"(default {IDLE_TIMEOUT:g})" in usage.stdout
    assert f"(default {MAX_PER_PEER})" in usage.stdout


class RemoteLikeNode(LocalNode):
    """A local shell that calls itself remote, so build_on takes the copy-and-compile path."""

    @property
    def is_local(self) -> bool:
        return False

    def describe(self) -> dict:
        return {"type": "remote-like", "name": self.name}


@needs_cc
def test_remote_build_copies_source_and_compiles_once(tmp_path):
    node = RemoteLikeNode("remote", prefix=["env", f"XDG_CACHE_HOME={tmp_path}"])
    assert not node.is_local
    binary = build.build_on(node, reuse_host_build=False)
    assert binary.startswith(f"{tmp_path}/harness/srd/") and os.access(binary, os.X_OK)
    stamp = os.stat(binary).st_mtime_ns
    assert build.build_on(node, reuse_host_build=False) == binary
    assert os.stat(binary).st_mtime_ns == stamp
    out = subprocess.run([binary, "--version"], check=False, capture_output=True, text=True,
                         timeout=10)
    assert out.stdout.startswith("srd ")


# -- srdmux's key (the trunk's authentication; the handshake itself: tests/integration/relay) --

@pytest.fixture(scope="module")
def srdmux_binary(tmp_path_factory):
    if not (shutil.which("gcc") or shutil.which("cc")):
        pytest.skip("no C compiler (apt-get install gcc)")
    return str(build.MUX_PROGRAM.build_local(tmp_path_factory.mktemp("srdmux-cache")))


def test_srdmux_needs_a_private_key_file(srdmux_binary, tmp_path):
    """Without the pair's key, or with a key others can read, srdmux refuses to start (status
    2, before any socket): the exit would otherwise take any connection as its trunk."""
    addrs = ["exit", "127.0.0.1:1", "127.0.0.1:2"]

    def run(*args):
        return subprocess.run([srdmux_binary, *args], check=False, capture_output=True,
                              text=True, timeout=10)

    missing = run(*addrs)
    assert missing.returncode == 2 and "--key-file PATH is required" in missing.stderr
    key = tmp_path / "key"
    key.write_text("k" * 64)
    key.chmod(0o640)
    shared = run("--key-file", str(key), *addrs)
    assert shared.returncode == 2 and "no one else can read" in shared.stderr
    key.chmod(0o600)
    key.write_text("short")
    assert "16..4095 bytes" in run("--key-file", str(key), *addrs).stderr
    link = tmp_path / "link"
    link.symlink_to(key)
    assert "cannot open the key file" in run("--key-file", str(link), *addrs).stderr


def test_trunk_key_is_written_private_recorded_by_folder_and_never_shown(tmp_path):
    from harness.relay.trunk import TrunkKey, write_key

    key = TrunkKey.new()
    assert len(key.secret) == 64 and key.secret not in repr(key)
    assert TrunkKey.new() != key  # one per pair
    journal = Journal(tmp_path / "j.jsonl")
    path, entry = write_key(journal, LocalNode(), key)
    folder = os.path.dirname(path)
    try:
        assert os.path.basename(folder).startswith("harness-srdmux-")
        assert (os.stat(folder).st_mode & 0o777, os.stat(path).st_mode & 0o777) == (0o700, 0o600)
        with open(path) as f:
            assert f.read() == key.secret
        assert entry.kind == "file" and entry.data == {"path": folder}
        assert key.secret not in (tmp_path / "j.jsonl").read_text()  # the journal names the folder
    finally:
        journal.undo(entry)
    assert not os.path.exists(folder)


def test_a_mux_half_without_the_pairs_key_starts_nothing(tmp_path):
    from harness.errors import HarnessError
    from harness.relay.process import relay

    journal = Journal(tmp_path / "j.jsonl")
    for kind in ("mux-entry", "mux-exit"):
        with pytest.raises(HarnessError, match="trunk_key") as err:
            with relay(journal, ExplodingNode(), kind, "198.18.0.2:1", "198.18.1.2:2"):
                pass
        assert "TrunkKey.new()" in err.value.hint
    assert journal.entries() == []


def test_srdmux_settings_are_read_from_its_listening_line():
    from harness.relay.process import _listening

    out = ("srdmux: event=trunk peer=1.2.3.4:5 authenticated=1\n"
           "srdmux: event=listening mode=exit listen=1.2.3.4:5 peer=6.7.8.9:1 max_frame=65536 "
           "connect_timeout=5.000 trunk=hmac-sha256\n")
    assert _listening(out) == {"mode": "exit", "listen": "1.2.3.4:5", "peer": "6.7.8.9:1",
                               "max_frame": "65536", "connect_timeout": "5.000",
                               "trunk": "hmac-sha256"}
    assert _listening("socat output\n") == {}
