"""GPFS operations against fake clusters (no GPFS here): -Y parsing, plan, no-op, undo.

Every -Y text below is MODELLED ON IBM's documentation (and on the public
parsers that quote it), never captured from a real cluster: the HEADER lines
of mmlsconfig, mmlscluster and mmlsmount follow what the documentation and
those parsers show; those of ``mmremotecluster/mmremotefs/mmauth show -Y``
are guesses from the documented text output (see harness/config/gpfs_remote.py).
"""

from __future__ import annotations

import json
import shlex

import pytest
from conftest import CommandOnlyNode

from harness.config import operation
from harness.config.gpfs import (
    LOCK,
    MMFS_BIN,
    MMLSCLUSTER,
    GpfsConfig,
    decode,
    gpfs_available,
    gpfs_member,
    normalise,
    parse_mmlscluster_y,
    parse_mmlsconfig_y,
    parse_mmlsmount_y,
    parse_y,
)
from harness.config.gpfs import attribute as gpfs_attribute
from harness.config.gpfs_remote import (
    GpfsGrant,
    GpfsRemoteMount,
    parse_mmauth_y,
    parse_mmremotecluster_y,
    parse_mmremotefs_y,
)
from harness.config.operation import UNKNOWN, ApplyFailed, apply, describe, plan
from harness.errors import CapabilityMissing, SpecError
from harness.journal.journal import Journal
from harness.lab.probe import FEATURES, tool_versions

# -- fixtures modelled on the documentation ------------------------------------------------------

MMLSCONFIG_Y = """\
mmlsconfig::HEADER:version:reserved:reserved:configParameter:value:nodeList:
mmlsconfig::0:1:::clusterName:cluster1.kgn.ibm.com::
mmlsconfig::0:1:::clusterId:680681562214606028::
mmlsconfig::0:1:::autoload:no::
mmlsconfig::0:1:::minReleaseLevel:5.1.9.0::
mmlsconfig::0:1:::pagepool:1G::
mmlsconfig::0:1:::maxblocksize:4M::
mmlsconfig::0:1:::pagepool:3500M:c5n97g:
mmlsconfig::0:1:::maxMBpS:5000:cesNodes:
mmlsconfig::0:1:::cipherList:AUTHONLY::
"""

MMLSCLUSTER_Y = """\
mmlscluster:clusterSummary:HEADER:version:reserved:reserved:clusterName:clusterId:uidDomain:\
rshPath:rshSudoWrapper:rcpPath:rcpSudoWrapper:repositoryType:primaryServer:secondaryServer:
mmlscluster:clusterNode:HEADER:version:reserved:reserved:nodeNumber:daemonNodeName:ipAddress:\
adminNodeName:designation:otherNodeRoles:adminLoginName:otherNodeRolesAlias:
mmlscluster:clusterSummary:0:1:::cluster1.kgn.ibm.com:680681562214606028:cluster1.kgn.ibm.com:\
%2Fusr%2Fbin%2Fssh:no:%2Fusr%2Fbin%2Fscp:no:CCR:::
mmlscluster:clusterNode:0:1:::1:k164n04.kgn.ibm.com:198.51.100.68:k164n04.kgn.ibm.com:quorum::::
mmlscluster:clusterNode:0:1:::2:k164n05.kgn.ibm.com:198.51.100.69:k164n05.kgn.ibm.com:quorum::::
mmlscluster:clusterNode:0:1:::3:k164n06.kgn.ibm.com:198.51.100.70:k164n06.kgn.ibm.com:\
quorumManager::::
"""

MMLSMOUNT_Y = """\
mmlsmount::HEADER:version:reserved:reserved:localDevName:realDevName:owningCluster:totalNodes:\
nodeIP:nodeName:clusterName:env:
mmlsmount::0:1:::rgpfs:gpfs1:cluster2.kgn.ibm.com:2:198.51.100.68:k164n04:cluster1.kgn.ibm.com:RW:
mmlsmount::0:1:::rgpfs:gpfs1:cluster2.kgn.ibm.com:2:198.51.100.69:k164n05:cluster1.kgn.ibm.com:RW:
"""

# The documented mmclidecode set: the characters -Y encodes in its fields.
_ENCODED = "!#$&'()*+,/:;=?@[]"


