"""Every registered engine goes through the whole lifecycle with the scripted LLM."""

from __future__ import annotations

import pytest

from engines.base import Summary, ThinkEngine
from engines.context import CapabilityNotAvailable, NotAvailable
from engines.registry import all_engines, get_engine, is_compatible
from processes.actions.create import create_process
from processes.actions.lifecycle import (
    pause_process,
    reset_process,
    resume_process,
    start_process,
    stop_process,
    suspend_process,
)
from processes.actions.steer import steer_process
from processes.models import ThinkProcess
from processes.states import CloseReason, Status
from recipes_app.models import Recipe, RecipeScope
from sessions_app.services import FingerprintData, create_session
from tests.conftest import wait_until

ENGINES = [engine.name for engine in all_engines()]


def test_registry_holds_the_built_in_engines():
    assert "ford" in ENGINES
    for engine in all_engines():
        assert isinstance(engine, ThinkEngine)
        assert engine.describe()["name"] == engine.name
        assert engine.version.count(".") == 2
    assert get_engine("no-such-engine") is None
    assert is_compatible("ford", get_engine("ford").version)
    assert not is_compatible("ford", "0.0.1")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("engine_name", ENGINES)
def test_engine_survives_start_steer_pause_resume_suspend_reset_stop(alice, engine_name):
    # given a recipe for the engine (the engine-name convention) in alice's project
    if not Recipe.objects.filter(name=engine_name, scope=RecipeScope.BUNDLED).exists():
        Recipe.objects.create(name=engine_name, engine=engine_name, scope=RecipeScope.BUNDLED)
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m"),
    )
    process = create_process(session, goal="say something", engine=engine_name)
    assert process.status in {Status.IDLE, Status.BLOCKED, Status.CLOSED}
    if process.status == Status.CLOSED:
        assert process.close_reason == CloseReason.DONE
        return
    # steer, and wait until the lane drained it
    steer_process(process.pk, "go on")
    wait_until(
        lambda: not ThinkProcess.objects.get(pk=process.pk).pending.filter(consumed=False).exists()
    )
    wait_until(lambda: ThinkProcess.objects.get(pk=process.pk).status != Status.RUNNING)
    assert pause_process(process.pk).status == Status.PAUSED
    assert resume_process(process.pk).status == Status.IDLE
    assert suspend_process(process.pk).status == Status.SUSPENDED
    assert reset_process(process.pk).status == Status.INIT
    assert start_process(process.pk).status in {Status.IDLE, Status.BLOCKED}
    stopped = stop_process(process.pk)
    assert (stopped.status, stopped.close_reason) == (Status.CLOSED, CloseReason.STOPPED)
    report = get_engine(engine_name).summarize_for_parent(stopped, "STOPPED")
    assert isinstance(report, Summary)
    assert process.public_id in report.human_summary


def test_parts_not_built_yet_raise_a_clear_error():
    tools = NotAvailable("tools", "the tool layer is not built yet")
    with pytest.raises(CapabilityNotAvailable, match=r"ctx\.tools\.invoke is not available"):
        tools.invoke("get_time", {})
