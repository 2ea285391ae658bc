"""How namespaces, links, addresses, qdiscs, routes and rules are made: rtnetlink requests or ip/tc commands."""
