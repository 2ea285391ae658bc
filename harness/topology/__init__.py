"""A lab as data, the spec the lab realises: nodes, links, routes, rules, and each link's qdiscs."""
