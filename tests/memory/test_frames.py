"""The memory-search frame: hybrid search from the bound session upwards."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from protocol import outbound as out
from tests.support.memory import embedded
from tests.support.tenancy import Tenancy
from tests.support.ws import bearer, connect, open_session
from vancetope.memory.items import Source, write_item
from vancetope.memory.models import Scope, SourceKind
from vancetope.memory.scopes import Target

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@database_sync_to_async
def remember(tenancy: Tenancy, content: str, session_pk: int | None = None) -> str:
    scope = Scope.SESSION if session_pk else Scope.PROJECT
    target = Target(scope, tenancy.tenant, project=tenancy.project, session_ref=session_pk)
    item = write_item(target, content, Source(SourceKind.USER, "test"))
    embedded()
    return item.public_id


async def test_memory_search_answers_the_sessions_and_its_projects_items_not_another_tenants(
    alice, bob
):
    # given
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    session_pk = int(created["session"]["id"].removeprefix("sess_"))
    project_item = await remember(alice, "The release train leaves every second Thursday.")
    session_item = await remember(alice, "This session is about the Thursday release.", session_pk)
    await remember(bob, "Bob's release happens on Thursday too.")
    # when
    reply = await client.request("memory-search", {"query": "Thursday release", "k": 5})
    # then
    out.server_frame.validate_python(reply)
    assert reply["type"] == "memory-results"
    found = {result["itemId"] for result in reply["data"]["results"]}
    assert found == {project_item, session_item}
    await client.ws.disconnect()


async def test_memory_search_with_a_bad_k_is_a_400_naming_it(alice):
    client = await connect(bearer(alice))
    await open_session(client, alice)
    reply = await client.request("memory-search", {"query": "x", "k": 0})
    assert (reply["type"], reply["data"]["code"]) == ("error", 400)
    assert reply["data"]["field"] == "data.k"
    await client.ws.disconnect()
