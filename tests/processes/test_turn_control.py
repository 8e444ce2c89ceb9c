"""Turn control (vancetope.errors.TurnControl) is no Exception: an engine's `except
Exception` cannot swallow a stop, a pause, a lost lease or a used-up budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from typing_extensions import override

from engines import registry
from engines.base import Contract, ThinkEngine
from engines.capabilities import LlmMessage, ProcessView
from engines.context import ThinkEngineContext
from engines.messages import PendingMessage
from processes.actions import create, lifecycle, steer
from processes.budgets import BudgetExceeded
from processes.lane.interrupts import TurnInterrupted
from processes.lane.lease import LeaseLost
from processes.models import PendingMessage as PendingRow
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from recipes_app.models import Recipe, RecipeScope
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until
from vancetope.errors import TurnControl
from vancetope.tools.errors import AwaitingExternal, ClientToolRequired


class Swallower(ThinkEngine):
    """An engine that catches every Exception around its LLM call, as careless code does."""

    name = "swallower"
    title = "Swallower"
    description = "catches every Exception of its LLM call"
    version = "1.0.0"
    contract: ClassVar[Contract] = Contract(goal="say something")

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        process.engine_state = {}

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        try:
            ctx.llm.complete([LlmMessage(role="user", content=message.prompt_text())])
        except Exception as exc:
            process.engine_state = {"swallowed": type(exc).__name__}
        process.engine_state = {**process.engine_state, "answered": True}


@pytest.fixture
def swallower(recipes: None, tmp_path: Path, settings) -> Iterator[str]:
    script = tmp_path / "slow.yaml"
    script.write_text(yaml.safe_dump([{"match": "slow", "reply": "a slow answer", "delay": 1.0}]))
    settings.VANCETOPE_LLM_SCRIPT = str(script)
    engine = Swallower()
    registry._registry[engine.name] = engine
    Recipe.objects.get_or_create(
        name=engine.name, scope=RecipeScope.BUNDLED, defaults={"engine": engine.name}
    )
    yield engine.name
    registry._registry.pop(engine.name, None)


@pytest.mark.parametrize(
    "signal", [TurnInterrupted, LeaseLost, BudgetExceeded, ClientToolRequired, AwaitingExternal]
)
def test_every_turn_control_is_out_of_reach_of_except_exception(signal):
    assert issubclass(signal, TurnControl)
    assert not issubclass(signal, Exception)


@pytest.mark.django_db(transaction=True)
def test_an_engines_except_exception_does_not_swallow_a_stop(alice, swallower):
    # given a process of an engine that catches every Exception, in a slow LLM call
    session = open_session(alice)
    process = create.create_process(session, goal="", engine=swallower)
    steer.steer_process(process.pk, "slow please")
    wait_until(lambda: ThinkProcess.objects.get(pk=process.pk).status == Status.RUNNING)
    # when the person stops it mid-turn
    stopped = lifecycle.stop_process(process.pk)
    # then the turn ended at its boundary: the engine never saw the interrupt, nothing of the
    # turn was committed, and the message it was answering is still unconsumed
    assert (stopped.status, stopped.close_reason) == (Status.CLOSED, CloseReason.STOPPED)
    row = ThinkProcess.objects.get(pk=process.pk)
    assert "swallowed" not in row.engine_state
    assert "answered" not in row.engine_state
    assert not PendingRow.objects.get(process_id=process.pk, seq__gt=0).consumed
