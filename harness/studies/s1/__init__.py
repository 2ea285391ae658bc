"""S1 -- user-level messaging (RDMA verbs, the heir of VIA) against kernel TCP (seed 001)."""
