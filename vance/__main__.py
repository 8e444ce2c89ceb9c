"""`python -m vance` runs the same program as the `vance` console script."""

from vance.main import main

raise SystemExit(main())