def encode(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ENCODED else c for c in text)


def test_percent_decoding_follows_mmclidecode():
    assert decode("%2Fmnt%2Fgpfs0") == "/mnt/gpfs0"  # the mmclidecode examples
    assert decode("Mon Jan 30 10%3A43%3A29 2017") == "Mon Jan 30 10:43:29 2017"
    assert decode("plain text") == "plain text"  # non-encoded strings stay intact
    assert decode(encode("gpfs1 (rw, root allowed)")) == "gpfs1 (rw, root allowed)"


def test_y_records_are_named_by_their_header_and_other_lines_skipped():
    text = ("mmlsconfig: this is a message, not a record\n" + MMLSCONFIG_Y
            + "mmother::0:1:::no:header:\n")
    records = parse_y(text)
    assert len(records) == 9 and {r.command for r in records} == {"mmlsconfig"}
    assert records[0].fields == {"version": "1", "configParameter": "clusterName",
                                 "value": "cluster1.kgn.ibm.com", "nodeList": ""}


def test_mmlsconfig_values_per_scope():
    assert parse_mmlsconfig_y(MMLSCONFIG_Y)["pagepool"] == "1G"
    assert "maxMBpS" not in parse_mmlsconfig_y(MMLSCONFIG_Y)  # set for cesNodes only
    assert parse_mmlsconfig_y(MMLSCONFIG_Y, ["c5n97g"]) == {"pagepool": "3500M"}
    assert parse_mmlsconfig_y(MMLSCONFIG_Y, ["cesNodes"]) == {"maxMBpS": "5000"}
    two = "mmlsconfig::0:1:::pagepool:2G:n1%2Cn2:\n"
    assert parse_mmlsconfig_y(MMLSCONFIG_Y + two, ["n2", "n1"]) == {"pagepool": "2G"}


def test_mmlscluster_gives_name_id_and_nodes():
    cluster = parse_mmlscluster_y(MMLSCLUSTER_Y)
    assert (cluster.name, cluster.id) == ("cluster1.kgn.ibm.com", "680681562214606028")
    assert [(n.number, n.daemon_name, n.ip, n.designation) for n in cluster.nodes] == [
        (1, "k164n04.kgn.ibm.com", "198.51.100.68", "quorum"),
        (2, "k164n05.kgn.ibm.com", "198.51.100.69", "quorum"),
        (3, "k164n06.kgn.ibm.com", "198.51.100.70", "quorumManager")]
    assert cluster.nodes[2].short_name == "k164n06"
    with pytest.raises(SpecError, match="no clusterSummary"):
        parse_mmlscluster_y("mmlscluster: something else\n")


def test_mmlsmount_gives_the_nodes_of_each_device():
    assert parse_mmlsmount_y(MMLSMOUNT_Y) == {"rgpfs": frozenset({"k164n04", "k164n05"})}
    assert parse_mmlsmount_y("") == {}


def test_remote_show_outputs_are_read_by_header_names():
    clusters = parse_mmremotecluster_y(
        "mmremotecluster::HEADER:version:reserved:reserved:clusterName:contactNodes:"
        "sha1Digest:fileSystems:\n"
        f"mmremotecluster::0:1:::cluster2.kgn.ibm.com:{encode('k148n07,k148n08')}:"
        f"{encode('a1:b2')}:rgpfs:\n")
    assert clusters["cluster2.kgn.ibm.com"].contact_nodes == "k148n07,k148n08"
    fs = parse_mmremotefs_y(
        "mmremotefs::HEADER:version:reserved:reserved:localName:remoteName:clusterName:"
        "mountPoint:mountOptions:automount:drive:priority:\n"
        f"mmremotefs::0:1:::rgpfs:gpfs1:cluster2.kgn.ibm.com:{encode('/gpfs/r')}:rw:no::0:\n")
    assert fs["rgpfs"].remote_device == "gpfs1" and fs["rgpfs"].mount_point == "/gpfs/r"
    with pytest.raises(SpecError, match="no field for the local device name"):
        parse_mmremotefs_y("mmremotefs::HEADER:version:reserved:reserved:what:\n"
                           "mmremotefs::0:1:::x:\n")


