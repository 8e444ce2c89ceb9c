"""The admin as the operators' inspector: finding system sessions and service processes, the
process page's task tree and session events, recipe tool names checked against the catalogue."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from processes.actions.create import create_process
from processes.actions.lifecycle import pause_process
from processes.actions.steer import steer_process
from processes.models import ThinkProcess
from recipes_app.models import Recipe, RecipeCategory, RecipeScope
from recipes_app.tool_names import known_tool_names
from sessions_app.events import emit_event
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until
from vancetope.tools.models import McpServer

pytestmark = pytest.mark.django_db(transaction=True)


def idle_with_nothing_pending(process_id: int) -> bool:
    process = ThinkProcess.objects.get(pk=process_id)
    return process.status == "IDLE" and process.waiting == 0


def process_page(operator: Client, process_id: int) -> str:
    response = operator.get(reverse("admin:processes_thinkprocess_change", args=[process_id]))
    assert response.status_code == 200
    return response.content.decode()


# --- finding system sessions and service processes -----------------------------------------------


def test_service_processes_of_system_sessions_are_found_by_system_category_engine_and_status(
    operator, alice
):
    # given: a service process in a cron session beside a person's chat
    Recipe.objects.create(
        name="sweeper",
        engine="ford",
        category=RecipeCategory.SERVICE,
        scope=RecipeScope.PROJECT,
        project=alice.project,
        tenant=alice.tenant,
    )
    open_session(alice)
    cron = open_session(alice, "cron", system=True)
    service = create_process(cron, goal="sweep", recipe="sweeper")
    # its goal turn has run (the filter below asks for IDLE): ford rests IDLE once with the goal
    # still pending, before the lane takes it
    assert wait_until(lambda: idle_with_nothing_pending(service.pk))
    query = {
        "session__system__exact": "1",
        "category": "service",
        "think_engine__exact": "ford",
        "status__exact": "IDLE",
    }
    # when
    response = operator.get(reverse("admin:processes_thinkprocess_changelist"), query)
    # then
    assert [p.pk for p in response.context["cl"].result_list] == [service.pk]
    sessions = operator.get(
        reverse("admin:brain_sessions_session_changelist"),
        {"system__exact": "1", "client_type__exact": "cron", "status__exact": "OPEN"},
    )
    assert [s.pk for s in sessions.context["cl"].result_list] == [cron.pk]


# --- the process page ----------------------------------------------------------------------------


def test_process_page_shows_the_task_tree_as_pretty_json(operator, alice):
    session = open_session(alice)
    tree = {"id": "root", "title": "plan <the> trip", "children": [{"id": "a", "done": True}]}
    ThinkProcess.objects.filter(pk=session.chat_process_id).update(
        engine_state={"taskTree": tree, "strategy": "x"}
    )
    # when
    page = process_page(operator, session.chat_process_id)
    # then: indented, escaped, read-only
    assert '<pre class="task-tree"' in page
    assert "  &quot;title&quot;: &quot;plan &lt;the&gt; trip&quot;,\n" in page
    assert 'name="task_tree"' not in page


def marvin_like_tree(worker: ThinkProcess) -> dict[str, Any]:
    return {
        "rootId": "n1",
        "nodes": [
            {"id": "n1", "parentId": None, "kind": "PLAN", "title": "Plan <b>trip</b>",
             "status": "DONE", "startedAt": "2026-12-01T10:00:00Z",
             "finishedAt": "2026-12-01T10:00:02.5Z"},
            {"id": "n2", "parentId": "n1", "kind": "WORKER", "title": "Trains",
             "status": "RUNNING", "processId": worker.public_id},
            {"id": "n3", "parentId": "n1", "kind": "WORKER", "title": "Hotels",
             "status": "FAILED", "error": "budget <maxTokens> exceeded"},
        ],
    }  # fmt: skip


def test_process_page_draws_the_task_tree_with_status_colours_and_worker_links(operator, alice):
    # given: a process whose tree's WORKER node runs in a child process
    session = open_session(alice)
    parent = create_process(session, goal="plan a trip", engine="ford", start=False)
    worker = create_process(session, goal="trains", engine="ford", parent=parent, start=False)
    ThinkProcess.objects.filter(pk=parent.pk).update(
        engine_state={"taskTree": marvin_like_tree(worker)}
    )
    # when
    page = process_page(operator, parent.pk)
    # then: the nodes nested under their parent, each with its status and colour
    assert '<ul class="task-tree-nodes"><li data-node="n1" data-status="DONE">' in page
    assert '<li data-node="n2" data-status="RUNNING">' in page
    assert page.index('data-node="n1"') < page.index(
        '<ul class="task-tree-nodes"><li data-node="n2"'
    )
    assert 'color: #1f7a3d; font-weight: bold">● DONE' in page
    assert 'color: #b3261e; font-weight: bold">● FAILED' in page
    assert "· 2.5 s" in page
    # and the worker linked to its own admin page, the error shown, every title escaped
    worker_url = reverse("admin:processes_thinkprocess_change", args=[worker.pk])
    assert f' · worker <a href="{worker_url}">{worker.public_id}</a>' in page
    assert "budget &lt;maxTokens&gt; exceeded" in page
    assert "Plan &lt;b&gt;trip&lt;/b&gt;" in page
    assert "<b>trip</b>" not in page
    # and the raw JSON is still there, folded away
    assert '<details><summary>raw JSON</summary><pre class="task-tree"' in page
    # and the sub-processes are listed, linked
    assert f'<a href="{worker_url}">{worker.public_id}</a> INIT' in page


def test_process_page_shows_parallel_workers_a_replan_and_a_structured_result(operator, alice):
    # given: a tree with two workers running at once, one failed, its re-plan, and a
    # structured result
    session = open_session(alice)
    parent = create_process(session, goal="plan a trip", engine="ford", start=False)
    worker = create_process(session, goal="trains", engine="ford", parent=parent, start=False)
    tree = marvin_like_tree(worker)
    tree["nodes"] += [
        {"id": "n4", "parentId": "n1", "kind": "WORKER", "title": "Ferries", "status": "RUNNING"},
        {"id": "n5", "parentId": "n1", "kind": "PLAN", "title": "Re-plan 1", "status": "DONE",
         "replanOf": ["n3"], "result": {"added": ["n6"]}},
        {"id": "n6", "parentId": "n5", "kind": "WORKER", "title": "Hostels", "status": "DONE",
         "attempts": 2, "dependsOn": ["n2"],
         "result": {"summary": "two <cheap> ones", "findings": ["near"], "sources": [],
                    "confidence": 0.7}},
    ]  # fmt: skip
    ThinkProcess.objects.filter(pk=parent.pk).update(engine_state={"taskTree": tree})
    # when
    page = process_page(operator, parent.pk)
    # then: the heading counts them, the re-plan and the retry are marked
    assert (
        '<p class="task-tree-heading">4 of 6 nodes finished · 2 workers running at once · '
        "1 failed · 1 re-plan</p>"
    ) in page
    assert '<span style="color: #7a5400">re-plan of n3</span>' in page
    assert " · attempt 2 · after n2" in page
    # and the structured result shows by its summary, and whole on a click
    assert " · result: two &lt;cheap&gt; ones" in page
    assert '<details class="node-result"><summary>structured result</summary>' in page
    assert "&quot;findings&quot;: [\n    &quot;near&quot;\n  ]" in page


def test_process_page_says_when_there_is_no_task_tree(operator, alice):
    session = open_session(alice)
    page = process_page(operator, session.chat_process_id)
    assert "the engine keeps no task tree, or has not planned yet" in page


def test_process_page_shows_the_pending_queue_and_recent_events_of_its_session(operator, alice):
    session = open_session(alice)
    chat_id = session.chat_process_id
    pause_process(chat_id)
    steer_process(chat_id, "look at the queue")
    emit_event(session.pk, "notification", {"text": "operator, see me", "level": "info"})
    # when
    page = process_page(operator, chat_id)
    # then
    assert "look at the queue" in page
    assert "Recent session events (newest 20)" in page
    assert "operator, see me" in page
    # PostgreSQL's jsonb keeps keys in its own order: look for each pair.
    for pair in ({"processId": f"tp_{chat_id}"}, {"status": "PAUSED"}):
        assert json.dumps(pair)[1:-1].replace('"', "&quot;") in page


def test_process_page_shows_only_the_newest_twenty_events(operator, alice):
    session = open_session(alice)
    for number in range(30):
        emit_event(session.pk, "notification", {"text": f"note-{number:02d}"})
    page = process_page(operator, session.chat_process_id)
    assert "note-29" in page
    assert "note-10" in page
    assert "note-09" not in page


# --- recipes: tool names -------------------------------------------------------------------------


def recipe_form(tenancy: Tenancy, **changes: Any) -> dict[str, Any]:
    return {
        "name": "toolsmith",
        "engine": "ford",
        "title": "Frankie",
        "description": "",
        "params": "{}",
        "prompt_prefix": "",
        "allowed_tools_add": "[]",
        "allowed_tools_remove": "[]",
        "category": "user",
        "roles": "[]",
        "scope": "project",
        "tenant": str(tenancy.tenant.pk),
        "project": str(tenancy.project.pk),
        **changes,
    }


def test_known_tools_are_the_server_tools_and_the_vance_client_tools():
    assert {"tool_probe", "run_shell", "read_file", "git_diff"} <= known_tool_names()


def test_recipe_form_refuses_tool_names_nobody_offers(operator, alice):
    # when
    response = operator.post(
        reverse("admin:recipes_recipe_add"),
        recipe_form(
            alice,
            allowed_tools_add=json.dumps(["run_shell", "rm_rf_everything", "shell_*"]),
            allowed_tools_remove=json.dumps(["git_pushh"]),
        ),
    )
    # then
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["allowed_tools_add"][0].startswith(
        "unknown tools: rm_rf_everything, shell_*; known: "
    )
    assert "run_shell" in errors["allowed_tools_add"][0]
    assert errors["allowed_tools_remove"][0].startswith("unknown tools: git_pushh; ")
    assert not Recipe.objects.filter(name="toolsmith").exists()


def test_recipe_form_refuses_a_tool_list_that_is_not_a_list_of_names(operator, alice):
    response = operator.post(
        reverse("admin:recipes_recipe_add"),
        recipe_form(alice, allowed_tools_add=json.dumps({"run_shell": True})),
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["allowed_tools_add"] == [
        'a JSON list of tool names or patterns, e.g. ["git_*"]'
    ]


def test_recipe_form_accepts_known_names_and_patterns_that_match_a_known_tool(operator, alice):
    response = operator.post(
        reverse("admin:recipes_recipe_add"),
        recipe_form(
            alice,
            allowed_tools_add=json.dumps(["git_*", "read_file", "tool_probe"]),
            allowed_tools_remove=json.dumps(["run_shell"]),
        ),
    )
    assert response.status_code == 302
    recipe = Recipe.objects.get(name="toolsmith")
    assert recipe.allowed_tools_add == ["git_*", "read_file", "tool_probe"]


def test_recipe_form_accepts_tools_of_an_mcp_server_of_the_project_by_its_prefix(operator, alice):
    McpServer.objects.create(
        project=alice.project, name="tickets", command="tickets-mcp", tool_prefix="jira_"
    )
    ok = operator.post(
        reverse("admin:recipes_recipe_add"),
        recipe_form(alice, allowed_tools_add=json.dumps(["jira_search", "jira_*"])),
    )
    assert ok.status_code == 302
    refused = operator.post(
        reverse("admin:recipes_recipe_add"),
        recipe_form(alice, name="other", allowed_tools_add=json.dumps(["github_search"])),
    )
    assert refused.status_code == 200
    errors = refused.context["adminform"].form.errors
    assert errors["allowed_tools_add"][0].startswith("unknown tools: github_search; ")
