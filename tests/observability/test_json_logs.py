"""JSON logs (issue 26): with VANCETOPE_LOG_FORMAT=json every record is one JSON object per
line, carrying the process, session and run of the turn that logged it and its trace ids."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from processes.actions import steer
from processes.models import ThinkProcess
from tests.support.observability import named
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from vancetope.observability.logs import ContextFilter, JsonFormatter

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The root logger's records, also as JSON lines in a buffer (as the console would have
    them with VANCETOPE_LOG_FORMAT=json)."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    logging.getLogger().addHandler(handler)
    try:
        yield buffer
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.mark.django_db(transaction=True)
def test_a_failed_turn_logs_one_json_line_with_its_process_session_and_trace(
    alice, script, spans, settings, json_lines
):
    # given a provider that fails every call, retried at once
    settings.VANCETOPE_TURN_RETRY_SECONDS = 0
    script([{"match": "^hello$", "error": "rate limited"}])
    session = open_session(alice)
    chat_id = session.chat_process_id
    # when a chat's turn fails
    steer.send_chat(session.pk, "hello")
    wait_until(lambda: ThinkProcess.objects.get(pk=chat_id).status == "BLOCKED")
    # then each record is a JSON line; the lane's failure names the process, its session and
    # the turn's trace and span
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    failed = [line for line in lines if "turn on message #1 failed" in line["message"]]
    assert failed
    line = failed[0]
    assert (line["level"], line["logger"]) == ("ERROR", "processes.lane.driver")
    assert (line["process"], line["session"]) == (f"tp_{chat_id}", f"sess_{session.pk}")
    assert "rate limited" in line["exception"]
    turns = named(spans(), "invoke_agent")
    assert (line["trace_id"], line["span_id"]) in {(t.trace_id, t.span_id) for t in turns}
    # and a record logged outside any turn carries no ids
    logging.getLogger("tests").warning("outside")
    outside = json.loads(json_lines.getvalue().splitlines()[-1])
    assert outside["message"] == "outside"
    assert not {"process", "session", "run", "trace_id"} & set(outside)


def test_the_brain_logs_json_lines_when_the_setting_says_so(tmp_path):
    # given VANCETOPE_LOG_FORMAT=json
    env = {**os.environ, "VANCETOPE_LOG_FORMAT": "json", "VANCETOPE_VAR_DIR": str(tmp_path)}
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('vancetope.check').warning('hello %s', 'json')"
    )
    # when a Brain process logs
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    # then its console has one JSON object for the record
    [line] = [json.loads(text) for text in done.stderr.splitlines() if text.startswith("{")]
    assert (line["level"], line["logger"], line["message"]) == (
        "WARNING",
        "vancetope.check",
        "hello json",
    )
