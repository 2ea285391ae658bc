"""S0 -- NAT + a user-space Stream Relay Daemon for clusters with private addresses (seed 000)."""
