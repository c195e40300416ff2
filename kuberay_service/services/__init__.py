"""The node registry's rules: join keys, nodes, the mesh's address pool, rate limits."""
