"""Reading source code: hunks and line ranges, parsers, imports and their resolution, the
repository-wide import graph, path proximity, and (in ``symbols``) definitions and uses."""
