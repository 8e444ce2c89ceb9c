"""The space-* frames through the real ASGI stack, the space-state event on every open session
of the space, and REST /api/spaces."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from protocol import outbound as out
from spaces.actions import agent
from spaces.models import ThinkingNode
from tests.support.spaces import plant
from tests.support.ws import bearer, connect, open_session

pytestmark = [pytest.mark.django_db(transaction=True)]


@database_sync_to_async
def start_with_child(chat_process_id: str) -> tuple[str, str, str]:
    process = int(chat_process_id.removeprefix("tp_"))
    snapshot = agent.start_space(process)
    _, child = agent.split(process, "Rings", "Count the rings.")
    plant(ThinkingNode.objects.get(pk=child.pk), "count them")
    return snapshot.space.public_id, snapshot.root.public_id, child.public_id


def checkpoint_rules(call_tool: bool) -> list[dict[str, Any]]:
    answer: dict[str, Any] = (
        {"tool_calls": [{"name": "thinking_checkpoint", "arguments": {"handoff": "Seven."}}]}
        if call_tool
        else {"reply": "no"}
    )
    return [
        {"engine": "arthur", "match": r"^\[control: checkpoint", **answer},
        {"engine": "arthur", "reply": "ok"},
    ]


@pytest.mark.asyncio
async def test_space_frames_answer_the_whole_space_and_every_change_is_a_space_state_event(
    alice, script
):
    # given alice's session as the root of a space with one child
    script(checkpoint_rules(call_tool=True))
    client = await connect(bearer(alice))
    created = await open_session(client, alice, recipe="arthur")
    space_id, root_id, child_id = await start_with_child(created["chatProcessId"])
    # when she asks for the space, by node and by id
    by_node = await client.request("space-get", {"nodeId": root_id})
    by_id = await client.request("space-get", {"spaceId": space_id})
    bound = await client.request("space-get", {})
    # then both answer the whole space, a reply of its model
    out.server_frame.validate_python(by_node)
    assert by_node["type"] == "space"
    assert by_node["data"]["space"] == by_id["data"]["space"] == bound["data"]["space"]
    revision = by_node["data"]["space"]["revision"]
    # when she renames the child at the revision she saw, and again at that stale revision
    renamed = await client.request(
        "space-rename", {"nodeId": child_id, "title": "Ring count", "revision": revision}
    )
    stale = await client.request(
        "space-rename", {"nodeId": child_id, "title": "Nope", "revision": revision}
    )
    # then the first is answered and announced, the second refused with nothing changed
    assert renamed["data"]["space"]["revision"] == revision + 1
    assert (stale["type"], stale["data"]["code"], stale["data"]["error"]) == ("error", 409, "stale")
    state = await client.event("space-state")
    assert state["data"]["space"]["id"] == space_id
    # when she asks the child for a checkpoint
    done = await client.request("space-checkpoint", {"nodeId": child_id})
    # then the reply comes after the control turn, with the verified checkpoint
    [child] = [n for n in done["data"]["space"]["nodes"] if n["id"] == child_id]
    assert (child["checkpointHandoff"], child["checkpointRefreshingAt"]) == ("Seven.", None)


@pytest.mark.asyncio
async def test_a_failed_checkpoint_turn_is_an_error_and_a_human_split_is_answered(alice, script):
    script(checkpoint_rules(call_tool=False))
    client = await connect(bearer(alice))
    created = await open_session(client, alice, recipe="arthur")
    _, _root_id, child_id = await start_with_child(created["chatProcessId"])
    # when the checkpoint turn writes nothing
    failed = await client.request("space-checkpoint", {"nodeId": child_id})
    # then the error says so
    assert (failed["type"], failed["data"]["error"]) == ("error", "control-failed")
    assert "previous one is kept" in failed["data"]["message"]
    # when she splits the child (its conversation is not empty): the new node waits
    split = await client.request("space-split", {"nodeId": child_id, "title": "Gaps"})
    [new] = [n for n in split["data"]["space"]["nodes"] if n["title"] == "Gaps"]
    assert (new["state"], new["parentId"], new["depth"]) == ("forkHandoffPending", child_id, 2)


@pytest.mark.asyncio
async def test_another_users_node_is_not_found(alice, bob):
    client = await connect(bearer(alice))
    created = await open_session(client, alice, recipe="arthur")
    space_id, root_id, _ = await start_with_child(created["chatProcessId"])
    other = await connect(bearer(bob))
    for kind, data in [
        ("space-get", {"nodeId": root_id}),
        ("space-get", {"spaceId": space_id}),
        ("space-rename", {"nodeId": root_id, "title": "mine"}),
        ("space-return", {"nodeId": root_id}),
    ]:
        reply = await other.request(kind, data)
        assert reply["data"]["code"] == 404, (kind, reply)


def test_rest_lists_the_users_spaces_and_shows_one(alice, bob):
    from rest_framework.test import APIClient

    from tests.support.arthur import arthur_session

    session = arthur_session(alice)
    snapshot = agent.start_space(session.chat_process_id)
    agent.split(session.chat_process_id, "Moons", "The moons.")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {alice.token}")
    listing = client.get("/api/spaces").json()
    assert [s["id"] for s in listing["results"]] == [snapshot.space.public_id]
    one = client.get(f"/api/spaces/{snapshot.space.public_id}").json()
    assert (one["version"], one["revision"], len(one["nodes"])) == (1, 2, 2)
    assert one["rootNodeId"] == snapshot.root.public_id
    foreign = APIClient()
    foreign.credentials(HTTP_AUTHORIZATION=f"Bearer {bob.token}")
    assert foreign.get(f"/api/spaces/{snapshot.space.public_id}").status_code == 404
    assert foreign.get("/api/spaces").json()["results"] == []


@pytest.mark.asyncio
async def test_space_suggest_starts_a_space_whose_agent_suggests_the_first_branches(alice, script):
    # given an agent whose control step answers the order with thinking_suggest
    branches = [{"title": t, "handoff": f"Explore {t}."} for t in ("Moons", "Rings")]
    script(
        [
            {
                "engine": "arthur",
                "step": "control",
                "match": r"^\[control: suggest\]",
                "tool_calls": [{"name": "thinking_suggest", "arguments": {"children": branches}}],
            },
            {"engine": "arthur", "reply": "ok"},
        ]
    )
    client = await connect(bearer(alice))
    await open_session(client, alice, recipe="arthur")
    # when the person asks for suggestions in a session that is no space yet
    reply = await client.request("space-suggest")
    # then the reply is the new space, its root alone
    out.server_frame.validate_python(reply)
    assert reply["type"] == "space"
    assert [n["parentId"] for n in reply["data"]["space"]["nodes"]] == [None]
    # and the agent's branches arrive as a space-state event
    while True:
        state = await client.event("space-state", after=0)
        if len(state["data"]["space"]["nodes"]) == 3:
            break
        client.events.remove(state)
    titles = [n["title"] for n in state["data"]["space"]["nodes"] if n["parentId"]]
    assert titles == ["Moons", "Rings"]
    # when the person asks again, then it is refused: the root has its first branches
    again = await client.request("space-suggest")
    assert (again["type"], again["data"]["code"]) == ("error", 409)
    assert "already has children" in again["data"]["message"]
    await client.ws.disconnect()
