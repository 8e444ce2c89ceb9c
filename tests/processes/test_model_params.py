"""A param that picks a model (zaphod's synthesizerModel and fallbackModel) names only a model
the settings configure (llm.model, llm.fallbackModel, llm.models, which admins set): any other
is a 400 naming the param at create and nothing is created, on every face, for a plain member
as for anyone (issue 42: five processes asked the operator's endpoint for
`o1-pro-EXPENSIVE-N` with the operator's key)."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from mcp_face import calls as mcp_calls
from processes.actions import create
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from recipes_app.models import Recipe, RecipeScope
from sessions_app.services import FingerprintData
from tests.config.helpers import set_value
from tests.support.roles import MEMBER, caller
from tests.support.tenancy import open_session
from tests.support.waiting import at_rest
from tests.support.ws import bearer, connect
from tests.support.ws import open_session as open_socket_session
from vancetope.config.models import Scope
from vancetope.errors import BadRequest

pytestmark = pytest.mark.django_db(transaction=True)

EXPENSIVE = "o1-pro-EXPENSIVE-1"
QUESTION = "Should we ship on Friday?"
SYNTHESIS = {
    "consensus": "Ship.",
    "differences": [],
    "conclusion": "Ship on Friday morning.",
    "minorityReport": "",
}


def councils() -> int:
    return ThinkProcess.objects.filter(think_engine="zaphod").count()


@pytest.mark.parametrize("name", ["synthesizerModel", "fallbackModel"])
def test_a_model_param_that_is_not_configured_is_a_400_naming_it_and_nothing_is_created(
    alice, name
):
    # given alice's session, with no model configured but the environment's
    session = open_session(alice)
    # when a council is created naming a model nobody configured
    with pytest.raises(BadRequest) as refused:
        create.create_process(session, goal=QUESTION, recipe="zaphod", params={name: EXPENSIVE})
    # then it is a 400 naming the param and the model, and nothing is created
    assert (refused.value.code, refused.value.field) == (400, f"params.{name}")
    assert refused.value.message.startswith(f"params.{name}: '{EXPENSIVE}' is not a configured")
    assert councils() == 0


@pytest.mark.parametrize("value", [42, ["gpt-4o"], " "])
def test_a_model_param_that_is_no_model_name_is_a_400_naming_it(alice, value):
    session = open_session(alice)
    with pytest.raises(BadRequest) as refused:
        create.create_process(
            session, goal=QUESTION, recipe="zaphod", params={"synthesizerModel": value}
        )
    assert refused.value.field == "params.synthesizerModel"
    assert councils() == 0


def test_a_model_param_may_name_each_configured_model_or_be_empty(alice, settings):
    # given a model from the environment, a fallback at the tenant and a list at the project
    settings.VANCETOPE_LLM_MODEL = "env-model"
    set_value("llm.fallbackModel", Scope.TENANT, alice.tenant, "tenant-fallback")
    set_value("llm.models", Scope.PROJECT, alice.project, ["big-model", "other-model"])
    session = open_session(alice)
    # when councils are created naming each (not started: the names are what is checked)
    for model in ("env-model", "tenant-fallback", "big-model", "other-model", ""):
        params = {"synthesizerModel": model, "fallbackModel": model}
        created = create.create_process(
            session, goal=QUESTION, recipe="zaphod", params=params, start=False
        )
        # then each is created with its params
        assert created.engine_params["synthesizerModel"] == model
    # and a project whose list does not name it refuses it, naming what is configured
    set_value("llm.models", Scope.PROJECT, alice.project, ["other-model"])
    with pytest.raises(BadRequest) as refused:
        create.create_process(
            session, goal=QUESTION, recipe="zaphod", params={"fallbackModel": "big-model"}
        )
    assert refused.value.field == "params.fallbackModel"
    assert "configured: env-model, tenant-fallback, other-model" in refused.value.message


def test_a_recipes_model_param_is_checked_as_the_callers_is(alice):
    # given a project recipe (an admin's) whose params name a model that is not configured
    Recipe.objects.create(
        name="pricey-council",
        engine="zaphod",
        params={"synthesizerModel": EXPENSIVE, "personas": [{"name": "a", "persona": "b"}]},
        scope=RecipeScope.PROJECT,
        project=alice.project,
        tenant=alice.tenant,
    )
    session = open_session(alice)
    # when a process of it is created (as an A2A agent of that recipe would be)
    with pytest.raises(BadRequest) as refused:
        create.create_process(session, goal=QUESTION, recipe="pricey-council")
    # then it is refused too: the recipe's params are the process's
    assert refused.value.field == "params.synthesizerModel"
    assert councils() == 0


def test_a_plain_member_over_rest_gets_a_400_naming_the_param(alice, bob):
    # given a plain member of alice's project with a session of their own
    member = caller(MEMBER, alice, bob)
    session = create_session(
        member.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1"),
    )
    body: dict[str, Any] = {
        "session": session.public_id,
        "recipe": "zaphod",
        "goal": QUESTION,
        "params": {"synthesizerModel": EXPENSIVE},
    }
    # when they create a council naming a model of their choice
    answer = member.api.post("/api/processes", body, format="json")
    # then it is a 400 naming the param, and nothing is created
    assert answer.status_code == 400, answer.json()
    assert answer.json()["field"] == "params.synthesizerModel"
    assert EXPENSIVE in answer.json()["message"]
    assert councils() == 0
    # while a model the project's admin configured is taken
    set_value("llm.models", Scope.PROJECT, alice.project, [EXPENSIVE])
    body["start"] = False
    assert member.api.post("/api/processes", body, format="json").status_code == 201


def test_an_mcp_process_create_naming_a_model_that_is_not_configured_is_refused(alice):
    # when a tool client creates a council naming a model (mcp_face's process_create tool)
    with pytest.raises(BadRequest) as refused:
        mcp_calls.process_create(
            alice.user,
            goal=QUESTION,
            recipe="zaphod",
            params={"fallbackModel": EXPENSIVE},
            session=None,
            project=alice.project_id,
        )
    # then it is refused naming the param, and nothing is created
    assert refused.value.field == "params.fallbackModel"
    assert councils() == 0


@pytest.mark.asyncio
async def test_a_process_create_frame_naming_a_model_that_is_not_configured_is_a_400(alice):
    # given a socket with a session
    client = await connect(bearer(alice))
    await open_socket_session(client, alice)
    # when a process-create frame names a model nobody configured
    data = {"recipe": "zaphod", "goal": QUESTION, "params": {"synthesizerModel": EXPENSIVE}}
    reply = await client.request("process-create", data)
    # then it is refused naming data.params.synthesizerModel, and nothing is created
    assert reply["data"]["code"] == 400, reply
    assert reply["data"]["field"] == "data.params.synthesizerModel"
    assert await database_sync_to_async(councils)() == 0


def test_a_council_asks_the_provider_for_the_configured_model_its_param_names(alice, script):
    # given a project that configures big-model, and a script whose synthesis answers for it
    # only (the configured model gives no call)
    set_value("llm.models", Scope.PROJECT, alice.project, ["big-model"])
    call = {"name": "council_synthesis", "arguments": SYNTHESIS}
    script(
        [
            {"engine": "ford", "step": "head", "reply": "Yes."},
            {"step": "synthesize", "model": "big-model", "tool_calls": [call]},
            {"step": "synthesize", "reply": "I would rather not."},
        ]
    )
    # when a council names it as its synthesizer
    params = {"synthesizerModel": "big-model"}
    session = open_session(alice)
    council = create.create_process(session, goal=QUESTION, recipe="zaphod", params=params)
    done = at_rest(council.pk, Status.CLOSED)
    # then its synthesis came from that model
    assert (done.close_reason, done.last_error) == (CloseReason.DONE, "")
    assert done.engine_state["synthesis"] == {"model": "big-model", "errors": []}
