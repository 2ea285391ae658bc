"""A user's own machines: the inventory that names them, their facts and privileges, reached as found."""
