"""`category: service` is a listing filter: a process a person starts from a service recipe is
not in their ordinary process list; it is listed under the service filter, over REST, the
WebSocket and the web UI alike (the CLI's commands ride on these: tests/cli)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from processes.actions.create import create_process
from tests.support.tenancy import Tenancy, open_session
from tests.support.ws import bearer, connect
from tests.support.ws import open_session as open_socket_session

pytestmark = pytest.mark.django_db(transaction=True)


def service_and_ordinary(tenancy: Tenancy) -> tuple[str, str, str]:
    """A session of the person's with one process of the service recipe `agrajag` and one of
    an ordinary recipe: (session, service process, ordinary process) ids."""
    session = open_session(tenancy)
    service = create_process(session, goal="check a tool", recipe="agrajag", start=False)
    ordinary = create_process(session, goal="think", recipe="ford", start=False)
    return session.public_id, service.public_id, ordinary.public_id


def listed(tenancy: Tenancy, query: str = "") -> list[str]:
    response = tenancy.api().get(f"/api/processes{query}")
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def test_rest_leaves_service_processes_out_of_the_ordinary_list(alice):
    session, service, ordinary = service_and_ordinary(alice)
    # the ordinary list (and category=user) leaves the service process out
    assert ordinary in listed(alice)
    assert service not in listed(alice)
    assert service not in listed(alice, f"?session={session}")
    assert listed(alice, "?category=user") == listed(alice)
    # the service filter lists it, and only such processes
    assert listed(alice, "?category=service") == [service]
    # it is still hers to read
    assert alice.api().get(f"/api/processes/{service}").status_code == 200


def test_rest_refuses_an_unknown_category_naming_the_field(alice):
    response = alice.api().get("/api/processes?category=system")
    assert response.status_code == 400
    body = response.json()
    assert body["message"] == "category must be one of user, service, not 'system'"
    assert "category" in body.get("fields", {})


@pytest.mark.asyncio
async def test_the_websocket_process_list_has_the_same_filter(alice):
    client = await connect(bearer(alice))
    created = await open_socket_session(client, alice)
    session_pk = int(created["session"]["id"].removeprefix("sess_"))

    def spawn() -> tuple[str, str]:
        from sessions_app.models import Session

        session = Session.objects.get(pk=session_pk)
        service = create_process(session, goal="check", recipe="agrajag", start=False)
        ordinary = create_process(session, goal="think", recipe="ford", start=False)
        return service.public_id, ordinary.public_id

    service, ordinary = await database_sync_to_async(spawn)()
    ordinary_list = await client.request("process-list", {})
    ids = [row["id"] for row in ordinary_list["data"]["processes"]]
    assert ordinary in ids
    assert service not in ids
    service_list = await client.request("process-list", {"category": "service"})
    assert [row["id"] for row in service_list["data"]["processes"]] == [service]
    refused = await client.request("process-list", {"category": "system"})
    assert refused["type"] == "error"
    assert refused["data"]["code"] == 400
    assert refused["data"]["field"] == "data.category"
    await client.ws.disconnect()


def test_the_dashboard_lists_service_processes_under_their_filter(alice):
    _, service, ordinary = service_and_ordinary(alice)
    browser = Client()
    browser.force_login(alice.user)
    page = browser.get("/")
    assert page.status_code == 200
    shown = [process.public_id for process in page.context["processes"]]
    assert ordinary in shown
    assert service not in shown
    assert b'<option value="service"' in page.content
    filtered = browser.get("/?category=service")
    assert [process.public_id for process in filtered.context["processes"]] == [service]
    assert b'data-category="service"' in filtered.content
    wrong = browser.get("/?category=system")
    assert wrong.status_code == 400
    assert b"category must be one of user, service" in wrong.content
