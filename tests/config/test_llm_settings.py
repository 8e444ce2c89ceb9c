"""The LLM provider, model, base URL and key are settings: a change at project scope is what
the next turn of a process in that project asks the OpenAI-compatible provider for (the real
`openai` client against a local stub), never a stale client; a provider the settings cannot
build makes the turn wait BLOCKED, never fail."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from processes.actions import lifecycle, steer
from processes.models import ThinkProcess
from processes.states import Status
from tests.config.helpers import answers, chat, ford_session, put
from tests.support.openai_stub import OpenAIStubServer
from tests.support.waiting import wait_until
from vancetope.llm.factory import reset_provider_cache
from vancetope.tenancy.models import Project

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stub(settings: Any) -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as server:
        settings.VANCETOPE_LLM = "openai"
        settings.VANCETOPE_LLM_MODEL = "env-model"
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "sk-env"
        settings.VANCETOPE_TURN_RETRY_SECONDS = 0.01
        reset_provider_cache()
        yield server
    reset_provider_cache()


def test_changing_llm_model_at_project_scope_changes_the_model_the_next_turn_asks_for(
    alice, stub: OpenAIStubServer
):
    # given a chat in alice's project, and one in another project of her tenant
    session = ford_session(alice)
    other = Project.objects.create(tenant=alice.tenant, slug="alice-other", name="Other")
    elsewhere = ford_session(alice, other)
    assert chat(session, "one") == "echo: one"
    assert stub.requests[-1]["model"] == "env-model"
    # when a project admin sets llm.model for alice's project
    answer = put(alice, "llm.model", "project", alice.project_id, "project-model")
    assert answer.status_code == 200, answer.json()
    # then the next turn asks for that model, with the same client settings otherwise
    assert chat(session, "two") == "echo: two"
    assert stub.requests[-1]["model"] == "project-model"
    assert stub.recorded[-1].headers["authorization"] == "Bearer sk-env"
    # and the other project still asks for the environment's
    chat(elsewhere, "three")
    assert stub.requests[-1]["model"] == "env-model"
    # when the project's key is set too, the next turn sends it (no stale client)
    assert put(alice, "llm.apiKey", "project", alice.project_id, "sk-project").status_code == 200
    chat(session, "four")
    assert stub.recorded[-1].headers["authorization"] == "Bearer sk-project"
    assert stub.requests[-1]["model"] == "project-model"
    # when the model is unset again, the environment's applies to the next turn
    unset = alice.api().delete(f"/api/settings/llm.model?scope=project&scopeId={alice.project_id}")
    assert unset.status_code == 200
    assert unset.json()["scope"] == "default"
    chat(session, "five")
    assert stub.requests[-1]["model"] == "env-model"


def test_a_session_scope_model_shadows_the_projects_for_that_session_only(
    alice, stub: OpenAIStubServer
):
    # given a project model and two sessions, one of which sets its own
    assert put(alice, "llm.model", "project", alice.project_id, "project-model").status_code == 200
    mine, theirs = ford_session(alice), ford_session(alice)
    assert put(alice, "llm.model", "session", f"sess_{mine.pk}", "session-model").status_code == 200
    # when both chat
    chat(mine, "a")
    mine_asked = stub.requests[-1]["model"]
    chat(theirs, "b")
    # then
    assert (mine_asked, stub.requests[-1]["model"]) == ("session-model", "project-model")


def test_a_provider_the_settings_cannot_build_blocks_the_turn_at_once_until_they_are_fixed(
    alice, stub: OpenAIStubServer, settings: Any
):
    # given anthropic chosen for alice's project, with no Anthropic key anywhere; a retry
    # would wait longer than the test waits for BLOCKED
    settings.ANTHROPIC_API_KEY = ""
    settings.VANCETOPE_TURN_RETRY_SECONDS = 60
    session = ford_session(alice)
    assert put(alice, "llm.provider", "project", alice.project_id, "anthropic").status_code == 200
    # when the person chats
    steer.send_chat(session.pk, "hello")
    # then the chat waits BLOCKED (not FAILED) after one attempt (no retry), saying what to fix
    chat_id = session.chat_process_id
    assert chat_id is not None

    def blocked() -> ThinkProcess | None:
        row = ThinkProcess.objects.get(pk=chat_id)
        return row if row.status == Status.BLOCKED and not row.lease_owner else None

    waiting = wait_until(blocked)
    assert waiting is not None
    assert "needs ANTHROPIC_API_KEY" in waiting.last_error
    assert "llm.apiKey" in waiting.last_error
    assert stub.requests == []
    # when the project's provider is unset and the chat resumed
    unset = alice.api().delete(
        f"/api/settings/llm.provider?scope=project&scopeId={alice.project_id}"
    )
    assert unset.status_code == 200
    lifecycle.resume_process(chat_id)
    # then the message kept is answered by the environment's provider
    assert wait_until(lambda: answers(chat_id)) == ["echo: hello"]
    assert len(stub.requests) == 1
