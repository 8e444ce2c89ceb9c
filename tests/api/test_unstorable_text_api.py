"""Text no database can store (a NUL character: PostgreSQL refuses it in text and JSON; a lone
surrogate: not Unicode, no database encodes it) and numbers JSON cannot hold are refused where
a request is read, a 400 naming the field or parameter, on every REST input; nothing changes.
Run on PostgreSQL too, where a NUL that got through was a 500."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from inbox.models import InboxItem
from inbox.services import post_item
from processes.models import ThinkProcess
from tests.support.tenancy import Tenancy, open_session
from tests.triggers.helpers import REVIEW, create_workflow
from tests.triggers.webhook_helpers import create_webhook
from triggers.models import CronJob, RunLog, Webhook, Workflow
from vancetope.config.models import Setting

pytestmark = pytest.mark.django_db(transaction=True)

NUL = "a\x00b"
# Written out as JSON escapes: a client's JSON encoder may refuse to write a lone surrogate.
SURROGATE_JSON = '"a\\ud800b"'
UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "ci:${event.build}"}}


def send(tenancy: Tenancy, method: str, path: str, body: dict[str, Any], bad: str) -> Any:
    """`body` as JSON, with every string "BAD" in it replaced by `bad` (a JSON literal)."""
    text = json.dumps(body).replace('"BAD"', bad)
    return tenancy.api().generic(method, path, text, content_type="application/json")


def counts() -> tuple[int, ...]:
    return (
        Workflow.objects.count(),
        Webhook.objects.count(),
        CronJob.objects.count(),
        Setting.objects.count(),
        ThinkProcess.objects.count(),
        RunLog.objects.count(),
        InboxItem.objects.filter(status="OPEN").count(),
    )


def workflow_body() -> dict[str, Any]:
    return {**REVIEW, "name": "BAD"}


def webhook_body() -> dict[str, Any]:
    return {"name": "BAD", "mode": "secret", "action": UNBLOCK}


def cron_body(tenancy: Tenancy) -> dict[str, Any]:
    chat = open_session(tenancy).chat_process_id
    return {
        "name": "BAD",
        "schedule": "0 3 * * *",
        "action": {"type": "process_continue", "processId": f"tp_{chat}"},
    }


# Each: (method, path, body with "BAD" where the bad text goes, the field named).
Case = Callable[[Tenancy], tuple[str, str, dict[str, Any], str]]
CASES: dict[str, Case] = {
    "workflow create": lambda t: ("POST", "/api/workflows", workflow_body(), "name"),
    "workflow replace": lambda t: (
        "PUT",
        f"/api/workflows/{create_workflow(t)}",
        {**REVIEW, "tasks": [{"kind": "WORKER", "title": "BAD", "goal": "g"}]},
        "tasks.0.title",
    ),
    "workflow run": lambda t: (
        "POST",
        f"/api/workflows/{create_workflow(t)}/run",
        {"input": {"topic": "BAD"}},
        "input.topic",
    ),
    "webhook create": lambda t: ("POST", "/api/webhooks", webhook_body(), "name"),
    "webhook change": lambda t: (
        "PATCH",
        f"/api/webhooks/{create_webhook(t, {**webhook_body(), 'name': 'ci'})['id']}",
        {"filter": {"ref": "BAD"}},
        "filter.ref",
    ),
    "cron create": lambda t: ("POST", "/api/cron-jobs", cron_body(t), "name"),
    "setting": lambda t: (
        "PUT",
        "/api/settings/arthur.systemPrompt",
        {"scope": "project", "scopeId": t.project_id, "value": "BAD"},
        "value",
    ),
    "process create": lambda t: (
        "POST",
        "/api/processes",
        {"session": open_session(t).public_id, "goal": "g", "params": {"k": ["BAD"]}},
        "params.k.0",
    ),
    "inbox answer": lambda t: (
        "POST",
        f"/api/inbox/{question(t)}/answer",
        {"answer": {"text": "BAD"}},
        "answer.text",
    ),
    "memory item": lambda t: (
        "POST",
        "/api/memory",
        {"scope": "project", "scopeId": t.project_id, "content": "BAD"},
        "content",
    ),
}


def question(tenancy: Tenancy) -> str:
    session = open_session(tenancy)
    assert session.chat_process_id is not None
    process = ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)
    return post_item(process, "QUESTION", "Which year?", "For the report.").public_id


@pytest.mark.parametrize("bad", ['"a\\u0000b"', SURROGATE_JSON], ids=["nul", "surrogate"])
@pytest.mark.parametrize("case", CASES)
def test_unstorable_text_in_a_body_is_a_400_naming_the_field_and_changes_nothing(alice, case, bad):
    # given what the request needs (a workflow, a webhook, a session, an inbox item)
    method, path, body, field = CASES[case](alice)
    before = counts()
    # when its body carries a NUL character or a lone surrogate in one string
    response = send(alice, method, path, body, bad)
    # then it is a 400 naming that field, and nothing was created or changed
    assert response.status_code == 400, response.content[:300]
    answer = response.json()
    assert field in answer["fields"], answer
    assert answer["message"].startswith(f"{field}: must not contain"), answer
    assert counts() == before


def test_a_nul_in_a_key_of_a_body_is_a_400_naming_where_it_is(alice):
    session = open_session(alice)
    body = {"session": session.public_id, "params": {"BAD": 1}}
    response = send(alice, "POST", "/api/processes", body, '"a\\u0000"')
    assert response.status_code == 400, response.content[:300]
    assert "params" in response.json()["fields"]
    assert "key" in response.json()["message"]


def test_a_number_json_cannot_hold_is_a_400_naming_the_field(alice):
    # given a session; when a process is created with params holding 1e999 (infinity)
    session = open_session(alice)
    body = {"session": session.public_id, "params": {"n": "BAD"}}
    response = send(alice, "POST", "/api/processes", body, "1e999")
    # then it is refused naming it
    assert response.status_code == 400, response.content[:300]
    assert "params.n" in response.json()["fields"]
    assert ThinkProcess.objects.filter(session=session).count() == 1


@pytest.mark.parametrize(
    "path",
    [
        "/api/memory/lookup?key=a%00&project={project}",
        "/api/workflows?project=proj_%00",
        "/api/processes?status=%00",
        "/api/runs?trigger=a%00",
    ],
)
def test_a_nul_in_a_query_parameter_is_a_400_naming_it(alice, path):
    response = alice.api().get(path.format(project=alice.project_id))
    assert response.status_code == 400, response.content[:300]
    name = path.split("%00")[0].rsplit("?", 1)[-1].rsplit("&", 1)[-1].split("=")[0]
    assert answer_names(response.json(), name)


def answer_names(answer: dict[str, Any], name: str) -> bool:
    return name in answer.get("fields", {}) and answer["message"].startswith(f"{name}: ")


@pytest.mark.parametrize("path", ["/api/recipes/a%00", "/api/workflows/wf_1%00", "/api/x%00"])
def test_a_nul_in_the_path_is_a_404(alice, path):
    response = alice.api().get(path)
    assert response.status_code == 404, response.content[:300]
    assert response.json()["error"] == "not-found"
