"""Parent reports pending at once are one turn of an engine that coalesces them (marvin):
one `steer` each, in order, and one commit that consumes them all, or none.

The lanes are driven here, in the test thread: wakes and children's starts are recorded, not
run, so the reports are delivered while marvin's lane rests and all wait when it runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from engines.builtin.marvin.engine import Marvin
from processes.actions.pending import deliver
from processes.lane import dispatch
from processes.lane.driver import drive_lane
from processes.models import PendingKind, PendingMessage, ThinkProcess
from processes.states import CloseReason, Status
from tests.support.marvin import marvin, nodes, result

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Lanes are woken and children started only when the test drives them."""
    woken: list[int] = []
    monkeypatch.setattr(dispatch, "dispatch_drive", woken.append)
    monkeypatch.setattr(dispatch, "dispatch_start", lambda process_id: None)
    return woken


def three_workers_waiting(alice: Any, script: Any) -> ThinkProcess:
    """marvin with three workers spawned at once (never started) and an aggregate to run."""
    script([{"engine": "marvin", "step": "aggregate", "reply": "the report"}])
    tasks = [{"kind": "WORKER", "title": f"Part {n}", "goal": f"part {n}"} for n in range(3)]
    process = marvin(alice, "three parts", tasks=tasks, maxParallel=3)
    assert drive_lane(process.pk) == 1  # its `advance`: the three workers are spawned
    process.refresh_from_db()
    assert len(process.engine_state["waiting"]) == 3
    return process


def report(process: ThinkProcess, child_id: str, summary: str) -> None:
    payload: dict[str, Any] = {"childId": child_id, "engine": "frankie", "event": "DONE"}
    payload.update(text=summary, payload={"output": result(summary)})
    assert deliver(process.pk, PendingKind.PARENT_REPORT, payload) is not None


def test_reports_pending_at_once_are_one_turn_and_one_commit(alice, script, held):
    # given three workers' reports, all pending before marvin's lane runs
    process = three_workers_waiting(alice, script)
    for n, child_id in enumerate(process.engine_state["waiting"]):
        report(process, child_id, f"found {n}")
    # when the lane drains them
    turns = drive_lane(process.pk)
    # then one turn took all three, each consumed by the same commit, and the tree is done
    assert turns == 1
    sent = PendingMessage.objects.filter(
        process_id=process.pk, kind=PendingKind.PARENT_REPORT, payload__event="DONE"
    )
    assert [m.consumed for m in sent] == [True] * 3
    assert len({(m.consumed_at, m.consumed_fence) for m in sent}) == 1
    done = ThinkProcess.objects.get(pk=process.pk)
    assert (done.status, done.close_reason) == (Status.CLOSED, CloseReason.DONE)
    assert [n["status"] for n in nodes(done) if n["kind"] == "WORKER"] == ["DONE"] * 3
    assert done.engine_state["report"] == "the report"


def test_a_later_report_that_fails_retries_the_turn_from_the_state_before_it(
    alice, script, held, monkeypatch
):
    # given three pending reports, the third of which fails once when marvin steers it
    process = three_workers_waiting(alice, script)
    children = list(process.engine_state["waiting"])
    for n, child_id in enumerate(children):
        report(process, child_id, f"found {n}")
    original = Marvin.steer
    seen: list[tuple[str, int]] = []

    def flaky(self: Marvin, process: Any, ctx: Any, message: Any) -> None:
        # what the steer found still waited for, before it takes the report
        seen.append((message.child_id, len(process.engine_state["waiting"])))
        if message.child_id == children[2] and len(seen) == 3:
            raise RuntimeError("the third report fails once")
        original(self, process, ctx, message)

    monkeypatch.setattr(Marvin, "steer", flaky)
    # when the lane drains them
    drive_lane(process.pk)
    # then the retry started over from the state before the first report, and each report
    # was taken once by the commit that consumed all three
    assert seen == [
        (children[0], 3),
        (children[1], 2),
        (children[2], 1),
        (children[0], 3),
        (children[1], 2),
        (children[2], 1),
    ]
    done = ThinkProcess.objects.get(pk=process.pk)
    assert (done.status, done.close_reason) == (Status.CLOSED, CloseReason.DONE)
    assert [n["result"]["summary"] for n in nodes(done) if n["kind"] == "WORKER"] == [
        "found 0",
        "found 1",
        "found 2",
    ]
