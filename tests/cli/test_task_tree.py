"""Task trees in `vance chat`, without a Brain: the tree drawn from the protocol's flat nodes,
and the chat following a tree as it runs (whole when first seen, when its shape changes and when
it finishes; one line per status change in between); `/tree` asks the Brain for the tree now."""

from __future__ import annotations

import asyncio
import copy
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.support.chat_client import FakeSocket, event
from vance.chat import ChatClient, ChatOptions
from vance.config import Config
from vance.fingerprint import Fingerprint
from vance.lines import LineRouter
from vance.slash import run_slash_command
from vance.tasktree import TaskTreeFollower, duration, task_tree, tree_nodes


def marvin_tree() -> dict[str, Any]:
    """A tree as marvin keeps it: a plan with two workers and an aggregate."""
    return {
        "rootId": "n1",
        "nodes": [
            {"id": "n1", "parentId": None, "kind": "PLAN", "title": "Plan", "goal": "trip",
             "status": "DONE", "startedAt": "2026-12-01T10:00:00Z",
             "finishedAt": "2026-12-01T10:00:01.5Z"},
            {"id": "n2", "parentId": "n1", "kind": "WORKER", "title": "Research trains",
             "goal": "trains", "status": "RUNNING", "processId": "tp_7",
             "startedAt": "2026-12-01T10:00:02Z"},
            {"id": "n3", "parentId": "n1", "kind": "WORKER", "title": "Research hotels",
             "goal": "hotels", "status": "PENDING"},
            {"id": "n4", "parentId": "n1", "kind": "AGGREGATE", "title": "Report",
             "goal": "report", "status": "PENDING"},
        ],
    }  # fmt: skip


def shown(renderable: Any) -> str:
    output = io.StringIO()
    Console(file=output, width=120, color_system=None).print(renderable)
    return output.getvalue()


def finish(tree: dict[str, Any], node_id: str, status: str = "DONE", **fields: Any) -> None:
    node = next(node for node in tree["nodes"] if node["id"] == node_id)
    node.update(status=status, **fields)


def test_a_flat_tree_is_drawn_with_each_node_under_its_parent():
    # when
    text = shown(task_tree("tp_4", marvin_tree()))
    lines = text.splitlines()
    # then: a heading with progress, the plan at the top, its children indented below it
    assert lines[0] == "tp_4 task tree · 1/4 finished"
    assert "✓ PLAN Plan (n1)  DONE 1.5s" in lines[1]
    plan_indent = lines[1].index("✓")
    labels = ["Research trains", "Research hotels", "Report"]
    for line, label in zip(lines[2:], labels, strict=True):
        assert label in line
        assert line.index(label) > plan_indent + 4
    assert "▶ WORKER Research trains (n2)  RUNNING  tp_7" in lines[2]
    assert "○ AGGREGATE Report (n4)  PENDING" in lines[4]


def test_a_failed_node_shows_its_error_and_a_done_one_its_result():
    tree = marvin_tree()
    finish(tree, "n2", finishedAt="2026-12-01T10:02:07Z", result={"summary": "ICE at 9"})
    finish(tree, "n3", "FAILED", error="budget maxTokens exceeded: 5000")
    # when
    text = shown(task_tree("tp_4", tree))
    # then
    assert "✓ WORKER Research trains (n2)  DONE 2m05s  tp_7  ICE at 9" in text
    assert "✗ WORKER Research hotels (n3)  FAILED  budget maxTokens exceeded: 5000" in text


def test_parallel_workers_failures_and_replans_are_counted_and_marked():
    # given two workers running at once, a third failed on its second attempt, and the
    # re-plan it woke, whose worker depends on the first
    tree = marvin_tree()
    finish(tree, "n3", "RUNNING", processId="tp_8")
    tree["nodes"][3:3] = [
        {"id": "n5", "parentId": "n1", "kind": "WORKER", "title": "Research ferries",
         "status": "FAILED", "attempts": 2, "error": "step report: invalid"},
        {"id": "n6", "parentId": "n1", "kind": "PLAN", "title": "Re-plan 1", "status": "DONE",
         "replanOf": ["n5"], "result": {"added": ["n7"]}},
        {"id": "n7", "parentId": "n6", "kind": "WORKER", "title": "Research buses",
         "status": "PENDING", "dependsOn": ["n2"]},
    ]  # fmt: skip
    # when
    text = shown(task_tree("tp_4", tree))
    # then
    assert text.splitlines()[0] == (
        "tp_4 task tree · 3/7 finished · 2 running at once · 1 failed · 1 re-plan"
    )
    assert "✗ WORKER Research ferries (n5)  FAILED [attempt 2]" in text
    assert "✓ PLAN Re-plan 1 (n6)  DONE [re-plan of n5]" in text
    assert "○ WORKER Research buses (n7)  PENDING [after n2]" in text


