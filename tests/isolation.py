"""Test runs side by side share nothing: each run (and each pytest-xdist worker of a run) gets
its own channel-layer and rate-limit key prefix and its own Celery queue in Redis, and its own
test database on a PostgreSQL server.

Loaded with `-p tests.isolation` (pyproject's addopts), so it runs before pytest-django reads
the settings. A prefix or queue already set in the environment is kept.
"""

from __future__ import annotations

import os


def run_name() -> str:
    """This test process's name: the xdist run id and worker (`gw0`), else its pid."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        return f"{os.environ.get('PYTEST_XDIST_TESTRUNUID', '')[:8]}_{worker}"
    return str(os.getpid())


os.environ.setdefault("VANCETOPE_CHANNEL_PREFIX", f"vt_test_{run_name()}")
os.environ.setdefault("VANCETOPE_TASK_QUEUE", f"vt_test_{run_name()}")
# pytest-django adds the xdist worker to a test database's name itself.
os.environ.setdefault(
    "VANCETOPE_TEST_DATABASE",
    f"test_vt_{os.environ.get('PYTEST_XDIST_TESTRUNUID', '')[:8] or os.getpid()}",
)
