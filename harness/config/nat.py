"""NAT on a node, as an nftables table of the harness's own: probe -> apply -> record -> remove.

Why a table of our own: nftables runs the base chains of every table, so a
dedicated table adds translation without reading, editing or reordering any
rule the machine already has, and ``nft delete table ip NAME`` later removes
exactly what was added. The name is unique per application
(``harness_<label>_<random>``) and is checked to be free first.

Order of events (the :class:`Nat` operation): the fact reads nft's version,
the node's tables and devices in one command (a device the rules name that is
missing is a :class:`SpecError` before any change); the journal records
family + table name *before* ``nft -f`` creates the whole table in one
transaction (all or nothing); the undo handler deletes that table if it still
exists.

Evidence: every translating rule carries a counter named by its comment, and a
forward-hook chain (policy accept, it never drops) counts packets and bytes of
connections the kernel has source-NATed (``ct status snat``). Together with
``conntrack -L`` (parsed by :func:`conntrack_entries`) a run can show that its
traffic really was translated, not merely that a rule existed.
"""

from __future__ import annotations

import ipaddress
import json
import re
import secrets
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import CapabilityMissing, SpecError
from ..journal import undo_checks
from ..journal.journal import Entry, Journal, undo_handler
from ..journal.undo_left import settle
from ..nodes import Node, Result
from ..tools.registry import Tool
from .operation import UNKNOWN, Change, Fact, Operation, apply
from .record import ChangeRecord

NFT = Tool("nft", "nft --version", "nftables")
CONNTRACK = Tool("conntrack", "conntrack -V", "conntrack")

FAMILY = "ip"
_LABEL = re.compile(r"^[a-z][a-z0-9]{0,15}\Z")
_DEVICE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}\Z")
TRANSLATED_COUNTER = "translated"  # comment of the forward-chain rule counting SNAT'd traffic


@dataclass(frozen=True)
class Masquerade:
    """Source NAT for ``source`` leaving through ``out_dev``.

    ``destination`` restricts it to traffic towards that prefix (e.g. the
    public segment), so routed traffic to other private prefixes stays
    untranslated. ``to_address`` uses a fixed ``snat to`` instead of
    masquerade (the address of ``out_dev`` at packet time).
    """

    source: str
    out_dev: str
    destination: str | None = None
    to_address: str | None = None

    @property
    def counter(self) -> str:
        return f"snat {self.source} -> {self.destination or 'any'} via {self.out_dev}"


@dataclass(frozen=True)
class PortForward:
    """Destination NAT: TCP to ``port`` arriving on ``in_dev`` goes to ``to_address:to_port``."""

    in_dev: str
    port: int
    to_address: str
    to_port: int | None = None

    @property
    def counter(self) -> str:
        return f"dnat {self.in_dev}:{self.port} -> {self.to_address}:{self.to_port or self.port}"


@dataclass(frozen=True)
class NatRules:
    """The rules of one NAT table of ours: source NAT (masquerade) and port forwards."""

    masquerade: tuple[Masquerade, ...] = ()
    forwards: tuple[PortForward, ...] = ()

    def validate(self) -> NatRules:
        if not self.masquerade and not self.forwards:
            raise SpecError("NAT rules need at least one masquerade or port-forward rule")
        for rule in self.masquerade:
            _network(rule.source, "NAT source")
            if rule.destination is not None:
                _network(rule.destination, "NAT destination")
            if rule.to_address is not None:
                _address(rule.to_address, "NAT snat address")
            _device(rule.out_dev)
        for fwd in self.forwards:
            _device(fwd.in_dev)
            _address(fwd.to_address, "NAT port-forward target")
            for port in (fwd.port, fwd.to_port or fwd.port):
                if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                    raise SpecError(f"NAT port-forward port {port!r} is not a TCP port",
                                    "use 1..65535")
        return self

    def devices(self) -> set[str]:
        return {r.out_dev for r in self.masquerade} | {f.in_dev for f in self.forwards}

    def ruleset(self, table: str) -> str:
        """The nft script that creates ``table`` with every rule (one transaction)."""
        self.validate()
        lines = [f"table {FAMILY} {table} {{"]
        if self.forwards:
            lines += ["  chain prerouting {",
                      "    type nat hook prerouting priority dstnat; policy accept;"]
            for f in self.forwards:
                lines.append(f'    iifname "{f.in_dev}" tcp dport {f.port} counter '
                             f"dnat to {f.to_address}:{f.to_port or f.port} "
                             f'comment "{f.counter}"')
            lines.append("  }")
        if self.masquerade:
            lines += ["  chain postrouting {",
                      "    type nat hook postrouting priority srcnat; policy accept;"]
            for m in self.masquerade:
                match = f"ip saddr {m.source} "
                if m.destination:
                    match += f"ip daddr {m.destination} "
                action = f"snat to {m.to_address}" if m.to_address else "masquerade"
                lines.append(f'    {match}oifname "{m.out_dev}" counter {action} '
                             f'comment "{m.counter}"')
            lines.append("  }")
        lines += ["  chain forward {",
                  "    type filter hook forward priority filter; policy accept;",
                  f'    ct status snat counter comment "{TRANSLATED_COUNTER}"',
                  "  }", "}"]
        return "\n".join(lines) + "\n"


