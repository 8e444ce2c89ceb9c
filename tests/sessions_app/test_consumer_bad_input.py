"""Bad input over the WebSocket is a 400 or 404 naming the field, never a 500, and the socket
stays open (run on PostgreSQL too: it refuses NUL characters that SQLite stores)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from processes.models import ThinkProcess
from recipes_app.models import Recipe, RecipeScope
from tests.support.ws import bearer, connect, open_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@database_sync_to_async
def add_recipes(tenancy) -> None:
    Recipe.objects.create(
        name="team-chat", engine="ford", scope=RecipeScope.TENANT, tenant=tenancy.tenant
    )
    Recipe.objects.create(
        name="project-chat", engine="ford", scope=RecipeScope.PROJECT, project=tenancy.project
    )


@database_sync_to_async
def process_count(session_id: str) -> int:
    return ThinkProcess.objects.filter(session_id=int(session_id.removeprefix("sess_"))).count()


async def test_recipes_list_shows_tenant_and_project_recipes(alice):
    # given a tenant recipe and a project recipe visible to alice's session
    await add_recipes(alice)
    client = await connect(bearer(alice))
    await open_session(client, alice)
    # when she lists recipes
    reply = await client.request("recipes-list")
    # then both are listed with their tenant and project
    assert reply["type"] == "recipes", reply
    listed = {recipe["name"]: recipe for recipe in reply["data"]["recipes"]}
    assert listed["team-chat"]["tenant"] == "alice"
    assert listed["project-chat"]["projectId"] == alice.project_id


@pytest.mark.parametrize("process_id", ["tp_²", "tp_①", "tp_" + "9" * 5000, "tp_" + "9" * 20])
async def test_a_process_id_that_is_no_ascii_64_bit_number_is_a_404(alice, process_id):
    # given an open session
    client = await connect(bearer(alice))
    await open_session(client, alice)
    # when a process is asked for by an id that is no signed 64-bit ASCII number
    reply = await client.request("process-get", {"processId": process_id})
    # then it is not found, and the socket still answers
    assert reply["data"]["code"] == 404, reply
    assert reply["data"]["message"].startswith("process ")
    assert (await client.request("process-list"))["type"] == "process-list"


async def test_a_process_id_in_arabic_indic_digits_is_not_the_process_with_that_number(alice):
    # given alice's chat process tp_N
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    digits = created["chatProcessId"].removeprefix("tp_")
    # when she asks for it with the same number in Arabic-Indic digits
    reply = await client.request(
        "process-get", {"processId": "tp_" + digits.translate(ARABIC_INDIC)}
    )
    # then that is no id: 404
    assert reply["data"]["code"] == 404, reply


async def test_resuming_a_session_id_beyond_64_bits_is_a_404(alice):
    client = await connect(bearer(alice))
    # when a session id too large for any row is resumed
    reply = await client.request(
        "session-resume",
        {"sessionId": "sess_99999999999999999999", "fingerprint": {"machineId": "m"}},
    )
    # then it is not found
    assert reply["data"]["code"] == 404, reply
    assert "sess_99999999999999999999" in reply["data"]["message"]


async def test_a_frame_nested_100000_deep_is_a_400_and_the_socket_stays_open(alice):
    client = await connect(bearer(alice))
    # when a frame is nested 100,000 arrays deep
    await client.ws.send_to(text_data="[" * 100_000 + "]" * 100_000)
    reply = await client.next_reply()
    # then it is refused as too deep, and the next frame is answered
    assert reply["data"]["code"] == 400, reply
    assert "nested" in reply["data"]["message"]
    assert (await client.request("thinkengines-list"))["type"] == "thinkengines"


@pytest.mark.parametrize(
    ("kind", "data", "field"),
    [
        ("chat", {"text": "hel\x00lo"}, "data.text"),
        ("process-create", {"goal": "a\x00b", "thinkEngine": "ford"}, "data.goal"),
        ("process-create", {"goal": "g", "params": {"k": "a\x00"}}, "data.params.k"),
    ],
)
async def test_a_nul_character_in_free_text_is_a_400_naming_the_field(alice, kind, data, field):
    # given an open session
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    # when a frame carries a NUL character in free text
    reply = await client.request(kind, data)
    # then it is refused naming the field, nothing is stored, and the socket stays open
    assert reply["data"]["code"] == 400, reply
    assert reply["data"]["field"] == field
    assert "NUL" in reply["data"]["message"]
    assert await process_count(created["session"]["id"]) == 1
    assert (await client.request("process-list"))["type"] == "process-list"


async def test_a_nul_character_in_a_steer_is_a_400_naming_the_field(alice):
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    reply = await client.request(
        "process-steer", {"processId": created["chatProcessId"], "message": "x\x00"}
    )
    assert reply["data"]["code"] == 400, reply
    assert reply["data"]["field"] == "data.message"


async def test_a_nul_character_in_the_machine_id_is_a_400_naming_the_field(alice):
    client = await connect(bearer(alice))
    # when a session is created with a NUL in its fingerprint's machineId
    reply = await client.request(
        "session-create",
        {
            "clientType": "cli",
            "projectId": alice.project_id,
            "fingerprint": {"machineId": "m\x00", "workingDir": "/w"},
        },
    )
    # then it is refused naming the field, and a clean one is created afterwards
    assert reply["data"]["code"] == 400, reply
    assert reply["data"]["field"] == "data.fingerprint.machineId"
    assert (await open_session(client, alice))["session"]["status"] == "OPEN"


@pytest.mark.parametrize(
    ("frame", "field"),
    [
        ('{"type": "chat", "id": "c", "data": {"text": "a\\ud800"}}', "data.text"),
        ('{"type": "process-create", "id": "c", "data": {"goal": "\\udfff"}}', "data.goal"),
        ('{"type": "process-create", "data": {"params": {"n": 1e999}}}', "data.params.n"),
        ('{"type": "process-list", "id": "a\\ud800"}', "id"),
        ('{"type": "process-list", "id": "a\\u0000"}', "id"),
    ],
)
async def test_a_lone_surrogate_or_an_infinite_number_is_a_400_naming_the_field(
    alice, frame, field
):
    # given an open session
    client = await connect(bearer(alice))
    created = await open_session(client, alice)
    # when a frame carries a lone surrogate (or a number JSON cannot hold) in one field
    await client.ws.send_to(text_data=frame)
    reply = await client.next_reply()
    # then it is refused naming the field, nothing is created, and the socket stays open
    assert reply["type"] == "error", reply
    assert reply["data"]["code"] == 400, reply
    assert reply["data"]["field"] == field
    assert await process_count(created["session"]["id"]) == 1
    assert (await client.request("process-list"))["type"] == "process-list"


async def test_a_number_of_5000_digits_is_a_400_and_the_socket_stays_open(alice):
    client = await connect(bearer(alice))
    await open_session(client, alice)
    # when a frame holds an integer of 5,000 digits
    frame = '{"type": "process-unsend", "id": "u", "data": {"processId": "tp_1", "seq": %s}}'
    await client.ws.send_to(text_data=frame.replace("%s", "9" * 5000))
    reply = await client.next_reply()
    # then it is refused as a number too long to read, naming the field (its id read: the
    # reply is to it), and the socket answers on
    assert reply["data"]["code"] == 400, reply
    assert reply["data"]["message"].startswith("data.seq: a number of 5000 digits")
    assert reply["data"]["field"] == "data.seq"
    assert reply["replyTo"] == "u"
    assert (await client.request("process-list"))["type"] == "process-list"
