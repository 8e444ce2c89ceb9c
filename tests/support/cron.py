"""Cron job helpers: a paused process with pending messages, and a `continue` action's body."""

from __future__ import annotations

from typing import Any

from processes.actions.lifecycle import pause_process
from processes.actions.steer import steer_many
from processes.models import ThinkProcess
from tests.support.tenancy import Tenancy, open_session


def paused_with_pending(tenancy: Tenancy, count: int) -> int:
    """A session's chat process, PAUSED, with `count` messages waiting."""
    session = open_session(tenancy)
    chat_id = session.chat_process_id
    assert chat_id is not None
    pause_process(chat_id)
    steer_many(chat_id, [f"question {n}" for n in range(1, count + 1)])
    assert ThinkProcess.objects.get(pk=chat_id).waiting == count
    return chat_id


def continue_body(process_id: int, **constraints: Any) -> dict[str, Any]:
    return {
        "name": "nightly",
        "schedule": "0 3 * * *",
        "timezone": "Europe/Berlin",
        "enabled": True,
        "action": {
            "type": "process_continue",
            "processId": f"tp_{process_id}",
            "constraints": {"maxTasks": 3, **constraints},
        },
    }
