"""S3 -- TIPC versus CUBIC-TCP and SCTP for the Hadoop shuffle (seed 003)."""
