"""The Brain's console: the scheduler's routine sweeps are not news (DEBUG), a task that is
not routine, and any failure, still are."""

from __future__ import annotations

import logging

import pytest

from processes.lane.tasks import sweep_lanes_task


def trace_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name == "celery.app.trace"
    ]


@pytest.mark.django_db(transaction=True)
def test_a_sweeps_success_is_logged_at_debug_not_at_info(caplog: pytest.LogCaptureFixture):
    # given the console at its default level
    caplog.set_level(logging.INFO)
    # when the scheduler runs the lane sweep (eagerly, as the embedded Brain does)
    sweep_lanes_task.apply()
    # then nothing of it reaches the console
    assert trace_lines(caplog) == []
    # and with LOG_LEVEL=DEBUG it is there, as DEBUG
    caplog.set_level(logging.DEBUG)
    sweep_lanes_task.apply()
    [(level, message)] = trace_lines(caplog)
    assert level == "DEBUG"
    assert "processes.sweep_lanes" in message
    assert "succeeded" in message


def test_other_tasks_and_failures_of_sweeps_are_still_shown(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO)
    trace = logging.getLogger("celery.app.trace")
    trace.info("Task %(name)s[%(id)s] succeeded", {"name": "triggers.fire_cron", "id": "a"})
    trace.error("Task %(name)s[%(id)s] raised", {"name": "processes.sweep_lanes", "id": "b"})
    assert trace_lines(caplog) == [
        ("INFO", "Task triggers.fire_cron[a] succeeded"),
        ("ERROR", "Task processes.sweep_lanes[b] raised"),
    ]