def test_a_finished_worker_line_says_its_result_summary():
    follower = TaskTreeFollower()
    tree = marvin_tree()
    follower.update("tp_4", tree)
    tree = copy.deepcopy(tree)
    finish(tree, "n2", finishedAt="2026-12-01T10:00:04.1Z", result={"summary": "ICE at 9"})
    # when
    [line] = follower.update("tp_4", tree)
    # then
    assert shown(line).strip() == "✓ tp_4 n2 Research trains — DONE 2.1s  ICE at 9"


def test_a_tree_of_nested_children_is_drawn_too_and_a_cycle_of_parents_ends():
    nested = {"title": "review", "status": "RUNNING", "children": [{"title": "read"}]}
    assert [node["parentId"] for node in tree_nodes(nested)] == [None, "node1"]
    assert "read" in shown(task_tree("tp_2", nested))
    # a node that names itself as its parent is drawn once, at the top
    looped = {"nodes": [{"id": "a", "parentId": "a", "title": "loop", "status": "PENDING"}]}
    assert shown(task_tree("tp_2", looped)).count("loop") == 1


def test_a_duration_is_empty_until_the_node_has_finished():
    assert duration({"startedAt": "2026-12-01T10:00:00Z"}) == ""
    assert duration({"startedAt": "2026-12-01T10:00:00Z", "finishedAt": "bad"}) == ""
    assert duration({"startedAt": "2026-12-01T10:00:00Z", "finishedAt": "2026-12-01T10:00:03Z"})


def test_the_follower_prints_the_tree_once_then_one_line_per_status_change():
    follower = TaskTreeFollower()
    tree = marvin_tree()
    # when: the tree is first seen
    first = follower.update("tp_4", tree)
    # then: whole
    assert len(first) == 1
    assert "Research hotels" in shown(first[0])
    # when: one worker finishes and the next starts, and the aggregate, the shape unchanged
    tree = copy.deepcopy(tree)
    finish(tree, "n2", finishedAt="2026-12-01T10:00:04.1Z")
    finish(tree, "n3", "RUNNING", processId="tp_8")
    finish(tree, "n4", "RUNNING")
    changed = [shown(line).strip() for line in follower.update("tp_4", tree)]
    # then: one line each, in tree order, nothing for the unchanged nodes, and none for the
    # worker that started (the tree's progress line tells it: vance/progress.py)
    assert changed == [
        "✓ tp_4 n2 Research trains — DONE 2.1s",
        "▶ tp_4 n4 Report — RUNNING",
    ]
    # and the same tree again prints nothing
    assert follower.update("tp_4", copy.deepcopy(tree)) == []


def test_the_follower_prints_the_whole_tree_when_a_plan_adds_nodes_and_when_it_finishes():
    follower = TaskTreeFollower()
    tree = marvin_tree()
    follower.update("tp_4", tree)
    # when: a node is added (a plan step grew the tree)
    tree = copy.deepcopy(tree)
    tree["nodes"].append({"id": "n5", "parentId": "n2", "kind": "WORKER", "title": "Night trains",
                          "status": "PENDING"})  # fmt: skip
    grown = follower.update("tp_4", tree)
    # then: the whole tree again, with the new node
    assert len(grown) == 1
    assert "Night trains" in shown(grown[0])
    # when: every node has finished
    tree = copy.deepcopy(tree)
    for node_id in ("n2", "n3", "n4"):
        finish(tree, node_id)
    finish(tree, "n5", "SKIPPED")
    last = follower.update("tp_4", tree)
    # then: a line per change in the order of the nodes, and the final tree once
    assert [shown(line).split(" — ")[0].strip() for line in last[:-1]] == [
        "✓ tp_4 n2 Research trains",
        "✓ tp_4 n3 Research hotels",
        "✓ tp_4 n4 Report",
        "– tp_4 n5 Night trains",
    ]
    assert shown(last[-1]).startswith("tp_4 task tree · 5/5 finished")
    assert follower.update("tp_4", copy.deepcopy(tree)) == []
    assert follower.last_process == "tp_4"


