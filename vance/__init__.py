"""`vance`: the terminal client of the Brain (docs/cli.md)."""
