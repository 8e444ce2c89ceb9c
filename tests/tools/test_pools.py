"""Catalogue, effective pools and the one invocation path (server tools, refusals, schema)."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processes.actions.create import create_process
from processes.capabilities.tools import toolbox_for
from processes.models import ConversationMessage
from processes.states import CloseReason, Status
from tests.support.tenancy import open_session
from tests.support.tools import project_recipe
from tests.support.waiting import closed_process
from vancetope.tools.catalogue import effective_pool, matches
from vancetope.tools.checker import Classification, classify
from vancetope.tools.manifest import ToolManifest
from vancetope.tools.models import CallStatus, Location, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

UPPER_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


def manifest(name: str, location: Location = Location.SERVER, roles: tuple[str, ...] = ()):
    return ToolManifest(
        name, "", {"type": "object"}, location, requires_engine_roles=frozenset(roles)
    )


def tool_messages(process_id: int) -> list[str]:
    rows = ConversationMessage.objects.filter(process_id=process_id, role="tool")
    return list(rows.order_by("index").values_list("content", flat=True))


def test_pool_is_default_plus_added_minus_removed_and_patterns_work():
    catalogue = {name: manifest(name) for name in ["a", "git_status", "git_log", "secret"]}
    pool = effective_pool(
        catalogue,
        engine_default=["a"],
        add=["git_*", "secret"],
        remove=["git_log", "secret"],
        roles=[],
        client_bound=True,
    )
    assert sorted(pool) == ["a", "git_status"]


# Names and shell-style patterns over a few characters, so that they often match.
NAME = st.text(alphabet="ab_.*?[]!-\n", max_size=6)


@pytest.mark.django_db(transaction=False)
@given(name=NAME, patterns=st.lists(NAME, max_size=3))
def test_a_pool_pattern_matches_a_name_as_fnmatchcase_does(name, patterns):
    # when a name is held against a pool's patterns (one compiled expression for them all)
    found = matches(name, patterns)
    # then it matches exactly when one of them matches it, shell-style and case-sensitive
    assert found == any(fnmatchcase(name, pattern) for pattern in patterns)


def test_pool_drops_tools_whose_roles_the_recipe_lacks_and_client_tools_without_a_client():
    catalogue = {
        "writer": manifest("writer", roles=("tool-health-writer",)),
        "shell_run": manifest("shell_run", Location.CLIENT),
    }
    everything = {"engine_default": ["*"], "add": [], "remove": []}
    assert sorted(effective_pool(catalogue, roles=[], client_bound=False, **everything)) == []
    assert sorted(
        effective_pool(catalogue, roles=["tool-health-writer"], client_bound=True, **everything)
    ) == ["shell_run", "writer"]


def test_checker_classifies_by_rule_and_leaves_the_rest_ambiguous():
    assert classify("HTTP 401 Unauthorized") == Classification.AUTH
    assert classify("repository not found") == Classification.NOT_FOUND
    assert classify("request timed out after 30s") == Classification.TIMEOUT
    assert classify("429 Too Many Requests") == Classification.RATE_LIMIT
    assert classify("the client disconnected before answering") == (
        Classification.DISCONNECTED_CLIENT
    )
    assert classify("MCP server 'x' crashed or closed the connection") == (
        Classification.SERVER_CRASH
    )
    assert classify("the widget exploded") == Classification.AMBIGUOUS


def test_a_tool_removed_by_the_recipe_is_neither_shown_to_the_llm_nor_callable(
    alice, llm, temporary_server_tools
):
    # given two server tools, the recipe adds both and removes one
    ran: list[str] = []
    temporary_server_tools(
        "upper",
        lambda box, args: ran.append("upper") or args["text"].upper(),
        parameters=UPPER_SCHEMA,
    )
    temporary_server_tools("secret_tool", lambda box, args: ran.append("secret") or "leaked")
    project_recipe(
        alice,
        "frankie-upper",
        allowed_tools_add=["upper", "secret_tool"],
        allowed_tools_remove=["secret_tool"],
    )
    provider = llm(
        [
            {
                "match": "shout",
                "times": 1,
                "tool_calls": [
                    {"name": "secret_tool", "arguments": {}},
                    {"name": "upper", "arguments": {"text": "hi"}},
                ],
            },
        ]
    )
    session = open_session(alice)
    # when
    process = closed_process(create_process(session, goal="shout hi", recipe="frankie-upper").pk)
    # then the LLM was offered only the pool
    assert provider.offered[0] == ["upper"]
    # the removed tool never ran, was refused with a clear error, and the refusal is logged
    assert ran == ["upper"]
    refused = ToolCall.objects.get(tool="secret_tool")
    assert refused.status == CallStatus.REFUSED
    assert refused.classification == Classification.NOT_ALLOWED
    assert tool_messages(process.pk) == [
        "error: tool 'secret_tool' is not available to this process",
        "HI",
    ]
    # and the process reached its goal with the allowed tool's answer
    assert (process.status, process.close_reason) == (Status.CLOSED, CloseReason.DONE)
    assert process.engine_state["result"] == "result: HI"
    assert ToolCall.objects.get(tool="upper").status == CallStatus.OK


def test_arguments_are_checked_against_the_schema_before_the_tool_runs(
    alice, temporary_server_tools
):
    ran: list[dict] = []
    temporary_server_tools(
        "upper", lambda box, args: ran.append(args) or "X", parameters=UPPER_SCHEMA
    )
    project_recipe(alice, "frankie-upper", allowed_tools_add=["upper"])
    session = open_session(alice)
    process = create_process(session, recipe="frankie-upper", start=False)
    tools = toolbox_for(process, [], lambda: None)
    # when
    result = tools.invoke("upper", {"text": 3})
    # then
    assert not result.ok
    assert result.error == "invalid arguments for upper: text: 3 is not of type 'string'"
    assert ran == []
    assert ToolCall.objects.get().status == CallStatus.REFUSED
    assert tools.invoke("upper", {"text": "ok"}).content == "X"


def test_role_gated_tools_exist_only_for_recipes_with_the_role(alice):
    session = open_session(alice)
    project_recipe(alice, "frankie-all", allowed_tools_add=["*"])
    worker = create_process(session, recipe="frankie-all", start=False)
    assert "tool_health_write" not in toolbox_for(worker, [], lambda: None).pool()
    refused = toolbox_for(worker, [], lambda: None).invoke(
        "tool_health_write", {"tool": "x", "status": "UP", "classification": "ok"}
    )
    assert not refused.ok
    agrajag = create_process(session, recipe="agrajag", start=False)
    assert {"tool_probe", "tool_health_write"} <= set(
        toolbox_for(agrajag, ["tool_probe", "tool_health_write"], lambda: None).pool()
    )