def _network(text: str, what: str) -> None:
    try:
        ipaddress.IPv4Network(text, strict=False)
    except ValueError:
        raise SpecError(f"{what} {text!r} is not an IPv4 prefix", "write e.g. 10.1.0.0/24") \
            from None


def _address(text: str, what: str) -> None:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        raise SpecError(f"{what} {text!r} is not an IPv4 address", "write e.g. 198.18.0.1") \
            from None


def _device(name: str) -> None:
    if not isinstance(name, str) or not _DEVICE.match(name):
        raise SpecError(f"interface name {name!r} is not valid for a NAT rule",
                        "give the device name as `ip link` shows it (at most 15 characters)")


@dataclass(frozen=True)
class NatProbe:
    """What a node offers for NAT before anything is changed."""

    nft_version: str
    tables: tuple[tuple[str, str], ...]  # (family, name)
    devices: tuple[str, ...]
    ip_forward: str


# One command: nft's version, the tables (JSON), the devices (JSON) and forwarding.
_PROBE = ("nft --version 2>&1 || echo @nonft; echo @tables; nft -j list tables 2>&1; "
          "echo \"@status $?\"; echo @links; ip -j link show; echo @forward; "
          "sysctl -n net.ipv4.ip_forward 2>/dev/null; true")


def nat_fact(node: Node) -> Fact:
    """What ``node`` offers for NAT; CapabilityMissing when nft cannot be used there."""

    def parse(res: Result) -> NatProbe:
        text = res.stdout
        version, _, rest = text.partition("@tables\n")
        if "@nonft" in version:
            raise CapabilityMissing(f"{node.name} has no nft (nftables) program",
                                    "apt-get install nftables")
        listing, _, rest = rest.partition("@status ")
        status, _, rest = rest.partition("\n")
        if status.strip() != "0":
            raise CapabilityMissing(f"nft cannot list tables on {node.name}: "
                                    f"{listing.strip()[-300:]}",
                                    "NAT needs root and a kernel with nf_tables + nf_nat")
        links, _, forward = rest.partition("@forward\n")
        links = links.removeprefix("@links\n")
        tables = tuple((t["table"]["family"], t["table"]["name"])
                       for t in json.loads(listing or "{}").get("nftables", []) if "table" in t)
        return NatProbe(version.strip(), tables,
                        tuple(link["ifname"] for link in json.loads(links or "[]")),
                        forward.strip())

    return Fact(node, _PROBE, parse)


def probe_nat(node: Node) -> NatProbe:
    return nat_fact(node).read()


@dataclass
class Nat(Operation):
    """``rules`` in a new table of our own on ``node`` (name in :attr:`table`)."""

    node: Node
    rules: NatRules
    label: str = "nat"
    table: str = ""

    def check(self) -> None:
        if not _LABEL.match(self.label):
            raise SpecError(f"NAT label {self.label!r} is not valid",
                            "use 1-16 lower-case letters/digits")
        self.rules.validate()

    def facts(self) -> dict[str, Fact]:
        return {"nat": nat_fact(self.node)}

    def diff(self, facts: dict) -> list[Change]:
        probe = facts["nat"]
        existing: set[str] = set()
        if probe is not UNKNOWN:
            missing = sorted(self.rules.devices() - set(probe.devices))
            if missing:
                raise SpecError(f"{self.node.name} has no interface {', '.join(missing)} for the "
                                f"NAT rules", f"its interfaces are: {', '.join(probe.devices)}")
            existing = {name for fam, name in probe.tables if fam == FAMILY}
        name = f"harness_{self.label}_{secrets.token_hex(3)}"
        while name in existing:  # never take over a table that is not ours
            name = f"harness_{self.label}_{secrets.token_hex(3)}"
        self.table = name
        summary = "; ".join([m.counter for m in self.rules.masquerade]
                            + [f.counter for f in self.rules.forwards])
        # nft -f creates the whole table in one transaction: all or nothing.
        command = f"nft -f - <<'HARNESS_NFT'\n{self.rules.ruleset(name)}HARNESS_NFT"
        return [Change(self.node, "nat-table", f"{FAMILY} {name}", None, summary,
                       command=command, undo={"family": FAMILY, "table": name})]


