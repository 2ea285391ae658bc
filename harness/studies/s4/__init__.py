"""S4 -- MPTCP versus TCP for Globus/GridFTP-style parallel transfers (seed 004)."""
