"""`/space` in `vance chat`: the tree with each branch's state, and the controls as frames."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.chat_client import event
from vance.slash import run_slash_command


def node(node_id: str, parent: str | None, title: str, state: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "parentId": parent,
        "depth": 0 if parent is None else 1,
        "sortOrder": int(node_id[5:]),
        "sessionId": "sess_1",
        "chatProcessId": "tp_1",
        "title": title,
        "state": state,
        "checkpointRefreshingAt": None,
        "inheritedHandoff": None,
        "checkpointHandoff": None,
        "returnedHandoff": None,
        "createdAt": "2026-12-01T00:00:00+00:00",
        "updatedAt": "2026-12-01T00:00:00+00:00",
        **extra,
    }


SPACE = {
    "id": "spc_1",
    "version": 1,
    "revision": 7,
    "rootNodeId": "node_1",
    "projectId": "proj_default",
    "nodes": [
        node("node_1", None, "Saturn", "active"),
        node("node_2", "node_1", "Moons", "returned", returnedHandoff="95 moons."),
        node("node_3", "node_1", "Rings", "active", checkpointHandoff="7 rings so far."),
        node("node_4", "node_1", "Gaps", "forkHandoffPending"),
    ],
    "createdAt": "2026-12-01T00:00:00+00:00",
    "updatedAt": "2026-12-01T00:00:00+00:00",
}


async def answer(chat, socket, line: str) -> dict[str, Any]:
    running = asyncio.create_task(run_slash_command(chat, line))
    await asyncio.sleep(0.01)
    sent = socket.sent[-1]
    chat._dispatch({"type": "space", "replyTo": sent["id"], "data": {"space": SPACE}})
    await running
    return sent


async def test_slash_space_shows_the_tree_with_states_and_handoffs(client):  # noqa: F811
    chat, output, socket = client()
    # when
    sent = await answer(chat, socket, "/space")
    # then the bound session's space was asked for and drawn from its root
    assert (sent["type"], sent["data"]) == ("space-get", {})
    text = output.getvalue()
    assert "space spc_1 (revision 7)" in text
    assert "node_2 Moons  [returned]" in text
    assert "95 moons." in text
    assert "node_3 Rings  [checkpointed]" in text
    assert "node_4 Gaps  [forkHandoffPending]" in text


async def test_slash_space_controls_send_their_frames(client):  # noqa: F811
    chat, _output, socket = client()
    sent = [
        await answer(chat, socket, line)
        for line in (
            "/space split node_3 Inner rings",
            "/space rename node_3 Ring count",
            "/space checkpoint node_3",
            "/space return node_3",
            "/space retry node_4",
            "/space node_2",
        )
    ]
    assert [(s["type"], s["data"]) for s in sent] == [
        ("space-split", {"nodeId": "node_3", "title": "Inner rings"}),
        ("space-rename", {"nodeId": "node_3", "title": "Ring count"}),
        ("space-checkpoint", {"nodeId": "node_3"}),
        ("space-return", {"nodeId": "node_3"}),
        ("space-fork-retry", {"nodeId": "node_4"}),
        ("space-get", {"nodeId": "node_2"}),
    ]


async def reply_with(chat, socket, line: str, space: dict[str, Any]) -> None:
    running = asyncio.create_task(run_slash_command(chat, line))
    await asyncio.sleep(0.01)
    chat._dispatch({"type": "space", "replyTo": socket.sent[-1]["id"], "data": {"space": space}})
    await running


@pytest.mark.parametrize("event_first", [True, False])
async def test_a_change_prints_its_space_once_whether_its_event_or_its_reply_comes_first(
    client,  # noqa: F811
    event_first,
):
    chat, output, socket = client()
    renamed = {**SPACE, "revision": 8}
    # when a rename's new revision comes as the command's reply and as a space-state event
    if event_first:
        chat._dispatch(event(1, "space-state", space=renamed))
    await reply_with(chat, socket, "/space rename node_3 Ring count", renamed)
    if not event_first:
        chat._dispatch(event(1, "space-state", space=renamed))
    # then it is printed once
    assert output.getvalue().count("space spc_1 (revision 8)") == 1
    # and /space, asked for it, prints it again
    await reply_with(chat, socket, "/space", renamed)
    assert output.getvalue().count("space spc_1 (revision 8)") == 2