@dataclass
class NatTable:
    """A NAT table this run created on ``node``."""

    node: Node
    name: str
    rules: NatRules
    entry: Entry = field(repr=False)
    family: str = FAMILY

    def listing(self) -> dict:
        res = self.node.run(["nft", "-j", "list", "table", self.family, self.name], timeout=10)
        return json.loads(res.stdout)

    def text(self) -> str:
        return self.node.run(["nft", "list", "table", self.family, self.name], timeout=10).stdout

    def counters(self) -> dict[str, dict[str, int]]:
        """{rule comment: {"packets": n, "bytes": n}} for every counted rule of the table."""
        return parse_counters(self.listing())

    def exists(self) -> bool:
        return self.node.run(["nft", "list", "table", self.family, self.name], check=False,
                             timeout=10).ok


def parse_counters(listing: dict) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for item in listing.get("nftables", []):
        rule = item.get("rule")
        if not rule:
            continue
        for expr in rule.get("expr", []):
            if isinstance(expr, dict) and "counter" in expr:
                key = rule.get("comment") or f"{rule['chain']}#{rule['handle']}"
                out[key] = {"packets": int(expr["counter"]["packets"]),
                            "bytes": int(expr["counter"]["bytes"])}
    return out


def apply_nat(journal: Journal, node: Node, rules: NatRules, label: str = "nat"
              ) -> tuple[NatTable, ChangeRecord]:
    """Create a table of our own with ``rules`` on ``node``; record it first."""
    op = Nat(node, rules, label)
    (record,) = apply(journal, [op])
    entry = next(e for e in reversed(journal.entries())
                 if e.kind == "nat-table" and e.data["table"] == op.table)
    return NatTable(node, op.table, rules, entry), record


def remove_nat(journal: Journal, table: NatTable) -> None:
    """Delete the table now (the journal marks it undone). Safe to repeat."""
    journal.undo(table.entry)


@contextmanager
def nat_applied(journal: Journal, node: Node, rules: NatRules, label: str = "nat",
                records: list[ChangeRecord] | None = None) -> Iterator[NatTable]:
    """:func:`apply_nat` for the block's duration; removed on exit, also on error."""
    table, record = apply_nat(journal, node, rules, label)
    if records is not None:
        records.append(record)
    try:
        yield table
    finally:
        remove_nat(journal, table)


# -- conntrack -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tuple4:
    src: str
    dst: str
    sport: int
    dport: int


@dataclass(frozen=True)
class ConntrackEntry:
    protocol: str
    state: str
    original: Tuple4
    reply: Tuple4
    flags: tuple[str, ...] = ()

    @property
    def source_translated(self) -> bool:
        """The reply goes to another address than the original source: SNAT/masquerade."""
        return self.reply.dst != self.original.src

    @property
    def destination_translated(self) -> bool:
        return self.reply.src != self.original.dst


def parse_conntrack(text: str) -> list[ConntrackEntry]:
    """Entries of ``conntrack -L`` (default text format) for TCP and UDP flows."""
    out = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 4 or words[0] not in ("tcp", "udp"):
            continue
        kv = [w.split("=", 1) for w in words if "=" in w]
        tuples: list[dict] = [{}, {}]
        side = 0
        for key, value in kv:
            if key in tuples[side] and side == 0:
                side = 1
            if key in ("src", "dst", "sport", "dport"):
                tuples[side][key] = value
        if not all(len(t) == 4 for t in tuples):
            continue
        state = words[3] if words[0] == "tcp" and "=" not in words[3] else ""
        flags = tuple(w.strip("[]") for w in words if w.startswith("["))
        out.append(ConntrackEntry(
            words[0], state,
            *(Tuple4(t["src"], t["dst"], int(t["sport"]), int(t["dport"])) for t in tuples),
            flags))
    return out


def conntrack_text(node: Node) -> str:
    res = node.run(["conntrack", "-L"], check=False, timeout=20)
    if not res.ok and "command not found" in res.stderr + res.stdout:
        raise CapabilityMissing(f"{node.name} has no conntrack program",
                                "apt-get install conntrack")
    return res.stdout


def conntrack_entries(node: Node) -> list[ConntrackEntry]:
    return parse_conntrack(conntrack_text(node))


#: The tables this module makes: harness_<label>_<6 hex digits>, never another one.
_OWN_TABLE = re.compile(r"^harness_[A-Za-z0-9_-]{1,40}\Z")


@undo_handler("nat-table")
def _delete_table(node: Node, data: dict) -> None:
    family = data.get("family")
    if family != FAMILY:
        raise undo_checks.refuse("nat-table", f"family is not {FAMILY}", family)
    name = undo_checks.text("nat-table", "table", data.get("table"), _OWN_TABLE)
    listed = shlex.join(["nft", "list", "table", family, name])
    settle(node, act=f"! {listed} >/dev/null 2>&1 || nft delete table {family} {name}",
           look=f"! {listed} >/dev/null 2>&1", what=f"nft table {family} {name} on {node.name}",
           finish=f"nft delete table {family} {name}", timeout=20)
