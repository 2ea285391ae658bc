"""Kernel modules a run loads, and unloads again; the sections of a probe's output.

A module is loaded explicitly (``modprobe NAME``, recorded) before whatever
needs it -- mounting a file system, adding an RDMA link -- because that
would load it implicitly (the kernel's ``request_module``) and nothing would
record that it has to go again. The fact reads, in one probe, the loaded
modules (``/proc/modules``), a built-in one (``/sys/module/NAME`` without a
``/proc/modules`` line) and what ``modprobe --show-depends NAME`` would
load; the change's undo data lists the modules that were not loaded before,
in load order.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..errors import CapabilityMissing
from ..journal import undo_checks
from ..journal.journal import undo_handler
from ..journal.undo_left import settle
from ..nodes import Node, Result
from .operation import UNKNOWN, Change, Fact, Operation

_SECTION = re.compile(r"^@([a-z][a-z0-9_]*)$")


def sections(text: str) -> dict[str, list[str]]:
    """A probe's output split at its ``@name`` marker lines (one command, many facts)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        match = _SECTION.match(line.strip())
        if match:
            current = out.setdefault(match.group(1), [])
        elif current is not None:
            current.append(line)
    return out


def module_name(path: str) -> str:
    """``/lib/modules/6.1.0-56-amd64/kernel/.../ip6_udp_tunnel.ko.xz`` -> ``ip6_udp_tunnel``."""
    return path.rsplit("/", 1)[-1].split(".ko", 1)[0].replace("-", "_")


def load_chain(lines: list[str]) -> list[str]:
    """The modules ``modprobe --show-depends`` lists (``insmod PATH`` lines), in load order."""
    return [module_name(line.split()[1]) for line in lines
            if line.startswith("insmod ") and len(line.split()) >= 2]


@dataclass(frozen=True)
class ModuleState:
    name: str
    state: str  # "loaded" | "builtin" | "loadable"
    to_load: tuple[str, ...]  # what `modprobe NAME` would load, in order


def module_probe(module: str) -> str:
    """Shell: sections ``@loaded``, ``@builtin_MODULE`` and ``@chain_MODULE`` (several
    modules' probes may share one command)."""
    m = shlex.quote(module)
    return (f"echo @loaded; cut -d' ' -f1 /proc/modules 2>/dev/null; "
            f"echo @builtin_{m}; [ -d /sys/module/{m} ] && echo {m}; "
            f"echo @chain_{m}; modprobe --show-depends {m} 2>&1")


def parse_module(node: Node, module: str, parts: dict[str, list[str]], hint: str
                 ) -> ModuleState:
    """:func:`module_probe`'s sections; CapabilityMissing (with ``hint``) without the module."""
    loaded = {line.strip() for line in parts.get("loaded", []) if line.strip()}
    lines = parts.get(f"chain_{module}", [])
    chain = load_chain(lines)
    if module in loaded:
        return ModuleState(module, "loaded", ())
    # `builtin NAME` lines name built-in dependencies too (md5 under nfsd): only its own counts
    if module in (line.strip() for line in parts.get(f"builtin_{module}", [])) or \
            f"builtin {module}" in (line.strip() for line in lines):
        return ModuleState(module, "builtin", ())
    if module in chain:
        return ModuleState(module, "loadable", tuple(m for m in chain if m not in loaded))
    raise CapabilityMissing(f"{node.name}: the kernel has no {module} module", hint)


def module_change(node: Node, module: str, state) -> Change:
    """Load ``module`` unless it is loaded or built in (the undo unloads what this loaded)."""
    change = Change(node, "kernel-module", module, UNKNOWN, "loaded")
    if state is UNKNOWN or state.state == "loadable":
        change.before = "not loaded" if state is not UNKNOWN else UNKNOWN
        change.command = shlex.join(["modprobe", module])
        change.undo = {"modules": list(state.to_load) if state is not UNKNOWN and
                       state.to_load else [module]}
    else:
        change.before = change.after = state.state
    return change


@dataclass
class KernelModules(Operation):
    """``modules`` loaded on ``node`` (each unless loaded or built in; the undo unloads what
    this loaded). For a run that loads once what many recorded scopes would otherwise load
    and unload each time (S2 mounts NFS three times: ~10 s of SSH commands per cycle into
    a TCG VM)."""

    node: Node
    modules: tuple[str, ...]
    hint: str = "the kernel lacks it: install its modules (linux-image-*)"

    def facts(self) -> dict[str, Fact]:
        def parse(res: Result) -> list[ModuleState]:
            parts = sections(res.stdout)
            return [parse_module(self.node, m, parts, self.hint) for m in self.modules]

        return {"modules": Fact(self.node, "; ".join(map(module_probe, self.modules)), parse)}

    def diff(self, facts: dict) -> list[Change]:
        states = facts["modules"]
        return [module_change(self.node, m, UNKNOWN if states is UNKNOWN else states[i])
                for i, m in enumerate(self.modules)]


_MODULE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # as /proc/modules names them


@undo_handler("kernel-module", gone_with_namespace=False)
def _unload_modules(node: Node, data: dict) -> str | None:
    """Unload the modules this run loaded, last loaded first, each only if still loaded,
    and see them gone (/proc/modules).

    The module asked for (the last of the list: modprobe loads it after its
    dependencies) must go: if another user started to use it since, the undo fails
    (UndoLeft) rather than the module left silently. A dependency this run loaded that
    another module uses by now (a reference count above 0) has become someone else's and
    stays: a note, not a failure. Any other module this run loaded still there is a failure.
    """
    modules = data.get("modules")
    if not isinstance(modules, list) or not modules:
        raise undo_checks.refuse("kernel-module", "modules is not a list of names", modules)
    for module in modules:
        undo_checks.text("kernel-module", "module", module, _MODULE_NAME)
    asked = modules[-1]
    steps = []
    for module in reversed(modules):
        m = shlex.quote(module)
        if module == asked:
            steps.append(f"if grep -q '^{m} ' /proc/modules; then rmmod {m}; fi")
        else:
            steps.append(f"if [ \"$(awk '$1 == \"{m}\" {{print $3}}' /proc/modules)\" = 0 ]; "
                         f"then rmmod {m}; fi")
    # as found: none of them listed, except a dependency now used by another module (a note)
    names = " ".join(shlex.quote(m) for m in modules)
    look = (f"fail=0; for m in {names}; do line=$(awk -v m=\"$m\" '$1 == m' /proc/modules); "
            "[ -n \"$line\" ] || continue; set -- $line; "
            f"if [ \"$m\" != {shlex.quote(asked)} ] && [ \"$3\" != 0 ]; then echo \"note $m used by $4\"; "
            "else echo \"loaded $m (used $3 times, by $4)\"; fail=1; fi; done; [ $fail = 0 ]")
    res = settle(node, act="; ".join(steps), look=look,
                 what=f"kernel module(s) {', '.join(modules)} on {node.name}",
                 finish="rmmod " + " ".join(shlex.quote(m) for m in reversed(modules)),
                 wait=2.0)
    notes = [line[5:] for line in res.stdout.splitlines() if line.startswith("note ")]
    return "; ".join(f"module {n.strip().rstrip(',')}, which the harness did not load: left loaded"
                     for n in notes) or None