@pytest.fixture
def chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ChatClient, io.StringIO]:
    monkeypatch.setenv("VANCE_CONFIG_DIR", str(tmp_path / "config"))
    output = io.StringIO()
    client = ChatClient(
        Config("http://127.0.0.1:1", "t"),
        ChatOptions(),
        Fingerprint("m-1", str(tmp_path), str(tmp_path), "dev"),
        Console(file=output, width=120, color_system=None),
        LineRouter(),
    )
    client.ws = FakeSocket()  # type: ignore[assignment]
    client.connected.set()
    client.printer.chat_process_id = "tp_1"
    return client, output


async def test_task_tree_events_in_the_chat_show_the_tree_then_compact_lines(chat):
    client, output = chat
    tree = marvin_tree()
    # when: three events of the same tree, the last with one change
    client._dispatch(event(1, "task-tree", processId="tp_4", tree=tree))
    client._dispatch(event(2, "task-tree", processId="tp_4", tree=copy.deepcopy(tree)))
    changed = copy.deepcopy(tree)
    finish(changed, "n2", finishedAt="2026-12-01T10:00:04.1Z")
    client._dispatch(event(3, "task-tree", processId="tp_4", tree=changed))
    # then: the tree printed once, and the change as one line
    text = output.getvalue()
    assert text.count("tp_4 task tree") == 1
    assert text.count("Research hotels") == 1
    assert "✓ tp_4 n2 Research trains — DONE 2.1s" in text


async def test_slash_tree_asks_the_brain_for_the_last_changed_tree_and_prints_it(chat):
    client, output = chat
    socket: FakeSocket = client.ws  # type: ignore[assignment]
    client._dispatch(event(1, "task-tree", processId="tp_4", tree=marvin_tree()))
    # when
    running = asyncio.create_task(run_slash_command(client, "/tree"))
    await asyncio.sleep(0.01)
    [sent] = socket.sent
    now = marvin_tree()
    finish(now, "n2", finishedAt="2026-12-01T10:00:04.1Z")
    process = {"id": "tp_4", "taskTree": now}
    client._dispatch({"type": "process", "replyTo": sent["id"], "data": {"process": process}})
    await running
    # then: the request named the process, and its current tree is printed whole
    assert sent["type"] == "process-get"
    assert sent["data"] == {"processId": "tp_4"}
    assert "tp_4 task tree · 2/4 finished" in output.getvalue()


async def test_slash_tree_says_so_when_no_tree_was_seen_or_the_process_has_none(chat):
    client, output = chat
    await run_slash_command(client, "/tree")
    assert "no task tree seen in this chat yet; /tree tp_N" in output.getvalue()
    socket: FakeSocket = client.ws  # type: ignore[assignment]
    running = asyncio.create_task(run_slash_command(client, "/tree tp_1"))
    await asyncio.sleep(0.01)
    [sent] = socket.sent
    process = {"id": "tp_1", "taskTree": None}
    client._dispatch({"type": "process", "replyTo": sent["id"], "data": {"process": process}})
    await running
    assert "tp_1 has no task tree" in output.getvalue()


async def test_slash_tree_with_a_node_id_prints_that_nodes_structured_result_whole(chat):
    client, output = chat
    socket: FakeSocket = client.ws  # type: ignore[assignment]
    client._dispatch(event(1, "task-tree", processId="tp_4", tree=marvin_tree()))
    # when
    running = asyncio.create_task(run_slash_command(client, "/tree n2"))
    await asyncio.sleep(0.01)
    [sent] = socket.sent
    now = marvin_tree()
    structured = {
        "summary": "ICE at 9",
        "findings": ["fast"],
        "sources": ["db.de"],
        "confidence": 0.8,
    }
    finish(now, "n2", finishedAt="2026-12-01T10:00:04.1Z", result=structured)
    process = {"id": "tp_4", "taskTree": now}
    client._dispatch({"type": "process", "replyTo": sent["id"], "data": {"process": process}})
    await running
    # then: the last changed tree's process was asked, and the node is printed whole
    assert sent["data"] == {"processId": "tp_4"}
    text = output.getvalue()
    assert "tp_4 ✓ WORKER Research trains (n2)  DONE 2.1s" in text
    assert "goal: trains" in text
    assert '"findings": [' in text
    assert '"sources": [' in text
    assert '"confidence": 0.8' in text
