"""Which operations need root, and the one error a login without it gets."""

import pytest

from harness.privileges import OPERATIONS, Access, PrivilegeMissing, operations, require_root


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
