"""`.ci/run`'s PostgreSQL + Redis run executes the tests that need both services: the one where
several Brains mutate one space at once is selected by its marker expression, is not skipped in
its environment, and has the time it takes there (beside the SQLite run, on two cores)."""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys

from tests.e2e.brain import ROOT, services_available

TWO_BRAINS = "tests/spaces/test_two_brains.py"
TEST = "test_two_brains_mutating_one_space_keep_every_accepted_change_and_no_refused_one"


def postgresql_run() -> tuple[dict[str, str], list[str]]:
    """The PostgreSQL run's command in .ci/run: its variables and its pytest arguments."""
    script = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(
        r"\nDATABASE_URL=\S+ \\\nREDIS_URL=\S+ \\\n\s+\.venv/bin/pytest -m [^>]+", script
    )
    assert len(commands) == 1, ".ci/run has no (or more than one) PostgreSQL + Redis run by marker"
    words = shlex.split(commands[0].replace("\\\n", " "))
    env = dict(word.split("=", 1) for word in words if re.match(r"^[A-Z_]+=", word))
    arguments = words[words.index(".venv/bin/pytest") + 1 :]
    return env, arguments


def test_the_postgresql_run_selects_the_two_brain_space_test_and_does_not_skip_it():
    # given the PostgreSQL run's environment and pytest arguments in .ci/run
    env, arguments = postgresql_run()
    assert arguments[0] == "-m"
    assert "not crash" in arguments[1]
    # (in random order: the order's seed selects nothing)
    assert "${order[@]}" in arguments
    order = re.search(r"\norder=\(([^)]*)\)", (ROOT / ".ci" / "run").read_text())
    assert order is not None
    assert "--random-order-bucket=module" in order[1].split()
    # when pytest collects the two-Brain test with its marker expression
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *arguments[:2], TWO_BRAINS],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    # then it is selected, and the services it needs are the ones that run names
    assert f"{TWO_BRAINS}::{TEST}" in collected.stdout, collected.stdout + collected.stderr
    assert services_available(env)
    assert not services_available({"REDIS_URL": env["REDIS_URL"]})


def timeout_marks(path: str, test: str) -> list[float]:
    """The seconds of `@pytest.mark.timeout(...)` on a test function, read from its module's
    source (a module-level constant resolved), so no test module is imported here."""
    tree = ast.parse((ROOT / path).read_text())
    constants = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }
    function = next(
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == test
    )
    return [
        constants[arg.id] if isinstance(arg, ast.Name) else ast.literal_eval(arg)
        for decorator in function.decorator_list
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == "pytest.mark.timeout"
        for arg in decorator.args[:1]
    ]


def test_the_two_brain_space_test_has_time_for_the_postgresql_run_beside_the_sqlite_one():
    # given the two-Brain test as its module declares it
    timeouts = timeout_marks(TWO_BRAINS, TEST)
    # then it has its own timeout, above the suite's 120 s (it took over two minutes there)
    assert timeouts
    assert timeouts[0] >= 300
