"""ibv_devinfo -v parsing and the paper's Table 1, on a Soft-RoCE device.

The sample is modelled, not captured (no RDMA device here): rxe0 over an Ethernet
NIC with MTU 1500, written with the format strings of Debian 12's ibv_devinfo
(rdma-core 44.0, ``strings /usr/bin/ibv_devinfo``) -- tabs included -- and the
values of the kernel's rxe_param.h defaults (max_qp, max_cq, max_mr = 2^20,
atomic_cap ATOMIC_HCA, device_cap_flags 0x01a23c76 with its flag names) and of a
1500-byte netdev (active_mtu 1024 of max 4096, link_layer Ethernet, RoCE v2 GIDs).
"""

from __future__ import annotations

import pytest

from harness.errors import CapabilityMissing, SpecError
from harness.nodes.result import Result
from harness.tools import ibverbs

RXE0 = """\
hca_id:	rxe0
	transport:			InfiniBand (0)
	fw_ver:				0.0.0
	node_guid:			5054:00ff:fe12:3401
	sys_image_guid:			5054:00ff:fe12:3401
	vendor_id:			0xffffff
	vendor_part_id:			0
	hw_ver:				0x0
	phys_port_cnt:			1
	max_mr_size:			0xffffffffffffffff
	page_size_cap:			0xfffff000
	max_qp:				1048576
	max_qp_wr:			1048576
	device_cap_flags:		0x01a23c76
					BAD_PKEY_CNTR
					BAD_QKEY_CNTR
					AUTO_PATH_MIG
					CHANGE_PHY_PORT
					UD_AV_PORT_ENFORCE
					PORT_ACTIVE_EVENT
					SYS_IMAGE_GUID
					RC_RNR_NAK_GEN
					SRQ_RESIZE
					MEM_WINDOW
					MEM_MGT_EXTENSIONS
					MEM_WINDOW_TYPE_2A
					MEM_WINDOW_TYPE_2B
	max_sge:			32
	max_sge_rd:			32
	max_cq:				1048576
	max_cqe:			32767
	max_mr:				1048576
	max_pd:				1048576
	max_qp_rd_atom:			128
	max_ee_rd_atom:			0
	max_res_rd_atom:		258048
	max_qp_init_rd_atom:		128
	max_ee_init_rd_atom:		0
	atomic_cap:			ATOMIC_HCA (1)
	max_ee:				0
	max_rdd:				0
	max_mw:				1048576
	max_raw_ipv6_qp:		0
	max_raw_ethy_qp:		0
	max_mcast_grp:			8192
	max_mcast_qp_attach:		56
	max_total_mcast_qp_attach:	458752
	max_ah:				1048576
	max_fmr:			0
	max_srq:			1048576
	max_srq_wr:			1048576
	max_srq_sge:			27
	max_pkeys:			64
	local_ca_ack_delay:		15
	general_odp_caps:
	rc_odp_caps:
					NO SUPPORT
	uc_odp_caps:
					NO SUPPORT
	ud_odp_caps:
					NO SUPPORT
	xrc_odp_caps:
					NO SUPPORT
	completion_timestamp_mask not supported
	core clock not supported
	device_cap_flags_ex:		0x2001A23C76
	tso_caps:
		max_tso:			0
	rss_caps:
		max_rwq_indirection_tables:			0
		max_rwq_indirection_table_size:			0
		rx_hash_function:				0x0
		rx_hash_fields_mask:				0x0
	max_wq_type_rq:			0
	packet_pacing_caps:
		qp_rate_limit_min:	0kbps
		qp_rate_limit_max:	0kbps
	tag matching not supported
	num_comp_vectors:		1
		port:	1
			state:			PORT_ACTIVE (4)
			max_mtu:		4096 (5)
			active_mtu:		1024 (3)
			sm_lid:			0
			port_lid:		0
			port_lmc:		0x00
			link_layer:		Ethernet
			max_msg_sz:		0x800000
			port_cap_flags:		0x00010000
			port_cap_flags2:	0x0000
			max_vl_num:		1 (1)
			bad_pkey_cntr:		0x0
			qkey_viol_cntr:		0x0
			sm_sl:			0
			pkey_tbl_len:		64
			gid_tbl_len:		1024
			subnet_timeout:		0
			init_type_reply:	0
			active_width:		1X (1)
			active_speed:		2.5 Gbps (1)
			phys_state:		LINK_UP (5)
			GID[  0]:		fe80:0000:0000:0000:5054:00ff:fe12:3401, RoCE v2
			GID[  1]:		0000:0000:0000:0000:0000:ffff:0a00:0101, RoCE v2
"""


