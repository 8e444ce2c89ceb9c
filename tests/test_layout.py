"""The layout holds: modules stay small enough to read in one sitting, and test modules stand
alone (none imports another test module or a conftest)."""

from __future__ import annotations

import ast
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


def test_no_test_module_imports_another_test_module_or_a_conftest():
    # given every module of the test suite
    tests = ROOT / "tests"
    modules = sorted(tests.rglob("*.py"))
    assert len(modules) > 100  # the walk found the suite
    # when the modules each one imports are read
    imported = {}
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                last = name.rsplit(".", 1)[-1]
                if name.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                    imported.setdefault(str(path.relative_to(ROOT)), set()).add(name)
    # then none imports a test module or a conftest: shared helpers live in tests/support/,
    # shared fixtures in a conftest.py, so every test module stands alone
    assert imported == {}


# The one module whose subject is the order of two tests: the second reuses the id of a row the
# first rolled back (each passes alone and in either order; in this order it checks the cache).
KEEPS_ITS_ORDER = {"tests/test_cached_ids_between_tests.py"}


def test_no_test_module_keeps_its_own_order_but_the_one_about_order():
    # given every test module
    modules = sorted((ROOT / "tests").rglob("test_*.py"))
    assert len(modules) > 100
    # when those that turn random order off are found
    ordered = {
        str(path.relative_to(ROOT))
        for path in modules
        if path != Path(__file__).resolve() and "random_order(disabled=True)" in path.read_text()
    }
    # then only the one about order does: every other test runs in any order (.ci/run
    # shuffles modules and the tests in each)
    assert ordered == KEEPS_ITS_ORDER
