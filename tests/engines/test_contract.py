"""Every registered engine goes through the whole lifecycle with the scripted LLM.

Each engine is driven as its `contract` (engines/base.py) says a new process of it stays open,
and the test checks what the contract promises: every call leaves the process where the table
says, only `start` and `steer` decide about the process, `engine_state` stays JSON, and the
engine instance keeps no per-process attributes.
"""

from __future__ import annotations

import ast
import copy
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engines.base import Contract, Summary, ThinkEngine
from engines.context import CapabilityNotAvailable, NotAvailable, Outcome
from engines.registry import ENGINE_PACKAGE, all_engines, get_engine, is_compatible, register_engine
from processes.actions.create import create_process
from processes.actions.lifecycle import (
    pause_process,
    reset_process,
    resume_process,
    start_process,
    stop_process,
    suspend_process,
)
from processes.actions.sessions import create_session
from processes.actions.steer import steer_process
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from recipes_app.models import Recipe, RecipeScope
from sessions_app.services import FingerprintData
from tests.support.recording_llm import RecordingProvider
from tests.support.tenancy import Tenancy
from tests.support.waiting import wait_until
from vancetope.llm.assembly import budget_for
from vancetope.llm.tokens import Tokens

ENGINES = [engine.name for engine in all_engines()]
OPEN = {Status.IDLE, Status.BLOCKED}
# A window small enough that a long message, a tool loop's results and a deep think's digests
# must be fitted (docs/engines.md, "The context budget").
SMALL_WINDOW = 1536
ENGINE_CALLS = ("start", "steer", "pause", "resume", "suspend", "stop")


def test_registry_holds_the_built_in_engines():
    assert "ford" in ENGINES
    for engine in all_engines():
        assert isinstance(engine, ThinkEngine)
        assert engine.describe()["name"] == engine.name
        assert engine.version.count(".") == 2
        assert isinstance(engine.contract, Contract)
    assert get_engine("no-such-engine") is None
    assert is_compatible("ford", get_engine("ford").version)
    assert not is_compatible("ford", "0.0.1")


def test_an_engine_without_a_contract_is_not_registered():
    class Silent(ThinkEngine):
        name = "silent"
        title = description = "Silent"
        version = "1.0.0"

        def start(self, process, ctx):
            pass

        def steer(self, process, ctx, message):
            pass

    with pytest.raises(ValueError, match="engine 'silent' declares no contract"):
        register_engine(Silent)
    assert get_engine("silent") is None


@dataclass(frozen=True)
class EngineCall:
    """One call the lane made on the engine, as it left things."""

    name: str
    outcome: Outcome | None
    # engine_state survives a JSON round trip unchanged (no sets, tuples, objects).
    state_is_json: bool


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[EngineCall]]:
    """Record every lifecycle call on every engine class, by process (the lane calls engines
    from its worker threads)."""
    seen: dict[str, list[EngineCall]] = {}
    for engine in all_engines():
        cls = type(engine)
        for name in ENGINE_CALLS:
            monkeypatch.setattr(cls, name, _recording(getattr(cls, name), name, seen))
    return seen


def _recording(original: Any, name: str, seen: dict[str, list[EngineCall]]) -> Any:
    def call(self: ThinkEngine, process: Any, ctx: Any, *args: Any) -> None:
        original(self, process, ctx, *args)
        state = process.engine_state
        try:
            state_is_json = json.loads(json.dumps(state)) == state
        except (TypeError, ValueError):
            state_is_json = False
        seen.setdefault(process.public_id, []).append(EngineCall(name, ctx.outcome, state_is_json))

    return call


def new_process(tenancy: Tenancy, engine: ThinkEngine) -> ThinkProcess:
    """A process of the engine, created (and started) as its contract says."""
    # the engine-name convention finds the recipe
    if not Recipe.objects.filter(name=engine.name, scope=RecipeScope.BUNDLED).exists():
        Recipe.objects.create(name=engine.name, engine=engine.name, scope=RecipeScope.BUNDLED)
    contract = engine.contract
    session = create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m"),
        recipe=engine.name if contract.chat_process else None,
    )
    if contract.chat_process:
        assert session.chat_process is not None
        return session.chat_process
    return create_process(
        session, goal=contract.goal, engine=engine.name, params=dict(contract.params)
    )


def turn(process_id: int, text: str) -> ThinkProcess:
    """Steer, and wait until the lane drained the message (or the process closed)."""
    steer_process(process_id, text)

    def drained() -> ThinkProcess | None:
        row = ThinkProcess.objects.get(pk=process_id)
        done = row.status != Status.RUNNING and (row.waiting == 0 or row.status == Status.CLOSED)
        return row if done else None

    found = wait_until(drained)
    assert found is not None
    return found


def deferred_turn(process_id: int, contract: Contract) -> list[str]:
    """The turn a start queued for itself, if the contract says it does: waited for, so the
    next call does not race it. Returns the engine call it adds."""
    if not contract.start_defers_turn:
        return []

    def drained() -> ThinkProcess | None:
        row = ThinkProcess.objects.get(pk=process_id)
        return row if row.status != Status.RUNNING and row.waiting == 0 else None

    found = wait_until(drained)
    assert found is not None
    assert found.status in OPEN, shown(found)
    return ["steer"]


