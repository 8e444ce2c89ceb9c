"""The OpenAPI document against the real views: schemathesis sends each operation valid and
invalid requests (with alice's token) and checks every answer against the document: no server
error, a status code the operation documents, a body of the documented shape.

Not checked: that every invalid request is refused (tests/api/test_bad_input_api.py checks the
cases found by hand, a malformed `limit` or `offset` among them).
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from inbox.services import post_item
from processes.models import ThinkProcess
from sessions_app.models import Session
from tests.support.tenancy import Tenancy, open_session

UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "ci:${event.build}"}}

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

# Loaded through the WSGI handler, as a client reads it; generating it touches no database.
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def caller(alice: Tenancy) -> Tenancy:
    """alice with a session (and its chat process) to list."""
    open_session(alice)
    return alice


def auth(tenancy: Tenancy) -> dict[str, str]:
    return {"Authorization": f"Bearer {tenancy.token}"}


@schema.parametrize()
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_as_the_schema_says(case: Any, caller: Tenancy) -> None:
    case.call_and_validate(headers=auth(caller), checks=CHECKS)


def test_operations_on_real_rows_answer_as_the_schema_says(caller: Tenancy) -> None:
    """Generated ids are never real ones: here each detail and command runs on alice's rows,
    in an order the statuses allow, and each answer is checked as above."""
    session = Session.objects.get(owner=caller.user)
    chat = f"tp_{session.chat_process_id}"
    assert session.chat_process_id is not None
    origin = ThinkProcess.objects.select_related("session").get(pk=session.chat_process_id)
    approval = post_item(origin, "APPROVAL", "Go ahead?", "").public_id
    notice = post_item(origin, "OUTPUT_TEXT", "Done", "").public_id
    recipe = {
        "name": "alice-notes",
        "engine": "ford",
        "scope": "project",
        "projectId": caller.project_id,
    }
    answer = {"answer": {"decision": "approve"}}
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("/api/inbox/{item_id}", "GET", {"path_parameters": {"item_id": approval}}),
        (
            "/api/inbox/{item_id}/answer",
            "POST",
            {"path_parameters": {"item_id": approval}, "body": answer},
        ),
        # 409: answered already
        (
            "/api/inbox/{item_id}/answer",
            "POST",
            {"path_parameters": {"item_id": approval}, "body": answer},
        ),
        ("/api/inbox/{item_id}/dismiss", "POST", {"path_parameters": {"item_id": notice}}),
        ("/api/inbox/{item_id}/dismiss", "POST", {"path_parameters": {"item_id": notice}}),
        (
            "/api/sessions/{session_id}",
            "GET",
            {"path_parameters": {"session_id": session.public_id}},
        ),
        ("/api/processes/{process_id}", "GET", {"query": {"messages": 2}}),
        ("/api/processes/{process_id}/pause", "POST", {}),
        ("/api/processes/{process_id}/steer", "POST", {"body": {"message": "later"}}),
        ("/api/processes/{process_id}/resume", "POST", {}),
        ("/api/processes/{process_id}/stop", "POST", {}),
        ("/api/processes/{process_id}/reset", "POST", {}),
        ("/api/processes/{process_id}/start", "POST", {}),
        ("/api/processes/{process_id}/start", "POST", {}),  # 409: no longer INIT
        ("/api/recipes", "POST", {"body": recipe}),
        ("/api/recipes", "POST", {"body": recipe}),  # 409: it exists
        ("/api/recipes/{name}", "GET", {"path_parameters": {"name": "alice-notes"}}),
        (
            "/api/recipes/{name}",
            "PUT",
            {"path_parameters": {"name": "alice-notes"}, "body": {**recipe, "title": "Notes"}},
        ),
        (
            "/api/recipes/{name}",
            "DELETE",
            {
                "path_parameters": {"name": "alice-notes"},
                "query": {"scope": "project", "projectId": caller.project_id},
            },
        ),
    ]
    statuses = []
    for path, method, parts in calls:
        parts.setdefault("path_parameters", {"process_id": chat})
        case = schema[path][method].Case(media_type="application/json", **parts)
        response = case.call_and_validate(headers=auth(caller), checks=CHECKS)
        statuses.append(response.status_code)
    assert statuses == [200, 200, 409, 200, 409] + [
        200,
        200,
        200,
        200,
        200,
        200,
        200,
        200,
        409,
        201,
        409,
        200,
        200,
        204,
    ]


def test_fields_answers_leave_out_are_not_required_by_the_schema(client) -> None:
    # given the OpenAPI document
    components = client.get("/api/schema/?format=json").json()["components"]["schemas"]
    # then what most answers leave out is no required field of the object
    assert "firings" not in components["CronJobObject"]["required"]
    assert "secret" not in components["WebhookObject"]["required"]
    assert "id" in components["WebhookObject"]["required"]


@pytest.mark.parametrize("kind", ["webhooks", "cron-jobs"])
def test_a_patch_without_a_body_is_a_400_naming_it(caller: Tenancy, kind: str) -> None:
    # given a webhook and a cron job of alice's
    chat = Session.objects.get(owner=caller.user).chat_process_id
    bodies = {
        "webhooks": {"name": "ci", "mode": "secret", "action": UNBLOCK},
        "cron-jobs": {
            "name": "nightly",
            "schedule": "0 3 * * *",
            "action": {"type": "process_continue", "processId": f"tp_{chat}"},
        },
    }
    api = caller.api()
    created = api.post(f"/api/{kind}", bodies[kind], format="json")
    assert created.status_code == 201, created.content[:300]
    # when one is patched with no body at all
    response = api.patch(f"/api/{kind}/{created.json()['id']}")
    # then it is a 400 naming the body
    assert response.status_code == 400, response.content[:300]
    assert "body" in response.json()["fields"]


def test_the_schema_allows_only_the_page_parameters_the_server_takes(client) -> None:
    # given the OpenAPI document; when the list of processes is read from it
    document = client.get("/api/schema/?format=json").json()
    parameters = {
        p["name"]: p["schema"] for p in document["paths"]["/api/processes"]["get"]["parameters"]
    }
    # then limit and offset carry the server's ranges: limit=0 is no valid request
    assert parameters["limit"]["minimum"] == 1
    assert parameters["offset"]["minimum"] == 0
    assert parameters["limit"]["maximum"] == parameters["offset"]["maximum"] == 2**63 - 1