def test_mmauth_grants_per_record_or_in_the_text_form():
    header = ("mmauth::HEADER:version:reserved:reserved:clusterName:cipherList:sha1Digest:"
              "fileSystemAccess:\n")
    text = header + "".join(f"mmauth::0:1:::{encode(c)}:AUTHONLY:ab:{encode(a)}:\n" for c, a in (
        ("cluster2.kgn.ibm.com", "gpfs1 (rw, root allowed)"),
        ("cluster2.kgn.ibm.com", "gpfs2 (ro, root remapped to 99:99)"),
        ("cluster3.kgn.ibm.com", "(none authorized)"),
        ("cluster1.kgn.ibm.com (this cluster)", "(all rw)")))
    auth = parse_mmauth_y(text)
    assert auth["cluster2.kgn.ibm.com"].access == {"gpfs1": "rw", "gpfs2": "ro"}
    assert auth["cluster3.kgn.ibm.com"].access == {}
    assert auth["cluster1.kgn.ibm.com"].access == {"all": "rw"}
    per_fs = ("mmauth::HEADER:version:reserved:reserved:clusterName:fileSystem:access:\n"
              "mmauth::0:1:::cluster2.kgn.ibm.com:gpfs1:rw:\n")
    assert parse_mmauth_y(per_fs)["cluster2.kgn.ibm.com"].access == {"gpfs1": "rw"}


def test_values_are_checked_with_their_units_before_anything_runs():
    pagepool = gpfs_attribute("PagePool")
    assert normalise(pagepool, "4G") == normalise(pagepool, "4096M") == 4 * 1024 ** 3
    for bad in ("4X", "-1", "", "0", "4 G"):
        with pytest.raises(SpecError, match="not a size"):
            normalise(pagepool, bad)
    with pytest.raises(SpecError, match="plain number"):
        normalise(gpfs_attribute("socketRcvBufferSize"), "4M")
    with pytest.raises(SpecError, match="not one this harness knows") as err:
        gpfs_attribute("pagePoolSize")
    assert "socketSndBufferSize" in err.value.hint


# -- a fake cluster -----------------------------------------------------------------------------

