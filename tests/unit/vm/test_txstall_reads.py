"""How the wire watch reads a VM console (harness.vm.txstall): every 5 s while a command
waits, only the bytes written since its last read, and what it finds is what a read of the
whole file finds.

The console is run a416eb's lab VM console (data/, see test_txstall.py), written a piece at
a time as the guest would."""

from __future__ import annotations

import builtins
import os
from pathlib import Path

import pytest

from harness.vm import txstall
from harness.vm.txstall import WIRE_STALL_FATAL_S, WiredConsole, WireWatch, find_tx_stall, read_tx_stall

DATA = Path(__file__).parent / "data"
LAB = DATA / "s1-a416eb-lab-console.txt"
B = DATA / "s1-a416eb-b-console.txt"
# the lab console's lines with "\n" alone, so that what a text read returns is its bytes
LINES = LAB.read_bytes().replace(b"\r", b"").splitlines(keepends=True)
FIRST_REPORT = 8  # LINES[8:14]: the stall's first six reports (stuck 5, 10, 15 s)


class _Recorded:
    """A file whose reads are recorded, as bytes whichever mode it was opened in."""

    def __init__(self, fh, reads: list[bytes]):
        self._fh, self._reads = fh, reads

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def read(self, *args):
        data = self._fh.read(*args)
        self._reads.append(data if isinstance(data, bytes) else data.encode())
        return data


def _recorded_reads(monkeypatch) -> list[bytes]:
    """Every read of a console file by harness.vm.txstall from now on."""
    reads: list[bytes] = []

    def recorded_open(*args, **kwargs):
        return _Recorded(builtins.open(*args, **kwargs), reads)  # noqa: SIM115 (closed by its exit)

    monkeypatch.setattr(txstall, "open", recorded_open, raising=False)
    return reads


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def _lab_watch(console: Path) -> WireWatch:
    return WireWatch((WiredConsole("s1-lab", str(console), ("wire",)),))


def test_each_check_reads_only_what_the_console_wrote_since_the_last_one(monkeypatch, tmp_path):
    console = tmp_path / "console.log"
    console.write_bytes(b"".join(LINES[:FIRST_REPORT + 4]))  # stuck 10 s
    watch = _lab_watch(console)
    reads = _recorded_reads(monkeypatch)
    assert watch.fired() is None
    assert reads == [b"".join(LINES[:FIRST_REPORT + 4])]
    _append(console, b"".join(LINES[FIRST_REPORT + 4:FIRST_REPORT + 6]))  # stuck 15 s
    assert watch.fired() is None
    assert reads[1:] == [b"".join(LINES[FIRST_REPORT + 4:FIRST_REPORT + 6])]
    assert watch.fired() is None and reads[2:] == [b""]  # nothing new, nothing read
    _append(console, b"".join(LINES[FIRST_REPORT + 6:]))  # stuck 1373 s, then 1379 s
    vm, stall = watch.fired()
    assert reads[3:] == [b"".join(LINES[FIRST_REPORT + 6:])]
    # the reports of the earlier reads count: the same stall as the whole file's
    assert vm == "s1-lab" and stall == find_tx_stall(LAB.read_text(), "wire")
    assert stall.reports == 10 and stall.began_uptime_s == pytest.approx(1329.838, abs=1e-3)


def test_a_line_written_in_two_pieces_is_read_once_and_whole(monkeypatch, tmp_path):
    """The first report past 30 s reaches the file in two writes: its first piece is kept
    until its newline comes, and only the second piece is read then."""
    console = tmp_path / "console.log"
    line = LINES[FIRST_REPORT + 6]  # "... transmit queue 0 timed out 1373184 ms\n"
    cut = line.index(b"1373184") + 3
    console.write_bytes(b"".join(LINES[:FIRST_REPORT + 6]) + line[:cut])  # "... timed out 137"
    watch = _lab_watch(console)
    reads = _recorded_reads(monkeypatch)
    assert watch.fired() is None  # stuck 15 s so far
    _append(console, line[cut:])  # "3184 ms\n"
    vm, stall = watch.fired()
    assert reads[1:] == [line[cut:]]
    assert vm == "s1-lab" and stall.lasted_s == pytest.approx(1373.184) and stall.reports == 7
    assert stall == read_tx_stall(str(console), "wire")


def test_a_last_line_without_its_newline_counts_as_it_stands_and_once(tmp_path):
    console = tmp_path / "console.log"
    console.write_bytes(b"".join(LINES[:FIRST_REPORT + 7]).rstrip(b"\n"))  # stuck 1373 s
    tail = txstall._ConsoleTail(WiredConsole("s1-lab", str(console), ("wire",)))
    assert tail.read() and tail.stall("wire").lasted_s == pytest.approx(1373.184)
    assert tail.stall("wire").lasted_s >= WIRE_STALL_FATAL_S  # a watch fires on it at once
    _append(console, b"\n")
    assert tail.read() and tail.stall("wire").reports == 7  # its newline came: still once


def test_a_console_read_a_byte_at_a_time_says_what_the_whole_file_says(tmp_path):
    """At every length the console could have when it is read -- a line cut anywhere, "\\r"
    apart from its "\\n", a line ended by "\\r" alone, a UTF-8 character or a bad byte cut
    in two -- the stall read a piece at a time is the one a read of the whole file finds."""
    raw = LAB.read_bytes()  # the guest's "\r\r\n" and "\r\n" as they were
    raw = raw.replace(b"Connection closed", b"Conn\xc3\xa9xion \xff\xc3 closed")
    raw = raw.replace(b"34054\r\r\n", b"34054\r")  # the first report's line begins after "\r"
    console = tmp_path / "console.log"
    console.write_bytes(b"")
    tail = txstall._ConsoleTail(WiredConsole("s1-lab", str(console), ("wire", "eth0")))
    for i in range(len(raw)):
        _append(console, raw[i:i + 1])
        assert tail.read()
        for ifname in ("wire", "eth0"):
            assert tail.stall(ifname) == read_tx_stall(str(console), ifname), (i, ifname)
    assert tail.stall("wire").reports == 10


def test_a_console_that_shrank_or_was_replaced_is_read_from_its_start(tmp_path):
    console = tmp_path / "console.log"
    console.write_bytes(LAB.read_bytes())
    tail = txstall._ConsoleTail(WiredConsole("s1-lab", str(console), ("wire",)))
    assert tail.read() and tail.stall("wire").reports == 10
    console.write_bytes(B.read_bytes())  # the same file, shorter: no stall in it
    assert tail.read() and tail.stall("wire") is None
    # another file at the path, longer than what was read: its first reports count too
    reports = b"".join(LINES[FIRST_REPORT:])
    assert len(reports) > len(B.read_bytes())
    (tmp_path / "new.log").write_bytes(reports + B.read_bytes())
    os.replace(tmp_path / "new.log", console)
    assert tail.read() and tail.stall("wire") == find_tx_stall(reports.decode(), "wire")
    assert tail.stall("wire").reports == 10
    console.unlink()  # the VM is gone
    assert not tail.read()
    console.write_bytes(b"".join(LINES[:FIRST_REPORT + 2]))  # a console at the path again
    assert tail.read() and tail.stall("wire").reports == 2
