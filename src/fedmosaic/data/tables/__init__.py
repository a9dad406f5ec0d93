"""Sites' own tables: the shared schema, reading and checking a site's table, graph beliefs."""
