"""S2 -- a shared file system over a long fat link, and TCP window tuning (seed 002)."""
