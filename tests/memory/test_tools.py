"""The memory tools in arthur's pool, and ctx.memory: what a process writes carries it as its
source, reads cascade from its session, and its writes stay in scopes it may write."""

from __future__ import annotations

import pytest

from processes.actions import steer
from processes.capabilities.tools import toolbox_for
from processes.models import ThinkProcess
from sessions_app.models import Session
from tests.support.arthur import arthur_session, said
from tests.support.memory import embedded
from tests.support.waiting import wait_until
from vancetope.memory.capability import MemoryAccess
from vancetope.memory.models import MemoryItem
from vancetope.memory.tools import MEMORY_TOOLS

pytestmark = pytest.mark.django_db(transaction=True)


def chat_process(session: Session) -> ThinkProcess:
    assert session.chat_process_id is not None
    return ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)


def test_arthur_remembers_with_memory_write_and_the_item_names_its_process(alice, script):
    # given
    script(
        [
            {
                "engine": "arthur",
                "match": "^remember: we deploy on Fridays$",
                "times": 1,
                "tool_calls": [
                    {
                        "name": "memory_write",
                        "arguments": {"key": "deploy-day", "content": "Friday"},
                    }
                ],
            },
            {"engine": "arthur", "match": "^remember", "reply": "Noted."},
        ]
    )
    session = arthur_session(alice)
    # when
    steer.send_chat(session.pk, "remember: we deploy on Fridays")
    # then
    wait_until(lambda: "Noted." in said(session, "assistant"))
    [item] = MemoryItem.objects.all()
    assert (item.scope, item.key, item.content) == ("project", "deploy-day", "Friday")
    assert (item.source_kind, item.source_id) == ("process", f"tp_{session.chat_process_id}")
    looked_up = alice.api().get(
        "/api/memory/lookup", {"key": "deploy-day", "project": alice.project_id}
    )
    assert looked_up.json()["item"]["source"]["id"] == f"tp_{session.chat_process_id}"


def test_arthurs_pool_offers_the_three_memory_tools(alice):
    # given
    process = chat_process(arthur_session(alice))
    # when
    names = toolbox_for(process, ["memory_*"], lambda: None).names()
    # then
    assert set(MEMORY_TOOLS) <= set(names)


def test_memory_read_answers_the_sessions_own_value_before_the_projects(alice):
    # given
    session = arthur_session(alice)
    toolbox = toolbox_for(chat_process(session), list(MEMORY_TOOLS), lambda: None)
    toolbox.invoke("memory_write", {"key": "tone", "content": "formal"})
    toolbox.invoke("memory_write", {"key": "tone", "content": "casual", "scope": "session"})
    # when
    answer = toolbox.invoke("memory_read", {"key": "tone"})
    missing = toolbox.invoke("memory_read", {"key": "nothing"})
    # then
    assert (answer.data["content"], answer.data["scope"]) == ("casual", "session")
    assert missing.data == {"key": "nothing", "found": False}


def test_a_process_of_a_member_cannot_write_tenant_memory(alice):
    # given
    alice.tenant.memberships.update(role="member")
    toolbox = toolbox_for(chat_process(arthur_session(alice)), list(MEMORY_TOOLS), lambda: None)
    # when
    answer = toolbox.invoke("memory_write", {"content": "x", "scope": "tenant"})
    # then
    assert not answer.ok
    assert "only admins" in answer.error
    assert not MemoryItem.objects.exists()


def test_memory_search_of_a_process_sees_its_projects_items_and_not_another_tenants(alice, bob):
    # given
    mine = MemoryAccess.of(alice.project.pk, 0, alice.user.pk, "tp_1")
    theirs = MemoryAccess.of(bob.project.pk, 0, bob.user.pk, "tp_2")
    mine.write("The coffee machine is descaled on Mondays.")
    theirs.write("The coffee machine in Bob's office is broken.")
    embedded()
    toolbox = toolbox_for(chat_process(arthur_session(alice)), list(MEMORY_TOOLS), lambda: None)
    # when
    answer = toolbox.invoke("memory_search", {"query": "coffee machine", "k": 5})
    # then
    assert [hit["snippet"] for hit in answer.data["results"]] == [
        "The coffee machine is descaled on Mondays."
    ]
