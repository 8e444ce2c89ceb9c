"""`vance`'s tables in an 80-column terminal: ids, statuses and times are never broken, no line
is wider than the terminal; a refusal reads in the words of the commands."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from vance.inbox import inbox_table
from vance.render import error_text, notifications_table, process_table, runs_table

PROCESS = {
    "id": "tp_12345",
    "thinkEngine": "marvin",
    "recipe": "deep-think",
    "status": "CLOSED",
    "closeReason": "DONE",
    "sessionId": "sess_678",
    "goal": "Plan a two-day team offsite in Lisbon for twelve people",
    "usage": {"promptTokens": 123456, "completionTokens": 2345},
    "contextDrift": True,
}
RUN = {
    "id": "run_12345",
    "trigger": {"type": "workflow", "workflowId": "wf_12"},
    "scope": {"processId": "tp_12345"},
    "status": "completed_partial",
    "startedAt": "2026-12-02T06:34:34.123+00:00",
    "tasksExecuted": 3,
    "tasksBlocked": 1,
    "tokensUsed": 12345,
    "error": None,
    "blockedReasons": [{"reason": "waiting for an approval of the final version"}],
}
ITEM = {
    "id": "inb_1234",
    "kind": "QUESTION",
    "status": "ANSWERED",
    "title": "tp_12345 asks what budget per person the offsite should stay within",
    "originProcessId": "tp_12345",
    "options": ["500", "800"],
    "answer": {"choice": "800"},
    "createdAt": "2026-12-02T06:34:34+00:00",
}
NOTIFICATION = {
    "id": "ntf_1234",
    "level": "warning",
    "createdAt": "2026-12-02T06:34:34+00:00",
    "runId": "run_12345",
    "text": "Run run_12345 waits for your answer: what budget per person?",
    "read": False,
}


def shown(renderable: Any) -> str:
    output = io.StringIO()
    Console(file=output, width=80, color_system=None).print(renderable)
    return output.getvalue()


def test_process_table_fits_80_columns_with_whole_ids_and_statuses():
    text = shown(process_table([PROCESS]))
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    for whole in ("tp_12345", "sess_678", "deep-think", "CLOSED/DONE", "123.5k/2345"):
        assert whole in text
    assert "drift" in text


def test_runs_inbox_and_notifications_fit_80_columns_with_whole_ids():
    for renderable, wholes in (
        (runs_table([RUN]), ("run_12345", "tp_12345", "partial", "12-02 06:34", "1 blocked")),
        (inbox_table([ITEM]), ("inb_1234", "QUESTION", "ANSWERED", "tp_12345", "choice: 800")),
        (notifications_table([NOTIFICATION]), ("ntf_1234", "warning", "run_12345")),
    ):
        text = shown(renderable)
        assert max(len(line.rstrip()) for line in text.splitlines()) <= 80, text
        for whole in wholes:
            assert whole in text, (whole, text)


def test_a_refusal_names_the_command_and_the_words_typed_not_the_frame():
    refused = {
        "code": 400,
        "error": "bad-request",
        "message": "data.processId: String should match pattern '^tp_[0-9]+$'",
    }
    text = error_text(refused, "/resume").plain
    assert text == "/resume: tp_N: String should match pattern '^tp_[0-9]+$'  (400 bad-request)"
    conflict = {"code": 409, "error": "conflict", "message": "send process-resume first"}
    assert error_text(conflict).plain == "send /resume first  (409 conflict)"


def test_help_fits_80_columns():
    from vance.slash import HELP

    assert max(len(line) for line in HELP.splitlines()) <= 80
    assert "/space start" in HELP
    assert "/inbox [STATUS|all]" in HELP