class FakeGpfs(CommandOnlyNode):
    """An admin node of a GPFS cluster whose state is plain data.

    Reads answer in the -Y formats above, rendered from the state (``answers``
    may override a command's answer: (status, stdout, stderr)); mm changes
    update the state. ``journal``: each change first checks that the journal
    already names its object (the write-ahead rule). ``broken``: changes whose
    command line contains one of these strings fail. ``peers``: the other
    clusters by name (an mmmount needs its grant there).
    """

    def __init__(self, cluster: str = "cluster1.kgn.ibm.com", installed: bool = True,
                 journal: Journal | None = None, broken: tuple[str, ...] = ()):
        self.name, self.cluster, self.installed = f"admin-{cluster.split('.')[0]}", cluster, installed
        self.journal, self.broken = journal, broken
        self.nodes = ["k164n04.kgn.ibm.com", "k164n05.kgn.ibm.com", "k164n06.kgn.ibm.com"]
        self.config: dict[tuple[str, frozenset], str] = {("pagepool", frozenset()): "1G"}
        self.auth: dict[str, dict[str, str]] = {}
        self.remote_clusters: dict[str, str] = {}
        self.remote_fs: dict[str, tuple[str, str, str]] = {}
        self.mounts: dict[str, set[str]] = {}
        self.answers: dict[str, tuple[int, str, str]] = {}
        self.peers: dict[str, FakeGpfs] = {}
        self.commands: list[str] = []

    def describe(self) -> dict:
        return {"type": "local", "name": self.name}


    @property
    def changes(self) -> list[str]:
        return [c for c in self.commands if c.startswith("flock ")]

    def _execute(self, cmd, timeout, stdin):
        self.commands.append(cmd)
        argv = shlex.split(cmd)
        if argv[0] == "flock":
            assert argv[1] == LOCK
            argv = argv[2:]
        assert argv[0].startswith(MMFS_BIN + "/"), cmd
        prog, args = argv[0].rsplit("/", 1)[1], argv[1:]
        if not self.installed:
            return 127, "", f"sh: 1: {argv[0]}: not found"
        if cmd in self.answers:
            return self.answers[cmd]
        if prog.startswith("mmls") or args[:1] == ["show"]:
            return getattr(self, f"_show_{prog}")()
        if any(b in cmd for b in self.broken):
            return 1, "", f"{prog}: simulated failure"
        assert self._journalled(prog, args), f"`{cmd}` ran before its journal entry"
        return getattr(self, f"_do_{prog}")(args)

    def _journalled(self, prog: str, args: list[str]) -> bool:
        """Whether the journal already has the entry of a change this command makes."""
        if self.journal is None:
            return True
        want = {"mmchconfig": ("gpfs-config", args[0].split("=")[0]),
                "mmmount": ("gpfs-mount", args[0])}.get(prog)
        if args[0] in ("add", "grant"):
            want = ({"mmauth": "gpfs-auth" if args[0] == "add" else "gpfs-grant",
                     "mmremotecluster": "gpfs-remotecluster",
                     "mmremotefs": "gpfs-remotefs"}[prog], args[1])
        lines = [json.loads(line) for line in self.journal.path.read_text().splitlines()] \
            if self.journal.path.exists() else []
        return want is None or any(
            line["op"] == "do" and line["kind"] == want[0]
            and line.get("record", {}).get("target", "").startswith(want[1]) for line in lines)

    # -- reads, in the documented formats
    def _show_mmlscluster(self):
        lines = [MMLSCLUSTER_Y.splitlines()[0], MMLSCLUSTER_Y.splitlines()[1],
                 f"mmlscluster:clusterSummary:0:1:::{self.cluster}:1234:{self.cluster}:"
                 "%2Fusr%2Fbin%2Fssh:no:%2Fusr%2Fbin%2Fscp:no:CCR:::"]
        lines += [f"mmlscluster:clusterNode:0:1:::{i}:{n}:198.51.100.{i}:{n}:quorum::::"
                  for i, n in enumerate(self.nodes, 1)]
        return 0, "\n".join(lines) + "\n", ""

    def _show_mmlsconfig(self):
        rows = [f"mmlsconfig::0:1:::{attr}:{value}:{encode(','.join(sorted(nodes)))}:"
                for (attr, nodes), value in self.config.items()]
        return 0, "\n".join([MMLSCONFIG_Y.splitlines()[0], *rows]) + "\n", ""

    def _show_mmlsmount(self):
        if not self.remote_fs:
            return 1, "", "mmlsmount: No file systems were found."
        rows = [f"mmlsmount::0:1:::{dev}:{self.remote_fs[dev][0]}:{self.remote_fs[dev][1]}:"
                f"{len(nodes)}:198.51.100.1:{n}:{self.cluster}:RW:"
                for dev, nodes in self.mounts.items() for n in sorted(nodes)]
        return 0, "\n".join([MMLSMOUNT_Y.splitlines()[0], *rows]) + "\n", ""

    def _show_mmremotecluster(self):
        if not self.remote_clusters:
            return 1, "", "mmremotecluster: There are no remote cluster definitions."
        rows = [f"mmremotecluster::0:1:::{c}:{encode(n)}:ab%3Acd::"
                for c, n in self.remote_clusters.items()]
        return 0, "\n".join(["mmremotecluster::HEADER:version:reserved:reserved:clusterName:"
                             "contactNodes:sha1Digest:fileSystems:", *rows]) + "\n", ""

    def _show_mmremotefs(self):
        if not self.remote_fs:
            return 1, "", "mmremotefs: There are no remote file systems."
        rows = [f"mmremotefs::0:1:::{d}:{r}:{c}:{encode(m)}:rw:no::0:"
                for d, (r, c, m) in self.remote_fs.items()]
        return 0, "\n".join(["mmremotefs::HEADER:version:reserved:reserved:localName:"
                             "remoteName:clusterName:mountPoint:mountOptions:automount:drive:"
                             "priority:", *rows]) + "\n", ""

    def _show_mmauth(self):
        rows = [f"mmauth::0:1:::{encode(self.cluster + ' (this cluster)')}:AUTHONLY:ab:"
                f"{encode('(all rw)')}:"]
        for c, grants in self.auth.items():
            access = [f"{d} ({m}, root allowed)" for d, m in grants.items()] or \
                ["(none authorized)"]
            rows += [f"mmauth::0:1:::{c}:AUTHONLY:ab:{encode(a)}:" for a in access]
        return 0, "\n".join(["mmauth::HEADER:version:reserved:reserved:clusterName:cipherList:"
                             "sha1Digest:fileSystemAccess:", *rows]) + "\n", ""

    # -- changes
    def _do_mmchconfig(self, args):
        attr, value = args[0].split("=", 1)
        scope = frozenset(args[args.index("-N") + 1].split(",")) if "-N" in args else frozenset()
        if value == "DEFAULT":
            self.config.pop((attr, scope), None)
        else:
            self.config[(attr, scope)] = value
        return 0, "mmchconfig: Command successfully completed\n", ""

    def _do_mmauth(self, args):
        verb, cluster = args[0], args[1]
        if verb == "add":
            if cluster in self.auth:
                return 1, "", "mmauth: cluster already defined"
            self.auth[cluster] = {}
        elif verb == "delete":
            self.auth.pop(cluster)
        elif verb == "grant":
            if cluster not in self.auth:
                return 1, "", f"mmauth: {cluster} is not defined"
            self.auth[cluster][args[args.index("-f") + 1]] = args[args.index("-a") + 1]
        elif verb == "deny":
            self.auth[cluster].pop(args[args.index("-f") + 1])
        return 0, "", ""

    def _do_mmremotecluster(self, args):
        if args[0] == "add":
            self.remote_clusters[args[1]] = args[args.index("-n") + 1]
        else:
            if any(c == args[1] for _r, c, _m in self.remote_fs.values()):
                return 1, "", "mmremotecluster: file systems of it are still defined"
            del self.remote_clusters[args[1]]
        return 0, "", ""

    def _do_mmremotefs(self, args):
        if args[0] == "add":
            if args[args.index("-C") + 1] not in self.remote_clusters:
                return 1, "", "mmremotefs: unknown cluster"
            self.remote_fs[args[1]] = (args[args.index("-f") + 1], args[args.index("-C") + 1],
                                       args[args.index("-T") + 1])
        else:
            if self.mounts.get(args[1]):
                return 1, "", "mmremotefs: the file system is mounted"
            del self.remote_fs[args[1]]
        return 0, "", ""

    def _nodes(self, args) -> set[str]:
        if "-a" in args:
            return {n.split(".")[0] for n in self.nodes}
        return {n.split(".")[0] for n in args[args.index("-N") + 1].split(",")}

    def _do_mmmount(self, args):
        remote, cluster, _ = self.remote_fs[args[0]]
        owner = self.peers.get(cluster)
        if owner is not None and remote not in owner.auth.get(self.cluster, {}):
            return 1, "", f"mmmount: {cluster} denied access to {remote}"
        self.mounts.setdefault(args[0], set()).update(self._nodes(args))
        return 0, "", ""

    def _do_mmumount(self, args):
        self.mounts[args[0]] -= self._nodes(args)
        if not self.mounts[args[0]]:
            del self.mounts[args[0]]
        return 0, "", ""


