"""`ctx.inbox` and the `inbox_post` tool: only for a process whose pool holds the tool."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from engines.context import CapabilityNotAvailable
from engines.registry import all_engines, get_engine
from inbox.capability import InboxAccess
from inbox.models import InboxItem, InboxStatus
from processes.actions.create import create_process
from processes.lane.context_builder import build_context
from processes.models import ConversationMessage
from processes.queries import load_process
from processes.states import Status
from recipes_app.models import Recipe
from tests.support.tenancy import open_session
from tests.support.tools import project_recipe
from tests.support.waiting import closed_process

pytestmark = pytest.mark.django_db(transaction=True)

POST_CALL = {
    "name": "inbox_post",
    "arguments": {
        "kind": "QUESTION",
        "title": "Which year?",
        "body": "For the **report**.",
        "options": ["2023", "2024"],
    },
}


def context_of(process_id: int):  # type: ignore[no-untyped-def]
    process = load_process(process_id)
    engine = get_engine(process.think_engine)
    keeper = SimpleNamespace(lease=None)
    return build_context(engine, process, keeper, queue_turn=lambda text: None).ctx  # type: ignore[arg-type]


def test_a_process_without_inbox_post_in_its_pool_has_no_ctx_inbox(alice):
    session = open_session(alice)
    worker = create_process(session, goal="answer", engine="ford", start=False)
    ctx = context_of(worker.pk)
    with pytest.raises(CapabilityNotAvailable, match="inbox_post is not in this process's"):
        ctx.inbox.post(kind="APPROVAL", title="t", body="")


def test_a_recipe_that_adds_inbox_post_gives_its_processes_ctx_inbox(alice):
    project_recipe(alice, "ford-asks", engine="ford", allowed_tools_add=["inbox_*"])
    project_recipe(
        alice,
        "ford-asks-not",
        engine="ford",
        allowed_tools_add=["inbox_post"],
        allowed_tools_remove=["inbox_post"],
    )
    session = open_session(alice)
    asking = create_process(session, recipe="ford-asks", start=False)
    not_asking = create_process(session, recipe="ford-asks-not", start=False)
    # when
    ctx = context_of(asking.pk)
    item_id = ctx.inbox.post(kind="APPROVAL", title="Go ahead?", body="")
    # then
    assert isinstance(ctx.inbox, InboxAccess)
    item = InboxItem.objects.get(pk=int(item_id.removeprefix("inb_")))
    assert (item.origin_process_id, item.kind, item.status) == (asking.pk, "APPROVAL", "OPEN")
    with pytest.raises(CapabilityNotAvailable):
        context_of(not_asking.pk).inbox.post(kind="APPROVAL", title="t", body="")


def test_inbox_post_is_in_the_session_chats_pool_only(recipes):
    # User I/O only in top-level recipes: arthur, the session chat, posts;
    # orchestrated engines report BLOCKED to their parent instead, unless a top-level recipe
    # (vogon-cron) adds the tool.
    with_it = {engine.name for engine in all_engines() if "inbox_post" in engine.allowed_tools}
    assert with_it == {"arthur"}
    adding = {r.name for r in Recipe.objects.all() if "inbox_post" in r.allowed_tools_add}
    assert adding == {"vogon-cron"}


def test_the_llm_posts_with_the_inbox_post_tool_and_reads_the_item_id(alice, llm):  # noqa: F811
    project_recipe(alice, "frankie-asks", allowed_tools_add=["inbox_post"])
    provider = llm([{"match": "ask the user", "times": 1, "tool_calls": [POST_CALL]}])
    session = open_session(alice)
    # when
    process = create_process(session, goal="ask the user which year", recipe="frankie-asks")
    process = closed_process(process.pk)
    # then the tool was offered, posted the item and answered with its id
    assert "inbox_post" in provider.offered[0]
    item = InboxItem.objects.get()
    assert (item.kind, item.title, item.options) == ("QUESTION", "Which year?", ["2023", "2024"])
    assert item.origin_process_id == process.pk
    assert item.status == InboxStatus.OPEN
    tool_message = ConversationMessage.objects.get(process_id=process.pk, role="tool")
    assert json.loads(tool_message.content) == {"itemId": item.public_id}
    assert process.status == Status.CLOSED  # frankie reached its goal


def test_an_inbox_post_with_bad_arguments_is_a_tool_error_the_llm_reads(alice, llm):  # noqa: F811
    project_recipe(alice, "frankie-asks", allowed_tools_add=["inbox_post"])
    bad = {
        "name": "inbox_post",
        "arguments": {"kind": "APPROVAL", "title": "t", "body": "", "options": ["a"]},
    }
    llm([{"match": "ask", "times": 1, "tool_calls": [bad]}])
    session = open_session(alice)
    process = closed_process(create_process(session, goal="ask", recipe="frankie-asks").pk)
    tool_message = ConversationMessage.objects.get(process_id=process.pk, role="tool")
    assert tool_message.content == "error (bad-arguments): options: only a QUESTION has options"
    assert not InboxItem.objects.exists()