def shown(process: ThinkProcess) -> tuple[str, str, str]:
    return (process.status, process.close_reason, process.last_error)


def check_report(engine: ThinkEngine, process: ThinkProcess, event: str) -> None:
    report = engine.summarize_for_parent(process, event)
    assert isinstance(report, Summary)
    assert report.human_summary.strip()
    assert json.loads(json.dumps(report.payload)) == report.payload


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("engine_name", ENGINES)
def test_engine_survives_start_steer_pause_resume_suspend_stop_reset_and_a_new_start(
    alice, engine_calls, engine_name
):
    engine = get_engine(engine_name)
    assert engine is not None
    contract = engine.contract
    attributes = copy.deepcopy(vars(engine))
    # given a process created as the engine's contract says: open after start
    process = new_process(alice, engine)
    assert process.status in OPEN, shown(process)
    expected = ["start", *deferred_turn(process.pk, contract)]
    # a turn leaves it open (a one-shot engine's turn ends it: that one runs last)
    if not contract.turn_finishes:
        drained = turn(process.pk, "go on")
        assert drained.status in OPEN, shown(drained)
        expected.append("steer")
    # pause, resume, suspend, resume, stop: each reaches the engine and lands where the table says
    assert pause_process(process.pk).status == Status.PAUSED
    assert resume_process(process.pk).status == Status.IDLE
    assert suspend_process(process.pk).status == Status.SUSPENDED
    assert resume_process(process.pk).status == Status.IDLE
    stopped = stop_process(process.pk)
    assert (stopped.status, stopped.close_reason) == (Status.CLOSED, CloseReason.STOPPED)
    check_report(engine, stopped, "STOPPED")
    expected += ["pause", "resume", "suspend", "resume", "stop"]
    # reset clears the engine's state and conversation; a new start opens it again
    reset = reset_process(process.pk)
    assert (reset.status, reset.engine_state, reset.conversation_length) == (Status.INIT, {}, 0)
    assert start_process(process.pk).status in OPEN
    expected += ["start", *deferred_turn(process.pk, contract)]
    # the new run takes a turn
    drained = turn(process.pk, "once more")
    if contract.turn_finishes:
        assert (drained.status, drained.close_reason) == (Status.CLOSED, CloseReason.DONE), shown(
            drained
        )
        check_report(engine, drained, "DONE")
    else:
        assert drained.status in OPEN, shown(drained)
    expected.append("steer")
    # then: the lane called the engine once per call, and only start and steer decided
    calls = engine_calls[process.public_id]
    assert [call.name for call in calls] == expected
    for call in calls:
        assert call.state_is_json, f"{call.name} left engine_state that is not plain JSON"
        if call.name not in {"start", "steer"}:
            assert call.outcome is None, f"{call.name} decided {call.outcome}"
    # and the engine instance kept nothing of the process
    assert vars(engine) == attributes


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("engine_name", ENGINES)
def test_every_call_of_the_engine_fits_a_small_window_with_a_message_larger_than_it(
    alice, engine_name, monkeypatch: pytest.MonkeyPatch, settings: Any
):
    # given a process of the engine on a model whose server says its window is 1,536 tokens
    provider = RecordingProvider(window=SMALL_WINDOW)
    monkeypatch.setattr("processes.lane.context_builder.get_provider", lambda config=None: provider)
    engine = get_engine(engine_name)
    assert engine is not None
    process = new_process(alice, engine)
    deferred_turn(process.pk, engine.contract)
    # when it is sent a message of three thousand words
    turn(process.pk, "word " * 3000)
    # then every call the engine made (and its children) fitted the window: its prompt within
    # the budget left by the answer, the tools' schemas and the margin
    tokens = Tokens()
    # (an engine whose turn only spawns, as vogon's, calls the model in its worker's lane)
    wait_until(lambda: provider.calls)
    calls = list(zip(list(provider.calls), list(provider.tools), strict=False))
    for (messages, info), tools in calls:
        budget = budget_for(SMALL_WINDOW, RecordingProvider.max_tokens, tools, tokens)
        assert budget.prompt > 0, (info, budget)
        assert tokens.messages(messages) <= budget.prompt, (
            info,
            [(m.role, len(m.content), m.content[:80]) for m in messages],
        )
        assert info is not None
        assert info.max_tokens == budget.completion


def test_a_chat_process_contract_has_no_goal_or_params():
    with pytest.raises(ValueError, match="chat process"):
        Contract(goal="x", chat_process=True)


def test_built_in_engines_import_only_engines_and_the_standard_library():
    package = Path(__file__).resolve().parents[2].joinpath(*ENGINE_PACKAGE.split("."))
    allowed = {"engines", "typing_extensions", *sys.stdlib_module_names}
    imported = set()
    for module in package.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                imported |= {(module.name, alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add((module.name, node.module))
    assert imported, f"no imports found in {package}"
    assert {(name, what) for name, what in imported if what.split(".")[0] not in allowed} == set()


def test_parts_not_built_yet_raise_a_clear_error():
    tools = NotAvailable("tools", "the tool layer is not built yet")
    with pytest.raises(CapabilityNotAvailable, match=r"ctx\.tools\.invoke is not available"):
        tools.invoke("get_time", {})
