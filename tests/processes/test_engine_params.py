"""An engine's params: checked and completed before the process exists (`prepare_params`), and
stored with every call like engine_state, so an engine may keep progress there (vogon's
strategyState)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from typing_extensions import override

from engines import registry
from engines.base import Contract, ParamsRefused, ThinkEngine
from engines.capabilities import Definitions, ProcessView
from engines.context import ThinkEngineContext
from engines.messages import PendingMessage
from processes.actions import create, steer
from processes.models import ThinkProcess
from processes.states import Status
from recipes_app.models import Recipe, RecipeScope
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from vancetope.errors import BadRequest


class Tally(ThinkEngine):
    name = "tally"
    title = "Tally"
    description = "Test engine: counts its starts and keeps the steers in its params."
    version = "1.0.0"
    contract: ClassVar[Contract] = Contract(goal="count")

    @override
    def prepare_params(self, params: dict[str, Any], definitions: Definitions) -> dict[str, Any]:
        if params.get("step", 1) < 1:
            raise ParamsRefused("params.step", "must be at least 1")
        return {**params, "prepared": True}

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        process.engine_params = {**process.engine_params, "seen": []}

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        if message.text == "meanwhile, an operator edits the params":
            # The admin saves the process's params while this turn runs; it leaves them be.
            ThinkProcess.objects.filter(pk=ctx.process.public_id.removeprefix("tp_")).update(
                engine_params={"edited": True}
            )
            return
        seen = [*process.engine_params["seen"], message.text]
        process.engine_params = {**process.engine_params, "seen": seen}


@pytest.fixture
def tally(recipes: None) -> Iterator[str]:
    engine = Tally()
    registry._registry[engine.name] = engine
    Recipe.objects.get_or_create(
        name="tally", scope=RecipeScope.BUNDLED, defaults={"engine": "tally", "params": {"step": 2}}
    )
    yield engine.name
    registry._registry.pop(engine.name, None)


@pytest.mark.django_db(transaction=True)
def test_params_the_engine_prepares_are_stored_and_what_it_refuses_names_the_field(alice, tally):
    session = open_session(alice)
    process = create.create_process(session, goal="count", engine="tally", params={"extra": 1})
    row = ThinkProcess.objects.get(pk=process.pk)
    assert row.engine_params == {"step": 2, "extra": 1, "prepared": True, "seen": []}
    with pytest.raises(BadRequest) as refused:
        create.create_process(session, goal="count", engine="tally", params={"step": 0})
    assert (refused.value.field, refused.value.message) == (
        "params.step",
        "params.step: must be at least 1",
    )
    assert ThinkProcess.objects.filter(think_engine="tally").count() == 1


@pytest.mark.django_db(transaction=True)
def test_params_an_engine_changes_in_a_turn_are_committed_with_it(alice, tally):
    process = create.create_process(open_session(alice), goal="count", engine="tally")
    steer.steer_process(process.pk, "one")
    steer.steer_process(process.pk, "two")

    def counted() -> list[str] | None:
        row = ThinkProcess.objects.get(pk=process.pk)
        done = row.status == Status.IDLE and row.waiting == 0
        return row.engine_params["seen"] if done else None

    assert wait_until(counted) == ["one", "two"]


@pytest.mark.django_db(transaction=True)
def test_a_turn_that_leaves_the_params_alone_keeps_an_operators_edit_made_meanwhile(alice, tally):
    process = create.create_process(open_session(alice), goal="count", engine="tally")
    steer.steer_process(process.pk, "meanwhile, an operator edits the params")

    def params() -> dict[str, Any] | None:
        row = ThinkProcess.objects.get(pk=process.pk)
        return row.engine_params if row.status == Status.IDLE and row.waiting == 0 else None

    assert wait_until(params) == {"edited": True}
