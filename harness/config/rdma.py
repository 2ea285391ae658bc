"""Soft-RoCE (``rdma_rxe``): RDMA verbs emulated by the kernel over an ordinary Ethernet NIC.

Study S1's analogue of M-VIA. :class:`RxeLink` is one configuration
operation (fact -> diff -> journal -> apply, :mod:`harness.config.operation`):

* the module: ``rdma_rxe`` is loaded only if it is not (read from
  ``/proc/modules``), and the undo unloads exactly the modules this run loaded
  -- ``rdma_rxe`` and those of its dependencies (``ib_core``, ``ib_uverbs``,
  ``udp_tunnel``...) that were not loaded before, read from ``modprobe
  --show-depends`` -- never one that was there already (another user's, or a
  hardware RDMA driver's ``ib_core``). A built-in rxe needs no loading.
  The module is loaded explicitly, before the link: ``rdma link add`` would
  otherwise load it implicitly (the kernel's ``request_module``) and nothing
  would record that it has to go again.
* the link: ``rdma link add NAME type rxe netdev DEV`` (iproute2's ``rdma``;
  read back with ``rdma -j link show``). A link NAME already on DEV is as
  asked (a no-op: nothing to undo); NAME on another device, or another RDMA
  link on DEV, was not made by this run: refused before anything changes.
  The undo deletes the link this run added, and only it.

Soft-RoCE lives in the machine's initial network namespace (its UDP port
4791 socket is there, kernel 6.x), so the operation runs on a machine --
a VM of the lab or an inventory host -- and refuses a namespace node.

The netdev's MTU is a separate operation (:class:`harness.config.interface.Mtu`):
RoCE's active MTU follows it (1500 gives 1024, 9000 gives 4096), so a study
applies both; the netdev's existence is checked here with that module's fact.

Locked memory: verbs programs pin (register) their buffers, which counts
against RLIMIT_MEMLOCK (Debian's default is 8 MiB; root with CAP_IPC_LOCK is
exempt, but a study must not depend on who runs it). The verbs tools are
therefore launched under ``prlimit --memlock=unlimited`` (:func:`with_memlock`)
rather than by a recorded change of the machine: the limit belongs to that one
process and ends with it, so there is nothing to undo and nothing to leave
behind after a crash; it is recorded where it matters, in each tool's archived
command line. A machine-wide change would be the wrong tool anyway --
``/etc/security/limits.conf`` reaches only new PAM sessions (not the SSH
commands or agents already running), and ``prlimit --pid`` on a running shell
would have to find, and later restore, every process that needs it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import CapabilityMissing, SpecError
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import settle
from ..nodes import Node
from ..tools.registry import Tool
from .interface import mtu_fact
from .kmod import load_chain, sections  # kmod also registers the kernel-module undo
from .operation import UNKNOWN, Change, Fact, Operation

RDMA = Tool("rdma", "rdma -V", "iproute2")
PRLIMIT = Tool("prlimit", "prlimit --version", "util-linux")

MODULE = "rdma_rxe"
_LINK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,62}\Z")  # an IB device name (< 64 bytes)
_NETDEV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}\Z")  # IFNAMSIZ 16 with its NUL
_NO_NETLINK = "Failed to open NETLINK_RDMA socket"  # no ib_core loaded yet: no links either
_MODULE_HINT = ("use a kernel that has rdma_rxe (Debian's linux-image-amd64 builds it as a "
                "module, CONFIG_RDMA_RXE=m): run the study in the VM lab, or install the "
                "kernel's modules on this machine")

# One command: tool, loaded modules, a built-in rxe, rxe's module chain, the RDMA links.
_PROBE = ('command -v rdma >/dev/null 2>&1 || { echo @notool; exit 0; }; '
          'echo @loaded; cut -d" " -f1 /proc/modules 2>/dev/null; '
          f'echo @builtin; [ -d /sys/module/{MODULE} ] && echo {MODULE}; '
          f'echo @chain; modprobe --show-depends {MODULE} 2>&1; '
          'echo @links; rdma -j link show 2>&1')


def with_memlock(argv: Sequence[str]) -> list[str]:
    """``argv`` run with an unlimited locked-memory limit of its own (see the module's doc)."""
    return ["prlimit", "--memlock=unlimited", *argv]


@dataclass(frozen=True)
class RdmaLink:
    """One line of ``rdma -j link show``: an RDMA device's port and its netdev."""

    name: str  # "rxe0"
    port: int
    state: str  # "ACTIVE", "DOWN"
    physical_state: str  # "LINK_UP"
    netdev: str  # "" for a device without one (InfiniBand)


@dataclass(frozen=True)
class RxeState:
    """What :func:`rxe_fact` reads: the module's state and every RDMA link."""

    module: str  # "loaded" | "builtin" | "loadable" | "missing"
    to_load: tuple[str, ...]  # modules `modprobe rdma_rxe` would load, in order
    links: tuple[RdmaLink, ...]

    def link(self, name: str) -> RdmaLink | None:
        return next((link for link in self.links if link.name == name), None)


def parse_links(text: str) -> tuple[RdmaLink, ...]:
    """``rdma -j link show`` (iproute2 >= 5.x): a JSON list, one object per device port."""
    text = text.strip()
    if not text:
        return ()
    return tuple(RdmaLink(str(d["ifname"]), int(d.get("port", 1)), str(d.get("state", "")),
                          str(d.get("physical_state", "")), str(d.get("netdev", "")))
                 for d in json.loads(text))


def parse_rxe_state(node_name: str, text: str) -> RxeState:
    """:func:`rxe_fact`'s output; CapabilityMissing when Soft-RoCE cannot be set up there."""
    if "@notool" in text:
        raise CapabilityMissing(f"{node_name}: no `rdma` command",
                                f"install it: apt-get install {RDMA.package} (it ships `rdma`)")
    parts = sections(text)
    loaded = {line.strip() for line in parts.get("loaded", []) if line.strip()}
    chain = load_chain(parts.get("chain", []))
    if MODULE in loaded:
        module = "loaded"
    elif MODULE in (line.strip() for line in parts.get("builtin", [])):
        module = "builtin"
    elif MODULE in chain:
        module = "loadable"
    else:
        raise CapabilityMissing(f"{node_name}: the kernel has no {MODULE} module (Soft-RoCE)",
                                _MODULE_HINT)
    links_text = "\n".join(parts.get("links", []))
    if _NO_NETLINK in links_text:
        if module == "loaded":
            raise CapabilityMissing(f"{node_name}: `rdma link show` failed although {MODULE} "
                                    f"is loaded: {links_text.strip()[-200:]}",
                                    "is this a network namespace other than the initial one?")
        links: tuple[RdmaLink, ...] = ()  # RDMA's netlink comes with ib_core: no links yet
    else:
        try:
            links = parse_links(links_text)
        except (ValueError, KeyError, TypeError):
            raise CapabilityMissing(f"{node_name}: cannot read `rdma -j link show`: "
                                    f"{links_text.strip()[-200:]!r}",
                                    "an iproute2 with JSON output of `rdma` is needed "
                                    "(Debian 11 or later)") from None
    to_load = tuple(m for m in chain if m not in loaded) if module == "loadable" else ()
    return RxeState(module, to_load, links)


def rxe_fact(node: Node) -> Fact:
    return Fact(node, _PROBE, lambda res: parse_rxe_state(node.name, res.stdout))


def link_add_command(name: str, netdev: str) -> str:
    return shlex.join(["rdma", "link", "add", name, "type", "rxe", "netdev", netdev])


@dataclass
class RxeLink(Operation):
    """A Soft-RoCE link ``name`` (e.g. ``rxe0``) over the Ethernet device ``netdev`` of
    machine ``node``, with ``rdma_rxe`` loaded if it is not (see the module's doc)."""

    node: Node
    name: str
    netdev: str

    def check(self) -> None:
        if not _LINK_NAME.match(self.name or ""):
            raise SpecError(f"RDMA link name {self.name!r} is not valid",
                            "use 1-63 letters, digits, '_', '.', '-', starting with a letter "
                            "(e.g. rxe0)")
        if not _NETDEV.match(self.netdev or "") or self.netdev in (".", ".."):
            raise SpecError(f"network device name {self.netdev!r} is not valid",
                            "give an interface of the machine, 1-15 characters (see `ip link`)")
        if self.node.netns_path is not None:
            raise SpecError(f"{self.node.name} is a network namespace: Soft-RoCE links live in "
                            "a machine's initial namespace (kernel 6.x)",
                            "give each end its own machine (the two-VM lab, or inventory hosts)")

    def facts(self) -> dict[str, Fact]:
        return {"rxe": rxe_fact(self.node), "mtu": mtu_fact(self.node, self.netdev)}

    def diff(self, facts: dict) -> list[Change]:
        state, mtu = facts["rxe"], facts["mtu"]
        link_after = f"rxe over {self.netdev}" + ("" if mtu is UNKNOWN else f" (MTU {mtu})")
        if state is UNKNOWN:  # a dry run of a machine not built: plan from the asked state
            return [Change(self.node, "kernel-module", MODULE, UNKNOWN, "loaded",
                           command=f"modprobe {MODULE}", undo={"modules": [MODULE]}),
                    Change(self.node, "rdma-link", self.name, UNKNOWN, link_after,
                           command=link_add_command(self.name, self.netdev),
                           undo={"name": self.name})]
        module = Change(self.node, "kernel-module", MODULE, state.module, "loaded")
        if state.module == "builtin":
            module.after = "builtin"
        elif state.module == "loadable":
            module.before = "not loaded"
            module.command = f"modprobe {MODULE}"
            module.undo = {"modules": list(state.to_load or (MODULE,))}
        found = state.link(self.name)
        if found is not None and found.netdev != self.netdev:
            raise SpecError(f"{self.node.name} already has RDMA link {self.name} over "
                            f"{found.netdev or 'no netdev'}, not {self.netdev}",
                            "it was not made by this run: choose another name, or delete it "
                            f"yourself (rdma link delete {self.name})")
        other = next((link for link in state.links
                      if link.netdev == self.netdev and link.name != self.name), None)
        if other is not None:
            raise SpecError(f"{self.node.name}:{self.netdev} already has RDMA link {other.name}",
                            f"the kernel allows one per device: use {other.name}, or delete it "
                            f"yourself (rdma link delete {other.name})")
        link = Change(self.node, "rdma-link", self.name, None, link_after)
        if found is not None:
            link.before = link.after
        else:
            link.command = link_add_command(self.name, self.netdev)
            link.undo = {"name": self.name, "netdev": self.netdev}
        return [module, link]


@undo_handler("rdma-link", gone_with_namespace=False)
def _delete_link(node: Node, data: dict) -> None:
    """Delete the link this run added, if it is still there (the module may be gone already)."""
    name = shlex.quote(undo_checks.ifname("rdma-link", data.get("name"), "name"))
    settle(node, act=f"if rdma link show {name}/1 >/dev/null 2>&1; then rdma link delete {name}; fi",
           look=f"! rdma link show {name}/1 >/dev/null 2>&1",
           what=f"RDMA link {data.get('name')} on {node.name}", finish=f"rdma link delete {name}",
           timeout=30)