@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch):
    """The fake answers one command per call (the group runner has tests of its own)."""
    monkeypatch.setattr(operation, "run_calls",
                        lambda calls, timeout: [n.run(c, check=False) for n, c in calls])


def view(journal: Journal) -> list[tuple]:
    return [(c["kind"], c["target"], c["before"], c["after"], c["changed"])
            for c in journal.configuration()]


# -- the requirement ----------------------------------------------------------------------------

def test_a_node_without_gpfs_is_a_clear_error_before_anything_changes(journal):
    node = FakeGpfs(installed=False)
    with pytest.raises(CapabilityMissing, match="has no IBM Storage Scale") as err:
        gpfs_available(node)
    assert "real IBM Storage Scale cluster nodes" in err.value.hint
    for ops in ([GpfsConfig(node, "pagepool", "4G")],
                [GpfsRemoteMount(node, "cluster2.kgn.ibm.com", ("k148n07",), "/tmp/c2.pub",
                                 "gpfs1", "rgpfs", "/gpfs/r")]):
        with pytest.raises(CapabilityMissing):
            apply(journal, ops)
    assert node.changes == [] and not journal.path.exists()
    assert gpfs_member(node) is False


def test_a_node_outside_an_active_cluster_says_what_to_check():
    node = FakeGpfs()
    node.answers[f"{MMFS_BIN}/mmlscluster -Y"] = (1, "", "mmlscluster: This node does not "
                                                  "belong to a GPFS cluster.")
    with pytest.raises(CapabilityMissing, match="does not belong") as err:
        gpfs_available(node)
    assert "mmgetstate" in err.value.hint
    assert gpfs_available(FakeGpfs()).name == "cluster1.kgn.ibm.com"
    assert gpfs_member(FakeGpfs()) is True


