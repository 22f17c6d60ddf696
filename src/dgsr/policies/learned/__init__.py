"""A prior (and value) learned from dgsr's own searches over the semantic policy's proposals (issue 51)."""
