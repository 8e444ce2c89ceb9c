"""The MCP face at /mcp, driven by the `mcp` SDK's own client (ClientSession over its
Streamable HTTP client) against the Brain's ASGI application served by uvicorn."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mcp.client.subscriptions import listen
from mcp_types import CallToolResult

from inbox.services import post_item
from processes.models import ThinkProcess
from tests.support.marvin import plan, worker
from tests.support.mcp_brain import data, mcp_brain, mcp_client, text
from tests.support.tenancy import open_session
from vancetope.service_calls import call_service

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "process_create",
    "process_list",
    "process_get",
    "process_steer",
    "process_pause",
    "process_resume",
    "process_stop",
    "inbox_list",
    "inbox_answer",
    "workflow_run",
    "memory_search",
}


def test_the_client_lists_the_tools_and_the_resources(alice):
    # given the Brain serving /mcp
    with mcp_brain() as url:

        async def listing() -> tuple[set[str], set[str]]:
            async with mcp_client(url, alice.token) as client:
                tools = await client.list_tools()
                templates = await client.list_resource_templates()
            return {t.name for t in tools.tools}, {
                t.uri_template for t in templates.resource_templates
            }

        # when a client lists them
        tools, templates = asyncio.run(listing())
    # then every tool and both resources are there
    assert tools == TOOLS
    assert templates == {"vancetope://processes/{process_id}", "vancetope://inbox{?status}"}


def test_a_deep_think_created_over_mcp_is_read_until_done(alice, script):
    # given a marvin script with one worker and its report
    script(
        [
            {
                "engine": "marvin",
                "step": "plan",
                "tool_calls": plan(
                    {"kind": "WORKER", "title": "Moons", "goal": "count the moons"},
                    {"kind": "AGGREGATE", "title": "Report"},
                ),
            },
            *worker("count the moons", "95 moons."),
            {"engine": "marvin", "step": "aggregate", "reply": "Saturn has 95 moons."},
        ]
    )
    with mcp_brain() as url:

        async def think() -> tuple[dict, dict, str]:
            async with mcp_client(url, alice.token) as client:
                # when the client creates a deep think, which answers at once
                created = data(await client.call_tool("process_create", {"goal": "study Saturn"}))
                # and polls it until it is CLOSED
                for _ in range(400):
                    got = data(await client.call_tool("process_get", {"process": created["id"]}))
                    if got["status"] == "CLOSED":
                        break
                    await asyncio.sleep(0.05)
                resource = await client.read_resource(f"vancetope://processes/{created['id']}")
            return created, got, resource.contents[0].text  # type: ignore[union-attr]

        created, done, resource = asyncio.run(think())
    # then it was a marvin in the person's MCP session, and it finished with its report
    assert (created["thinkEngine"], created["recipe"]) == ("marvin", "deep-think")
    process = ThinkProcess.objects.select_related("session").get(pk=int(created["id"][3:]))
    assert (process.session.client_type, process.session.owner_id) == ("mcp", alice.user.pk)
    assert (done["status"], done["closeReason"]) == ("CLOSED", "DONE")
    assert {node["status"] for node in done["taskTree"]["nodes"]} == {"DONE"}
    assert "Saturn has 95 moons." in done["lastResult"]
    assert '"closeReason": "DONE"' in resource


def test_an_inbox_question_is_listed_and_answered_over_mcp(alice):
    # given a question a process of alice's left in her inbox
    process = ThinkProcess.objects.get(pk=open_session(alice).chat_process_id)
    item = post_item(process, "QUESTION", "Colour", "Which colour?")
    with mcp_brain() as url:

        async def answer() -> tuple[dict, dict, str]:
            async with mcp_client(url, alice.token) as client:
                # when the client lists the inbox and answers the question
                listed = data(await client.call_tool("inbox_list", {}))
                answered = data(
                    await client.call_tool(
                        "inbox_answer", {"item": item.public_id, "answer": {"text": "blue"}}
                    )
                )
                inbox = await client.read_resource("vancetope://inbox")
            return listed, answered, inbox.contents[0].text  # type: ignore[union-attr]

        listed, answered, inbox = asyncio.run(answer())
    # then the item was listed, the answer reached the process, and the inbox is empty
    assert [row["id"] for row in listed["items"]] == [item.public_id]
    assert (answered["item"]["status"], answered["delivered"]) == ("ANSWERED", True)
    assert '"items": []' in inbox


def test_another_tenants_process_is_not_found(alice, bob):
    # given a process of bob's
    theirs = open_session(bob).chat_process_id
    with mcp_brain() as url:

        async def peek() -> tuple[CallToolResult, CallToolResult]:
            async with mcp_client(url, alice.token) as client:
                got = await client.call_tool("process_get", {"process": f"tp_{theirs}"})
                stopped = await client.call_tool("process_stop", {"process": f"tp_{theirs}"})
            return got, stopped

        # when alice reads and stops it
        got, stopped = asyncio.run(peek())
    # then both are a tool error saying it is not found, and it still runs
    for result in (got, stopped):
        assert result.is_error
        assert (result.structured_content or {})["code"] == 404
        assert f"tp_{theirs} not found" in text(result)
    assert ThinkProcess.objects.get(pk=theirs).status != "CLOSED"


def test_a_bad_argument_is_a_tool_error_naming_the_field(alice):
    with mcp_brain() as url:

        async def refused() -> tuple[CallToolResult, CallToolResult]:
            async with mcp_client(url, alice.token) as client:
                # when the client names a recipe there is none of, and sends a number as goal
                recipe = await client.call_tool(
                    "process_create", {"goal": "x", "recipe": "no-such-recipe"}
                )
                typed = await client.call_tool("process_create", {"goal": 12})
            return recipe, typed

        recipe, typed = asyncio.run(refused())
    # then both are tool errors naming the field, and nothing was created
    assert recipe.is_error
    assert (recipe.structured_content or {})["field"] == "recipe"
    assert "no recipe 'no-such-recipe'" in text(recipe)
    assert typed.is_error
    assert "goal" in text(typed)
    assert not ThinkProcess.objects.filter(session__client_type="mcp").exists()


def test_a_listen_stream_hears_of_the_persons_inbox_and_never_of_anothers_process(alice, bob):
    # given a process of alice's and one of bob's
    process = ThinkProcess.objects.get(pk=open_session(alice).chat_process_id)
    theirs = f"vancetope://processes/tp_{open_session(bob).chat_process_id}"
    with mcp_brain() as url:

        async def hear() -> tuple[list[str], str]:
            async with (
                mcp_client(url, alice.token, modern=True) as client,
                listen(client, resource_subscriptions=["vancetope://inbox", theirs]) as stream,
            ):
                # when alice listens to her inbox and to bob's process, and an item is posted
                await call_service(post_item, process, "QUESTION", "Colour", "Which colour?")
                event = await asyncio.wait_for(stream.__anext__(), 10)
            honored = stream.honored.resource_subscriptions or []
            return honored, getattr(event, "uri", "")

        honored, heard = asyncio.run(hear())
    # then bob's process was dropped from her subscriptions, and she hears of her inbox
    assert honored == ["vancetope://inbox"]
    assert heard == "vancetope://inbox"


@pytest.mark.parametrize("header", [None, "Bearer not-a-token", "Basic abc"])
def test_a_request_without_a_valid_token_is_refused_before_mcp(alice, header):
    # given the Brain serving /mcp
    with mcp_brain() as url:
        # when a client initializes without a token, with a wrong one, or another scheme
        headers = {"Accept": "application/json, text/event-stream"}
        if header:
            headers["Authorization"] = header
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        answer = httpx2.post(url, json=body, headers=headers)
    # then it is a 401 with REST's error body
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthenticated"
    assert answer.headers["www-authenticate"].startswith("Bearer")
