"""`vance`: the terminal client of the Brain (PROTOCOL.md, section CLI)."""
