"""A new node joins its parent's standing composition: the parent session's session-scope
settings (the model) and its registered client tools carry over; its history never does."""

from __future__ import annotations

import pytest

from engines.registry import get_engine
from processes.capabilities.tools import toolbox_for
from processes.lane.context_builder import engine_settings
from processes.models import ConversationMessage, ThinkProcess
from sessions_app.models import Session
from sessions_app.services import register_tools
from spaces.actions import agent
from tests.support.spaces import node, plant
from vancetope.config.cascade import current_revision, session_values
from vancetope.config.models import Scope, Setting
from vancetope.config.registry import get_key
from vancetope.config.services import do_set

SHELL_RUN = {
    "name": "run_shell",
    "description": "Run a shell command in the working directory",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    "safety": "MUTATING",
}


@pytest.mark.django_db(transaction=True)
def test_a_split_child_takes_its_parents_model_and_client_tools_but_not_its_history(
    root_session,
):
    # given a root session with its own model, a client tool, and a conversation so far
    tenant_id = root_session.project.tenant_id
    do_set(get_key("llm.model"), Scope.SESSION, root_session.pk, tenant_id, "node-model")
    do_set(get_key("arthur.maxSteps"), Scope.SESSION, root_session.pk, tenant_id, 3)
    register_tools(root_session, [SHELL_RUN])
    root = node(agent.start_space(root_session.chat_process_id).root.public_id)
    plant(root, "the parent's own words")
    # when its agent splits off a child
    _, made = agent.split(root_session.chat_process_id, "Moons", "Count the moons.")
    child = node(made.public_id)
    session = Session.objects.get(pk=child.session_id)
    # then the child's session has the parent's session-scope values, read as its own
    stored = Setting.objects.filter(scope=Scope.SESSION, scope_id=session.pk)
    assert {row.key: row.value for row in stored} == {
        "llm.model": "node-model",
        "arthur.maxSteps": 3,
    }
    process = ThinkProcess.objects.get(pk=child.chat_process_id)
    arthur = get_engine("arthur")
    assert arthur is not None
    found = engine_settings(arthur, process, session_values(session.pk, current_revision()))
    assert (found["llm.model"], found["maxSteps"]) == ("node-model", 3)
    # and the parent's client tools, which a pool that admits them offers
    assert [tool["name"] for tool in session.client_tools] == ["run_shell"]
    assert "run_shell" in toolbox_for(process, {"run_shell"}, lambda: None).names()
    # and none of the parent's conversation
    assert not ConversationMessage.objects.filter(process_id=child.chat_process_id).exists()
    assert process.conversation_length == 0


@pytest.mark.django_db(transaction=True)
def test_a_child_of_a_session_without_settings_or_tools_starts_with_none(root_session):
    # given a root session that set nothing of its own and registered no tools
    agent.start_space(root_session.chat_process_id)
    # when its agent splits
    _, made = agent.split(root_session.chat_process_id, "Rings", "Count the rings.")
    child = node(made.public_id)
    # then the child's session has no session-scope value and no client tool
    assert not Setting.objects.filter(scope=Scope.SESSION, scope_id=child.session_id).exists()
    assert Session.objects.get(pk=child.session_id).client_tools == []
