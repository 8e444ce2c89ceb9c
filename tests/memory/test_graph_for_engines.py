"""The knowledge graph through `ctx.memory` and the memory tools: a node's neighbours and the
edges of a type, as far as the process may read; arthur consults it in its chat, marvin in its
aggregate step when its recipe adds the graph tools."""

from __future__ import annotations

import json
from typing import Any

import pytest

from processes.actions import steer
from processes.actions.create import create_process
from processes.actions.sessions import create_session
from processes.models import ConversationMessage
from processes.states import CloseReason
from sessions_app.services import FingerprintData
from tests.support.marvin import worker
from tests.support.tenancy import Tenancy, open_session
from tests.support.tools import project_recipe
from tests.support.waiting import closed_process, wait_until
from vancetope.errors import BadRequest, NotFound
from vancetope.memory import graph
from vancetope.memory.capability import MemoryAccess
from vancetope.memory.models import EdgeAuthor, EdgeType
from vancetope.memory.scopes import person_reach
from vancetope.tools.models import ToolCall

pytestmark = pytest.mark.django_db(transaction=True)


def write(tenancy: Tenancy, content: str) -> str:
    answer = tenancy.api().post(
        "/api/memory",
        {"scope": "project", "scopeId": tenancy.project_id, "content": content},
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    return str(answer.json()["id"])


def link(tenancy: Tenancy, type: EdgeType, from_id: str, to_id: str) -> str:
    reach = person_reach(tenancy.user)
    edge = graph.add_edge(
        type,
        graph.get_visible_node(reach, from_id),
        graph.get_visible_node(reach, to_id),
        0.8,
        f"{from_id} {type} {to_id}",
        graph.Author(EdgeAuthor.LINKER, "run_1"),
    )
    return edge.public_id


@pytest.fixture
def facts(alice: Tenancy) -> dict[str, str]:
    """Three of alice's items: the deploy day, a support of it and a contradiction."""
    deploy = write(alice, "We deploy on Fridays.")
    support = write(alice, "The release train leaves every Friday.")
    against = write(alice, "Nothing ships on Fridays since the outage.")
    return {
        "deploy": deploy,
        "support": support,
        "against": against,
        "supports": link(alice, EdgeType.SUPPORTS, support, deploy),
        "contradicts": link(alice, EdgeType.CONTRADICTS, against, deploy),
    }


def memory_of(tenancy: Tenancy) -> MemoryAccess:
    session = open_session(tenancy)
    return MemoryAccess.of(tenancy.project.pk, session.pk, tenancy.user.pk, "tp_1")


def test_a_processs_memory_reads_a_nodes_neighbours_and_the_edges_of_a_type(alice, facts):
    memory = memory_of(alice)
    # when the process asks for the deploy day's neighbours
    edges = memory.neighbours(facts["deploy"])
    # then both edges come, each with its direction and the other end's text
    assert {(e["id"], e["type"], e["direction"], e["other"]["id"]) for e in edges} == {
        (facts["supports"], "supports", "in", facts["support"]),
        (facts["contradicts"], "contradicts", "in", facts["against"]),
    }
    assert "release train" in next(e for e in edges if e["type"] == "supports")["other"]["snippet"]
    # and only the asked types, when it names some
    [only] = memory.neighbours(facts["deploy"], ["contradicts"])
    assert only["other"]["id"] == facts["against"]
    # and the edges of one type, anywhere it can read
    [edge] = memory.edges("supports")
    assert (edge["fromId"], edge["toId"]) == (facts["support"], facts["deploy"])
    assert memory.edges("mentions") == []


def test_a_bad_type_is_a_400_naming_it_and_an_unseen_node_a_404(alice, bob, facts):
    # given bob's process memory, which does not see alice's items
    with pytest.raises(BadRequest, match="types must be some of") as refused:
        memory_of(alice).neighbours(facts["deploy"], ["likes"])
    assert refused.value.error == "types"
    with pytest.raises(BadRequest, match="types must be some of"):
        memory_of(alice).edges("likes")
    with pytest.raises(NotFound, match="nodeId"):
        memory_of(bob).neighbours(facts["deploy"])
    assert memory_of(bob).edges("supports") == []


def tool_results(process_id: int, tool: str) -> list[Any]:
    calls = ToolCall.objects.filter(process_id=process_id, tool=tool).order_by("pk")
    return [call.result for call in calls]


def test_arthur_reads_a_nodes_neighbours_with_the_tool_and_answers_from_them(alice, script, facts):
    # given arthur scripted to look at the deploy day's neighbours, then answer
    call = {"name": "memory_neighbours", "arguments": {"nodeId": facts["deploy"]}}
    script(
        [
            {"engine": "arthur", "match": "^do we deploy", "times": 1, "tool_calls": [call]},
            {"engine": "arthur", "match": "^do we deploy", "reply": "Disputed: see the outage."},
        ]
    )
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1"),
        recipe="arthur",
    )
    # when the person asks
    steer.send_chat(session.pk, "do we deploy on Fridays?")
    # then the tool ran for arthur and its answer, the two neighbours, is in the conversation
    wait_until(lambda: tool_results(session.chat_process_id, "memory_neighbours"))
    wait_until(
        lambda: ConversationMessage.objects.filter(
            process_id=session.chat_process_id, role="assistant", content__startswith="Disputed"
        ).exists()
    )
    [answer] = ConversationMessage.objects.filter(process_id=session.chat_process_id, role="tool")
    read = json.loads(answer.content)
    assert read["nodeId"] == facts["deploy"]
    assert {edge["other"]["id"] for edge in read["edges"]} == {facts["support"], facts["against"]}


def test_marvin_consults_the_edges_of_a_type_in_its_aggregate_when_its_recipe_adds_them(
    alice, script, facts
):
    # given a marvin recipe with the graph tools, and an aggregate that asks for contradictions
    project_recipe(
        alice,
        "deep-think-graph",
        engine="marvin",
        allowed_tools_add=["memory_neighbours", "memory_edges"],
    )
    contradictions = {"name": "memory_edges", "arguments": {"type": "contradicts"}}
    script(
        [
            *worker("check the deploy day", "Fridays."),
            {"engine": "marvin", "step": "aggregate", "times": 1, "tool_calls": [contradictions]},
            {"engine": "marvin", "step": "aggregate", "reply": "Fridays, but one note disagrees."},
        ]
    )
    tasks = [
        {"kind": "WORKER", "title": "Day", "goal": "check the deploy day"},
        {"kind": "AGGREGATE", "title": "Report"},
    ]
    process = create_process(
        open_session(alice), goal="when do we deploy?", recipe="deep-think-graph",
        params={"tasks": tasks},
    )  # fmt: skip
    # when the tree runs to its end
    done = closed_process(process.pk)
    # then the aggregate read the contradiction through the tool, and reported
    assert done.close_reason == CloseReason.DONE
    [result] = tool_results(process.pk, "memory_edges")
    assert [edge["id"] for edge in result["edges"]] == [facts["contradicts"]]
    assert done.engine_state["taskTree"]["nodes"][-1]["result"] == (
        "Fridays, but one note disagrees."
    )
