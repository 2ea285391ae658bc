"""A lab as data: its topology (nodes, links, routes, rules) and how each link's shaping becomes qdiscs."""
