"""Traces of a process tree (issue 26): arthur starts marvin, whose two workers report; every
span of the tree is in one trace, each child's turns under the span that spawned it, and each
LLM call carries the GenAI semantic-convention attributes. On the embedded runtime here; the
PostgreSQL + Redis side, with a Celery worker exporting over OTLP, is in
test_traces_distributed.py."""

from __future__ import annotations

import pytest

from processes.actions import steer
from processes.actions.sessions import create_session
from sessions_app.services import FingerprintData
from tests.config.helpers import ford_session
from tests.support.observability import (
    named,
    saturn_script,
    start_saturn,
    turns_of,
    wait_for_tree_trace,
)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_arthur_marvin_worker_tree_is_one_trace_on_the_embedded_runtime(alice, script, spans):
    # given tracing on and scripts for arthur, marvin and its two workers
    script(saturn_script())
    # when a person asks arthur to study Saturn and the tree runs to its end
    chat_id, marvin, workers = start_saturn(alice)
    # then the tree is one trace, children under their spawns, LLM calls as GenAI spans
    wait_for_tree_trace(spans, chat_id, marvin, workers)
    # and the chat's later turn (marvin's report) is a trace of its own, once its span ends
    wait_until(lambda: len(turns_of(spans(), f"tp_{chat_id}")) >= 2)
    arthur_turns = turns_of(spans(), f"tp_{chat_id}")
    assert len({t.trace_id for t in arthur_turns}) == len(arthur_turns) >= 2


def test_with_trace_content_on_llm_spans_carry_the_prompt_and_the_answer(
    alice, script, spans, settings, monkeypatch
):
    # given tracing on with content, and a chat that answers
    monkeypatch.setattr("vancetope.observability.tracing._content", True)
    script([{"engine": "arthur", "match": "^hello$", "reply": "Hi there."}])
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="arthur",
    )
    # when the person says hello
    steer.send_chat(session.pk, "hello")
    wait_until(lambda: named(spans(), "invoke_agent arthur"))
    # then the LLM span holds both, in the GenAI conventions' message shape
    [call] = named(spans(), "chat ")
    assert '"content": "hello"' in call.attributes["gen_ai.input.messages"]
    assert '"content": "Hi there."' in call.attributes["gen_ai.output.messages"]
    [turn] = named(spans(), "invoke_agent arthur")
    assert call.parent_id == turn.span_id
    assert turn.attributes["vancetope.project"] == alice.project.public_id
    assert turn.attributes["vancetope.turn.outcome"] == "ok"


def test_a_tool_call_is_a_span_of_its_turn_naming_the_tool_and_where_it_runs(alice, script, spans):
    # given arthur asked to remember something, which it does with the memory_write tool
    write = {"name": "memory_write", "arguments": {"content": "Saturn has rings"}}
    script(
        [
            {"engine": "arthur", "match": "^remember$", "times": 1, "tool_calls": [write]},
            {"engine": "arthur", "match": "^remember$", "reply": "Noted."},
        ]
    )
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="arthur",
    )
    # when the person asks
    steer.send_chat(session.pk, "remember")
    wait_until(lambda: named(spans(), "invoke_agent arthur"))
    # then the tool call is an execute_tool span under the turn, between its two LLM calls
    [turn] = named(spans(), "invoke_agent arthur")
    [tool] = named(spans(), "execute_tool")
    assert tool.parent_id == turn.span_id
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "memory_write"
    assert tool.attributes["vancetope.tool.location"] == "server"
    assert tool.attributes["gen_ai.tool.call.id"].startswith("call_")
    assert [c.parent_id for c in named(spans(), "chat ")] == [turn.span_id, turn.span_id]


def test_an_llm_span_carries_what_the_call_sent_part_by_part(alice, spans, settings):
    # given tracing on, and a chat on a model whose window is known
    settings.VANCETOPE_LLM_CONTEXT_WINDOW = 2048
    session = ford_session(alice)
    # when the person says hello
    steer.send_chat(session.pk, "hello")
    wait_until(lambda: named(spans(), "invoke_agent ford"))
    # then the LLM span has the window, the budget, the answer's room and each part's tokens
    [call] = named(spans(), "chat ")
    attributes = call.attributes
    assert attributes["vancetope.context.window"] == 2048
    assert attributes["gen_ai.request.max_tokens"] == 512
    assert 0 < attributes["vancetope.context.tokens"] <= attributes["vancetope.context.budget"]
    assert attributes["vancetope.context.system.tokens"] > 0
    assert attributes["vancetope.context.step.tokens"] > 0
    assert attributes["vancetope.context.recent.tokens"] == 0