def test_probe_knows_gpfs_and_looks_for_its_commands_outside_path():
    assert "gpfs" in FEATURES and MMLSCLUSTER.path == MMFS_BIN

    class Recorder(FakeGpfs):
        def _execute(self, cmd, timeout, stdin):
            self.commands.append(cmd)
            return 0, "mmlscluster=5.1.9-0\n", ""

    node = Recorder()
    assert tool_versions(node, [MMLSCLUSTER]) == {"mmlscluster": "5.1.9-0"}
    assert node.commands[0].startswith(f'PATH="$PATH:{MMFS_BIN}:/usr/local/sbin:/usr/sbin:/sbin"; ')


# -- mmchconfig ---------------------------------------------------------------------------------

def test_config_plan_reads_the_fact_and_changes_nothing(journal):
    node = FakeGpfs()
    changes = plan([GpfsConfig(node, "maxMBpS", 10000), GpfsConfig(node, "pagepool", "1024M")])
    assert [(c.target, c.before, c.after, c.changed) for c in changes] == [
        ("maxMBpS", "DEFAULT", "10000", True), ("pagepool", "1G", "1024M", False)]
    assert node.changes == [] and not journal.path.exists()
    unbuilt = plan([GpfsConfig(node, "maxMBpS", 10000)], exists=lambda n: False)
    assert unbuilt[0].before is UNKNOWN and unbuilt[0].changed
    assert describe([unbuilt[0].record()]) == (
        "change admin-cluster1: gpfs-config maxMBpS: unknown: not built in a dry run -> 10000")


def test_config_is_journalled_first_a_repeat_is_a_noop_and_undo_restores(journal):
    node = FakeGpfs(journal=journal)
    ops = [GpfsConfig(node, "pagepool", "4G", immediate=True),
           GpfsConfig(node, "socketRcvBufferSize", 8388608)]
    apply(journal, ops)
    assert node.config == {("pagepool", frozenset()): "4G",
                           ("socketRcvBufferSize", frozenset()): "8388608"}
    assert node.changes[0] == f"flock {LOCK} {MMFS_BIN}/mmchconfig pagepool=4G -i"
    apply(journal, ops + [GpfsConfig(node, "pagepool", "4096M", immediate=True)])
    assert view(journal) == [
        ("gpfs-config", "pagepool -i", "1G", "4G", True),
        ("gpfs-config", "socketRcvBufferSize", "DEFAULT", "8388608", True),
        ("gpfs-config", "pagepool -i", "4G", "4G", False),
        ("gpfs-config", "socketRcvBufferSize", "8388608", "8388608", False),
        ("gpfs-config", "pagepool -i", "4G", "4096M", False)]
    assert len(node.changes) == 2 and len(journal.pending()) == 2
    line = json.loads(journal.path.read_text().splitlines()[0])
    assert line["module"] == "harness.config.gpfs" and line["kind"] == "gpfs-config"
    journal.undo_all()
    assert node.config == {("pagepool", frozenset()): "1G"}
    assert node.changes[-2:] == [
        f"flock {LOCK} {MMFS_BIN}/mmchconfig socketRcvBufferSize=DEFAULT",
        f"flock {LOCK} {MMFS_BIN}/mmchconfig pagepool=1G -i"]


def test_config_for_some_nodes_and_overlaps_refused(journal):
    node = FakeGpfs(journal=journal)
    node.config[("pagepool", frozenset({"c5n97g", "c5n98g"}))] = "3500M"
    apply(journal, [GpfsConfig(node, "pagepool", "8G", nodes=("c5n98g", "c5n97g"))])
    assert node.config[("pagepool", frozenset({"c5n97g", "c5n98g"}))] == "8G"
    assert view(journal)[0][1:4] == ("pagepool -N c5n98g,c5n97g", "3500M", "8G")
    with pytest.raises(SpecError, match="overlaps c5n97g"):
        plan([GpfsConfig(node, "pagepool", "2G", nodes=("c5n97g",))])
    journal.undo_all()
    assert node.config[("pagepool", frozenset({"c5n97g", "c5n98g"}))] == "3500M"


