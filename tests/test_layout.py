"""The layout of ARCHITECTURE §1 holds: modules stay small enough to read in one sitting."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 450
# Generated or measured code, not read as modules.
EXEMPT = {"migrations", "tests", "bench", ".venv", "var", "node_modules"}


def test_no_module_outside_migrations_tests_and_bench_is_over_450_lines():
    # given every Python module of the project
    modules = [
        path for path in ROOT.rglob("*.py") if not EXEMPT.intersection(path.relative_to(ROOT).parts)
    ]
    assert len(modules) > 50  # the walk found the project
    # when they are counted
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in modules
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    # then none is over the limit
    assert too_long == {}