def test_rxe_device_and_port():
    (dev,) = ibverbs.parse_devinfo(RXE0)
    assert dev.name == "rxe0" and dev.transport == "InfiniBand"
    assert (dev.max_qp, dev.max_cq, dev.max_mr) == (1048576, 1048576, 1048576)
    assert dev.max_qp_rd_atom == 128 and dev.atomic_cap == "ATOMIC_HCA"
    assert dev.device_cap_flags[:2] == ("BAD_PKEY_CNTR", "BAD_QKEY_CNTR")
    assert "MEM_WINDOW_TYPE_2B" in dev.device_cap_flags and len(dev.device_cap_flags) == 13
    assert dev.qp_types == ("RC", "UC", "UD")  # no XRC flag
    assert dev.lists["rc_odp_caps"] == ("NO SUPPORT",)
    assert dev.fields["max_mr_size"] == "0xffffffffffffffff"
    (port,) = dev.ports
    assert (port.port, port.state, port.link_layer) == (1, "PORT_ACTIVE", "Ethernet")
    assert (port.active_mtu, port.max_mtu) == (1024, 4096)
    assert port.gids[1] == "0000:0000:0000:0000:0000:ffff:0a00:0101, RoCE v2"
    assert port.ipv4_gid_index() == 1 and port.ipv4_gid_index("RoCE v1") is None
    # rdma-core 44 (Debian 12), seen in the S1 VMs: compressed, the IPv4 in dotted form
    seen = ibverbs.VerbsPort(1, "PORT_ACTIVE", 4096, 1024, "Ethernet", {
        0: "fe80::5054:ff:fe5e:1, RoCE v2", 1: "::ffff:198.18.1.1, RoCE v2"})
    assert seen.ipv4_gid_index() == 1
    assert port.fields["active_speed"] == "2.5 Gbps (1)"


def test_several_devices_and_an_iwarp_one():
    siw = (RXE0.replace("rxe0", "siw0").replace("InfiniBand (0)", "iWARP (1)")
           .replace("ATOMIC_HCA (1)", "ATOMIC_NONE (0)"))
    rxe, iw = ibverbs.parse_devinfo(RXE0 + "\n" + siw)
    assert rxe.name == "rxe0" and iw.name == "siw0"
    assert iw.qp_types == ("RC",) and iw.atomic_cap == "ATOMIC_NONE"
    assert ibverbs.device_column(iw).atomics == "none"
    xrc = ibverbs.parse_devinfo(RXE0.replace("\t\t\t\t\tSRQ_RESIZE", "\t\t\t\t\tXRC"))[0]
    assert xrc.qp_types == ("RC", "UC", "UD", "XRC")
    assert ibverbs.parse_devinfo("No IB devices found\n") == []


def test_table1_has_a_column_per_device_and_one_for_tcp():
    (dev,) = ibverbs.parse_devinfo(RXE0)
    rxe = ibverbs.device_column(dev, label="Soft-RoCE rxe0")
    assert rxe.transport == "InfiniBand verbs over RoCE (RoCE v2)"
    assert (rxe.mtu, rxe.max_mtu, rxe.rdma_read, rxe.rdma_write) == (1024, 4096, True, True)
    facts = ibverbs.parse_socket_facts("1500\n1\n1024\n9223372036854775807\n")
    assert facts == ibverbs.SocketFacts(1500, "Ethernet", 1024)
    tcp = ibverbs.tcp_column(facts)
    rows = ibverbs.table1([rxe, tcp])
    table = {row["Feature"]: (row["Soft-RoCE rxe0"], row["TCP"]) for row in rows}
    assert list(rows[0]) == ["Feature", "Soft-RoCE rxe0", "TCP"]
    assert table["Link layer"] == ("Ethernet", "Ethernet")
    assert table["MTU (bytes)"] == ("1024 (max 4096)", "1500")
    assert table["Queue-pair types"] == ("RC, UC, UD (by transport)",
                                         "stream (reliable, connected)")
    assert table["RDMA read"] == ("yes", "no") and table["RDMA write"] == ("yes (by transport)",
                                                                           "no")
    assert table["Atomics"] == ("ATOMIC_HCA", "none")
    assert table["Max QPs"] == ("1,048,576", "1,024") and table["Max MRs"] == ("1,048,576",
                                                                                 "n/a")
    assert ibverbs.table1([]) == []
    with pytest.raises(CapabilityMissing, match="no port 2"):
        ibverbs.device_column(dev, port=2)


class FakeNode:
    name = "vm1"

    def __init__(self, status: int, out: str, err: str = ""):
        self.answer = (status, out, err)
        self.commands: list = []

    def run(self, cmd, **_kw):
        self.commands.append(cmd)
        status, out, err = self.answer
        return Result(self.name, str(cmd), out, err, status, 0.1)


def test_reading_devices_says_what_is_missing():
    node = FakeNode(0, RXE0)
    assert ibverbs.read_devices(node, "rxe0")[0].name == "rxe0"
    assert node.commands[-1] == ["ibv_devinfo", "-v", "-d", "rxe0"]
    with pytest.raises(CapabilityMissing, match="no RDMA device.*No IB devices found") as info:
        ibverbs.read_devices(FakeNode(255, "", "No IB devices found"))
    assert "RxeLink" in info.value.hint
    with pytest.raises(CapabilityMissing) as info:
        ibverbs.read_devices(FakeNode(127, "", "sh: 1: ibv_devinfo: not found"))
    assert "apt-get install ibverbs-utils" in info.value.hint


def test_socket_facts_are_read_in_one_command():
    node = FakeNode(0, "9000\n1\nunlimited\n1048576\n")
    assert ibverbs.read_socket_facts(node, "eth1") == ibverbs.SocketFacts(9000, "Ethernet",
                                                                          1048576)
    assert node.commands[-1].startswith("cat /sys/class/net/eth1/mtu /sys/class/net/eth1/type")
    with pytest.raises(SpecError, match="no interface 'eth9'"):
        ibverbs.read_socket_facts(FakeNode(1, "", "cat: ...: No such file"), "eth9")