@pytest.mark.parametrize("op, error", [
    (dict(attribute="pagePoolSize", value="4G"), "not one this harness knows"),
    (dict(attribute="pagepool", value="4 GB"), "not a size"),
    (dict(attribute="socketSndBufferSize", value=4194304, immediate=True), "cannot be changed"),
    (dict(attribute="maxMBpS", value=1000, nodes=("bad node",)), "not a valid name"),
])
def test_bad_config_is_refused_before_any_command(journal, op, error):
    node = FakeGpfs()
    with pytest.raises(SpecError, match=error):
        apply(journal, [GpfsConfig(node, **op)])
    assert node.commands == [] and not journal.path.exists()


def test_a_failure_half_way_leaves_a_complete_record(journal):
    node = FakeGpfs(journal=journal, broken=("maxMBpS=",))
    with pytest.raises(ApplyFailed, match="gpfs-config maxMBpS: mmchconfig: simulated"):
        apply(journal, [GpfsConfig(node, "pagepool", "4G"), GpfsConfig(node, "maxMBpS", 10000),
                        GpfsConfig(node, "socketSndBufferSize", 4194304)])
    config = journal.configuration()
    assert [(c["target"], c["changed"], c.get("error")) for c in config] == [
        ("pagepool", True, None), ("maxMBpS", False, "mmchconfig: simulated failure"),
        ("socketSndBufferSize", True, None)]
    assert Journal(journal.path).configuration() == config  # the same when read back from disk
    node.broken = ()
    journal.undo_all()
    assert node.config == {("pagepool", frozenset()): "1G"}


# -- the multi-cluster remote mount -------------------------------------------------------------

OWNER, ACCESS = "cluster2.kgn.ibm.com", "cluster1.kgn.ibm.com"


def clusters(journal, broken=()):
    owner = FakeGpfs(OWNER, journal=journal)
    access = FakeGpfs(ACCESS, journal=journal, broken=broken)
    access.peers[OWNER] = owner
    grant = GpfsGrant(owner, ACCESS, "/var/mmfs/ssl/cluster1.pub", "/dev/gpfs1")
    mount = GpfsRemoteMount(access, OWNER, ("k148n07", "k148n08"), "/var/mmfs/ssl/cluster2.pub",
                            "gpfs1", "rgpfs", "/gpfs/remote", nodes=("k164n04", "k164n05"))
    return owner, access, grant, mount


def test_grant_and_remote_mount_in_rounds_then_a_repeat_changes_nothing(journal):
    owner, access, grant, mount = clusters(journal)
    records = apply(journal, [grant, mount])  # the mount needs the grant: round 3 after round 2
    assert [(r.kind, r.changed) for r in records] == [
        ("gpfs-auth", True), ("gpfs-remotecluster", True), ("gpfs-grant", True),
        ("gpfs-remotefs", True), ("gpfs-mount", True)]
    assert owner.auth == {ACCESS: {"gpfs1": "rw"}}
    assert access.remote_clusters == {OWNER: "k148n07,k148n08"}
    assert access.remote_fs == {"rgpfs": ("gpfs1", OWNER, "/gpfs/remote")}
    assert access.mounts == {"rgpfs": {"k164n04", "k164n05"}}
    assert access.changes[1] == (f"flock {LOCK} {MMFS_BIN}/mmremotefs add rgpfs -f gpfs1 -C "
                                 f"{OWNER} -T /gpfs/remote -A no")
    made = len(owner.changes) + len(access.changes)
    again = apply(journal, [grant, mount])
    assert [r.changed for r in again] == [False] * 5
    assert len(owner.changes) + len(access.changes) == made and len(journal.pending()) == 5
    journal.undo_all()
    assert (owner.auth, access.remote_clusters, access.remote_fs, access.mounts) == ({}, {}, {},
                                                                                      {})


