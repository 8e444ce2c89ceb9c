"""On the embedded default the Brain runs beat in-process and its firings eagerly: the tasks
they name must be registered there, or beat sends them to the in-memory broker, where nothing
takes them (a cron job would never fire)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.brain import ROOT, brain_env

pytestmark = pytest.mark.embedded_brain

# The scheduler's thread is left to die with the process (its database is not migrated here).
CHECK = """
import os
from vancetope.celery import app
from gateway.management.commands.brain import Command
before = 'triggers.fire_cron' in app.tasks
Command()._start_scheduler()
print(before, 'triggers.fire_cron' in app.tasks, 'sessions_app.sweep_idle_sessions' in app.tasks)
os._exit(0)
"""


def test_the_embedded_scheduler_registers_the_cron_task_before_beat_starts(tmp_path):
    # given a fresh Brain process, in which nothing has imported the tasks modules yet
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", CHECK],
        cwd=ROOT,
        env=brain_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    # then starting the scheduler registered the cron task (and the periodic sweeps)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-3:] == ["False", "True", "True"]
