"""Which operations need root, and the one error a login without it gets."""

import pytest

from harness.config.operation import Change
from harness.machines.as_found import AsFound, mark_claims
from harness.machines.privileges import (
    AS_FOUND,
    CHANGES,
    OPERATIONS,
    Access,
    PrivilegeMissing,
    decide,
    operations,
    require_root,
)
from harness.nodes import LocalNode
from harness.nodes.sudo import sudo_command
from harness.verdicts.claims import NOT_TESTABLE, TARGET, Claim, Region, judge, table
from harness.verdicts.intervals import mean_estimate


def test_operations_follow_the_studys_features():
    assert operations(set()) == ["probe", "sysctl"]
    assert operations({"mptcp", "htb"}) == ["probe", "sysctl", "qdisc", "mptcp-endpoint"]
    assert "tipc-bearer" in operations({"tipc"}) and "gpfs" in operations({"gpfs"})
    assert set(operations({"nfs", "glusterfs"})) >= {"mount", "nfs-export"}
    assert all(kind in OPERATIONS for kind in operations({"mptcp", "tipc", "nfs", "gpfs",
                                                          "nat", "sctp", "netem"}))


def test_root_everywhere_passes():
    require_root("s4", {"mptcp"}, [Access("client", "root", 0), Access("server", "root", 0)])


def test_a_user_login_is_refused_naming_node_user_operation_and_privilege():
    with pytest.raises(PrivilegeMissing) as err:
        require_root("s4", {"mptcp"}, [Access("client", "root", 0),
                                       Access("server", "alice", 1000)])
    text = str(err.value)
    assert "server (user alice, uid 1000)" in text and "client" not in text.split(":")[0]
    assert "mptcp-endpoint: CAP_NET_ADMIN" in text and "sysctl: root" in text
    assert "log in as root" in err.value.hint and "Nothing was changed" in err.value.hint


def test_an_unreadable_uid_is_not_root():
    with pytest.raises(PrivilegeMissing, match=r"user \?, uid None"):
        require_root("s3", {"tipc"}, [Access("m01", "?", None)])


# -- sudo where the inventory allows it, and runs as found (issue 25, "Privileges") -------


def test_sudo_that_gives_root_counts_as_root_and_one_that_fails_is_refused_with_its_words():
    ok = Access("server", "alice", 0, sudo=True)
    assert decide("s4", {"mptcp"}, [Access("client", "root", 0), ok], as_found=False) == CHANGES
    assert ok.to_dict()["via"] == "sudo -n" and ok.to_dict()["user"] == "alice"
    broken = Access("server", "alice", None, sudo=True, problem="sudo: a password is required")
    with pytest.raises(PrivilegeMissing) as err:  # even a study that could run as found
        decide("ping", set(), [broken], as_found=True)
    assert "a password is required" in str(err.value) and "server (user alice)" in str(err.value)
    assert "NOPASSWD" in err.value.hint and "sudo: false" in err.value.hint


def test_a_user_login_without_sudo_runs_as_found_only_when_the_study_can():
    alice = Access("server", "alice", 1000)
    assert decide("demo", set(), [Access("client", "root", 0), alice], as_found=True) == AS_FOUND
    with pytest.raises(PrivilegeMissing, match="measures nothing without changing") as err:
        decide("s4", {"mptcp"}, [alice], as_found=False)
    assert "sudo: true" in err.value.hint


def test_sudo_runs_the_command_whole_without_a_prompt():
    assert sudo_command("echo 'a b' | wc -w") == "sudo -n -- sh -c 'echo '\"'\"'a b'\"'\"' | wc -w'"


def _claims_frame():
    rtt = Claim("demo.rtt", "answers within 5 ms", "< 5 ms", Region.below(5.0, "generous"), "ms",
                TARGET, quantity="RTT", regime="any two machines")
    mtu = Claim("demo.mtu", "the path MTU is the configured one", "1400",
                Region.between(1390, 1410, "configured"), "bytes", TARGET, quantity="path MTU",
                regime="after the change")
    return table([judge(rtt, mean_estimate([0.2, 0.3], "ms")),
                  judge(mtu, mean_estimate([1500, 1500], "bytes"))])


def test_a_claim_resting_on_a_change_not_made_is_not_testable_naming_the_privilege():
    node = LocalNode("a")
    found = AsFound([Access("a", "alice", 1000)])
    records = found.plan([Change(node, "mtu", "eth0", 1500, 1400, command="ip link ..."),
                          Change(node, "sysctl", "net.x", "1", "1")])  # already as asked
    assert [r.changed for r in records] == [True, False]
    assert [(r["kind"], r["privilege"]) for r in found.not_made] == \
        [("mtu", "CAP_NET_ADMIN (ip link set mtu)")]
    frame = _claims_frame()
    needs = {"demo.mtu": "mtu", "demo.rtt": "sysctl"}
    marked = mark_claims(frame, {"as_found": found.to_dict()}, needs)
    mtu = marked.set_index("claim_id").loc["demo.mtu"]
    assert mtu.outcome == NOT_TESTABLE and "CAP_NET_ADMIN" in mtu.reason
    assert "a eth0 1500 -> 1400" in mtu.reason and "a as alice" in mtu.reason
    assert "1500" in mtu.ours  # what the machines gave as found, beside, deciding nothing
    # the sysctl was already as asked: nothing missing, the claim resting on it is judged
    assert marked.set_index("claim_id").loc["demo.rtt"].outcome == "met"
    # a run with its changes made (no as_found in run.json) is left as judged
    assert mark_claims(frame, {}, needs).equals(frame)
    assert frame.set_index("claim_id").loc["demo.mtu"].outcome == "not met"
    # a claim resting on several kinds: any one not made makes it not testable
    several = mark_claims(frame, {"as_found": found.to_dict()},
                          {"demo.rtt": ("cgroup", "mtu")}).set_index("claim_id")
    assert several.loc["demo.rtt"].outcome == NOT_TESTABLE and "mtu" in several.loc["demo.rtt"].reason
    none_missing = mark_claims(frame, {"as_found": found.to_dict()},
                               {"demo.rtt": ("cgroup", "sysctl")}).set_index("claim_id")
    assert none_missing.loc["demo.rtt"].outcome == "met"