def test_undo_removes_only_what_this_run_added(journal):
    owner, access, grant, mount = clusters(journal)
    owner.auth[ACCESS] = {"gpfs1": "ro", "gpfs2": "rw"}  # someone else's, before the run
    access.remote_clusters[OWNER] = "k148n07"
    access.remote_fs["rgpfs"] = ("gpfs1", OWNER, "/gpfs/remote")
    access.mounts["rgpfs"] = {"k164n04"}
    apply(journal, [grant, mount])
    assert view(journal) == [
        ("gpfs-auth", ACCESS, "authorised", "authorised", False),
        ("gpfs-remotecluster", OWNER, "k148n07", "k148n07", False),
        ("gpfs-grant", f"{ACCESS} gpfs1", "ro", "rw", True),
        ("gpfs-remotefs", "rgpfs", "gpfs1 of cluster2.kgn.ibm.com at /gpfs/remote",
         "gpfs1 of cluster2.kgn.ibm.com at /gpfs/remote", False),
        ("gpfs-mount", "rgpfs on k164n04,k164n05", "k164n04", "k164n04,k164n05", True)]
    assert access.changes == [f"flock {LOCK} {MMFS_BIN}/mmmount rgpfs -N k164n05"]
    journal.undo_all()
    assert owner.auth == {ACCESS: {"gpfs1": "ro", "gpfs2": "rw"}}
    assert access.remote_clusters == {OWNER: "k148n07"}
    assert access.mounts == {"rgpfs": {"k164n04"}} and "rgpfs" in access.remote_fs


def test_mount_on_every_node_of_the_cluster(journal):
    _owner, access, grant, mount = clusters(journal)
    mount.nodes = ()
    changes = plan([grant, mount])
    assert changes[-1].target == "rgpfs on every node"
    assert changes[-1].after == "k164n04,k164n05,k164n06"
    apply(journal, [grant, mount])
    assert access.mounts == {"rgpfs": {"k164n04", "k164n05", "k164n06"}}
    journal.undo_all()
    assert access.mounts == {}


def test_a_remote_fs_of_the_same_name_elsewhere_is_refused(journal):
    _owner, access, grant, mount = clusters(journal)
    access.remote_clusters["cluster9.example.org"] = "x1"
    access.remote_fs["rgpfs"] = ("other", "cluster9.example.org", "/gpfs/other")
    with pytest.raises(SpecError, match="already has a remote file system rgpfs"):
        apply(journal, [grant, mount])
    assert access.changes == [] and not journal.path.exists()


def test_remote_mount_failing_half_way_is_recorded_and_undone(journal):
    owner, access, grant, mount = clusters(journal, broken=("mmremotefs add",))
    with pytest.raises(ApplyFailed, match="gpfs-remotefs rgpfs: mmremotefs: simulated"):
        apply(journal, [grant, mount])
    assert [(c["kind"], c["changed"], c.get("error")) for c in journal.configuration()] == [
        ("gpfs-auth", True, None), ("gpfs-remotecluster", True, None),
        ("gpfs-grant", True, None), ("gpfs-remotefs", False, "mmremotefs: simulated failure")]
    assert access.mounts == {}  # the round after a failure does not run
    journal.undo_all()
    assert (owner.auth, access.remote_clusters, access.remote_fs) == ({}, {}, {})


def test_remote_mount_plan_on_unbuilt_nodes(journal):
    _owner, access, grant, mount = clusters(journal)
    changes = plan([grant, mount], exists=lambda n: False)
    assert [(c.kind, c.before is UNKNOWN, c.changed) for c in changes] == [
        ("gpfs-auth", True, True), ("gpfs-grant", True, True),
        ("gpfs-remotecluster", True, True), ("gpfs-remotefs", True, True),
        ("gpfs-mount", True, True)]
    assert access.commands == []


@pytest.mark.parametrize("field, value, error", [
    ("key_file", "key.pub", "not an absolute path"),
    ("mount_point", "/gpfs/a b", "not an absolute path"),
    ("device", "/dev/a:b", "not a valid name"),
    ("contact_nodes", (), "needs contact nodes"),
    ("cluster", "-x", "not a valid name"),
])
def test_bad_remote_mount_arguments_are_refused(journal, field, value, error):
    _owner, access, _grant, mount = clusters(journal)
    setattr(mount, field, value)
    with pytest.raises(SpecError, match=error):
        apply(journal, [mount])
    assert access.commands == []
