"""`python -m vancetope.cli` runs the same program as the `vance` console script."""

from vancetope.cli.main import main

raise SystemExit(main())
