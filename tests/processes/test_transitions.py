"""The one writer of a process's status (processes/transitions.py): every change leaves one
ProcessTransition row and one `process-status` event, a lost race or a forbidden call leaves
nothing, and no other module writes `status`."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import timezone

from processes import recovery, transitions
from processes.actions import create, lifecycle, steer
from processes.models import ProcessTransition, ThinkProcess
from processes.states import TRANSITIONS, Call, CloseReason, Status, check_call
from sessions_app.models import SessionEvent
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until
from vancetope.errors import Conflict

ROOT = Path(__file__).resolve().parents[2]


def rows(process_id: int) -> list[tuple[str, str, str, str]]:
    found = ProcessTransition.objects.filter(process_id=process_id).order_by("at", "pk")
    return [(r.call, r.from_status, r.to_status, r.close_reason) for r in found]


def status_events(process: ThinkProcess) -> list[str]:
    events = SessionEvent.objects.filter(session_id=process.session_id, event="process-status")
    return [
        event.data["status"]
        for event in events.order_by("seq")
        if event.data["processId"] == process.public_id
    ]


def worker(tenancy: Tenancy, *, start: bool = True) -> ThinkProcess:
    """A ford worker; started, once the first turn its start queued (the goal) has run."""
    session = open_session(tenancy)
    process = create.create_process(session, goal="count sheep", engine="ford", start=start)
    if start:
        wait_until(
            lambda: ThinkProcess.objects.filter(
                pk=process.pk, consumed_count=1, status=Status.IDLE, lease_owner=""
            ).exists()
        )
        process.refresh_from_db()
    return process


def snapshot(process_id: int) -> tuple[object, ...]:
    row = ThinkProcess.objects.get(pk=process_id)
    return (
        row.status,
        row.close_reason,
        row.updated_at,
        ProcessTransition.objects.filter(process_id=process_id).count(),
        SessionEvent.objects.filter(session_id=row.session_id).count(),
    )


@pytest.mark.django_db(transaction=True)
def test_every_status_change_leaves_one_row_with_its_call_and_statuses(alice):
    # given a worker process, not started yet
    process = worker(alice, start=False)
    assert rows(process.pk) == []
    seen = []
    # when it goes through start (whose goal is its first turn), a turn, pause, resume,
    # suspend, resume and stop
    seen.append(lifecycle.start_process(process.pk).status)
    for consumed in (1, 2):
        if consumed == 2:
            steer.steer_process(process.pk, "and more sheep")
        wait_until(lambda n=consumed: ThinkProcess.objects.get(pk=process.pk).consumed_count == n)
        wait_until(lambda: ThinkProcess.objects.get(pk=process.pk).status == Status.IDLE)
        seen += [Status.RUNNING, Status.IDLE]
    for call in ("pause", "resume", "suspend", "resume", "stop"):
        seen.append(getattr(lifecycle, f"{call}_process")(process.pk).status)
    # then each change left exactly one row, chained from the status before it
    assert rows(process.pk) == [
        ("start", "INIT", "IDLE", ""),
        ("turn", "IDLE", "RUNNING", ""),
        ("turn-end", "RUNNING", "IDLE", ""),
        ("turn", "IDLE", "RUNNING", ""),
        ("turn-end", "RUNNING", "IDLE", ""),
        ("pause", "IDLE", "PAUSED", ""),
        ("resume", "PAUSED", "IDLE", ""),
        ("suspend", "IDLE", "SUSPENDED", ""),
        ("resume", "SUSPENDED", "IDLE", ""),
        ("stop", "IDLE", "CLOSED", "STOPPED"),
    ]
    assert [to for _, _, to, _ in rows(process.pk)] == seen
    # and one process-status event each, in the same order
    assert status_events(process) == seen


@pytest.mark.django_db(transaction=True)
def test_a_transition_whose_status_moved_meanwhile_writes_nothing(alice):
    # given a copy of an IDLE process read before another caller paused it
    process = worker(alice)
    stale = ThinkProcess.objects.get(pk=process.pk)
    lifecycle.pause_process(process.pk)
    before = snapshot(process.pk)
    # when the stale copy is stopped (allowed from IDLE, the status it was read in)
    with pytest.raises(transitions.TransitionLost), transaction.atomic():
        transitions.apply(stale, Call.STOP, Status.CLOSED, CloseReason.STOPPED)
    # then nothing was written: no status, no row, no event
    assert snapshot(process.pk) == before
    assert (stale.status, stale.close_reason) == (Status.IDLE, "")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("setup", "call", "to_status", "message"),
    [
        ([], Call.RESUME, Status.IDLE, "cannot resume process tp_{id}: it is IDLE"),
        ([], Call.RECOVER, Status.IDLE, "cannot recover process tp_{id}: it is IDLE"),
        (["pause"], Call.TURN, Status.RUNNING, "cannot turn process tp_{id}: it is PAUSED"),
        (
            ["stop"],
            Call.START,
            Status.IDLE,
            "cannot start process tp_{id}: it is CLOSED/STOPPED",
        ),
    ],
)
def test_a_call_the_table_forbids_raises_409_and_changes_nothing(
    alice, setup, call, to_status, message
):
    # given
    process = worker(alice)
    for step in setup:
        getattr(lifecycle, f"{step}_process")(process.pk)
    loaded = ThinkProcess.objects.get(pk=process.pk)
    before = snapshot(process.pk)
    # when
    with pytest.raises(Conflict) as refused, transaction.atomic():
        transitions.apply(loaded, call, to_status)
    # then
    assert refused.value.code == 409
    assert refused.value.message == message.format(id=process.pk)
    assert snapshot(process.pk) == before


@pytest.mark.django_db(transaction=True)
def test_reset_of_a_process_closed_done_is_forbidden(alice):
    process = worker(alice)
    ThinkProcess.objects.filter(pk=process.pk).update(
        status=Status.CLOSED, close_reason=CloseReason.DONE
    )
    loaded = ThinkProcess.objects.get(pk=process.pk)
    before = snapshot(process.pk)
    with pytest.raises(Conflict, match="it is CLOSED/DONE"), transaction.atomic():
        transitions.apply(loaded, Call.RESET, Status.INIT)
    assert snapshot(process.pk) == before


def test_recover_is_in_the_table_and_only_takes_a_running_lane_back_to_idle():
    rule = TRANSITIONS[Call.RECOVER]
    assert (rule.allowed_from, rule.to) == ({Status.RUNNING}, Status.IDLE)
    assert check_call(Call.RECOVER, Status.RUNNING) is rule
    for status in set(Status) - {Status.RUNNING}:
        with pytest.raises(Conflict):
            check_call(Call.RECOVER, status)


def left_running(process: ThinkProcess, owner: str, fence: int) -> None:
    """What a worker that died mid-turn leaves behind (its lease expired)."""
    ThinkProcess.objects.filter(pk=process.pk).update(
        status=Status.RUNNING,
        lease_owner=owner,
        lease_fence=fence,
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )


@pytest.mark.django_db(transaction=True)
def test_a_recovered_lane_leaves_a_recover_row_and_a_status_event(alice):
    # given a process left RUNNING by a worker whose lease expired
    process = worker(alice)
    left_running(process, "other-host:1:1:gone", fence=4)
    events = status_events(process)
    # when the sweep recovers it
    assert recovery.recover_lanes(min_pending_age=recovery.LOST_WAKE_AFTER).recovered == 1
    # then it is IDLE, with one recover row naming the dead lease, and one event
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.IDLE
    [recovered] = ProcessTransition.objects.filter(process_id=process.pk, call=Call.RECOVER)
    assert (recovered.from_status, recovered.to_status) == (Status.RUNNING, Status.IDLE)
    assert recovered.detail == "lease of other-host:1:1:gone ended"
    assert status_events(process) == [*events, Status.IDLE]


@pytest.mark.django_db(transaction=True)
def test_recovery_of_a_lane_whose_fence_moved_writes_nothing(alice):
    # given a lane left RUNNING, then taken again by a worker (its fence grew)
    process = worker(alice)
    left_running(process, "other-host:1:1:gone", fence=4)
    ThinkProcess.objects.filter(pk=process.pk).update(lease_fence=5)
    before = snapshot(process.pk)
    # when a sweep that read the old fence recovers it
    recovered = transitions.recover_running([(process.pk, 4)], {process.pk: "other-host"})
    # then
    assert recovered == 0
    assert snapshot(process.pk) == before


# The static scan: every update-style call in the source that writes a `status` key, with the
# model it writes to, found by reading the call (fastsql's first argument, the `Model.objects`
# chain, a process relation, a lease, or the local name the receiver was assigned from). It
# does not follow helpers that build the change elsewhere and pass it in; the transition rows
# the tests above count are the check for those.
UPDATE_CALLS = frozenset({"update", "update_returning", "bulk_update", "update_or_create"})
# Reverse relations and objects that write a ThinkProcess row.
PROCESS_RECEIVERS = frozenset({"processes", "children", "lease", "lanes"})
# Variable names that hold a ThinkProcess (an assigned `.status` is saved sooner or later).
PROCESS_NAMES = frozenset({"process", "child", "parent"})
# Only these write a process's status: the writer and the schema's history.
ALLOWED = (Path("processes/transitions.py"),)


def source_files() -> Iterator[Path]:
    for top in sorted(ROOT.iterdir()):
        if not top.is_dir() or top.name.startswith(".") or top.name == "tests":
            continue
        for path in sorted(top.rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" not in relative.parts and relative not in ALLOWED:
                yield relative


def status_writes(source: str) -> list[tuple[int, str]]:
    """(line, model) for every status write in `source`; model "?" when the call does not
    say which model it writes."""
    tree = ast.parse(source)
    assigned: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            if isinstance(node.targets[0], ast.Name):
                assigned[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            assigned[node.target.id] = node.value

    def resolve(node: ast.expr) -> ast.expr:
        seen: set[str] = set()
        while isinstance(node, ast.Name) and node.id in assigned and node.id not in seen:
            seen.add(node.id)
            node = assigned[node.id]
        return node

    def names_status(node: ast.expr) -> bool:
        node = resolve(node)
        if isinstance(node, ast.Dict):
            return any(
                (isinstance(key, ast.Constant) and key.value == "status")
                or (key is None and names_status(value))
                for key, value in zip(node.keys, node.values, strict=True)
            )
        if isinstance(node, ast.List | ast.Tuple):
            return any(isinstance(e, ast.Constant) and e.value == "status" for e in node.elts)
        return False

    def writes_status(call: ast.Call) -> bool:
        for keyword in call.keywords:
            if keyword.arg == "status" or (
                keyword.arg in {None, "defaults"} and names_status(keyword.value)
            ):
                return True
        return any(names_status(arg) for arg in call.args)

    def model_of(call: ast.Call) -> str | None:
        assert isinstance(call.func, ast.Attribute)
        receiver = resolve(call.func.value)
        if isinstance(receiver, ast.Name) and receiver.id == "fastsql":
            first = call.args[0] if call.args else None
            return first.id if isinstance(first, ast.Name) else "?"
        if isinstance(receiver, ast.Dict) or (
            isinstance(receiver, ast.Call)
            and isinstance(receiver.func, ast.Name)
            and receiver.func.id == "dict"
        ):
            return None  # a dict being filled, not a row being written
        chain: list[str] = []
        node: ast.expr = receiver
        while True:
            node = resolve(node)
            if isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Call):
                node = node.func
            elif isinstance(node, ast.Subscript):
                node = node.value
            else:
                break
        if isinstance(node, ast.Name):
            chain.append(node.id)
        if "objects" in chain:
            return chain[-1]
        if PROCESS_RECEIVERS & set(chain):
            return "ThinkProcess"
        return "?"

    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in UPDATE_CALLS
            and writes_status(node)
        ):
            model = model_of(node)
            if model is not None:
                found.append((node.lineno, model))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == "status"
                    and isinstance(target.value, ast.Name)
                    and (target.value.id in PROCESS_NAMES or target.value.id.endswith("process"))
                ):
                    found.append((node.lineno, "ThinkProcess"))
    return sorted(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("ThinkProcess.objects.filter(pk=1).update(status='IDLE')", "ThinkProcess"),
        ("fastsql.update(ThinkProcess, 'id = %s', [1], {'status': 'IDLE'})", "ThinkProcess"),
        ("changes = {'status': 'IDLE'}\nlease.update(changes)", "ThinkProcess"),
        ("session.processes.exclude(status='X').update(status='IDLE')", "ThinkProcess"),
        ("rows = ThinkProcess.objects.all()\nrows.update(**{'status': 'IDLE'})", "ThinkProcess"),
        ("ThinkProcess.objects.bulk_update(found, ['status'])", "ThinkProcess"),
        ("process.status = 'IDLE'\nprocess.save()", "ThinkProcess"),
        ("somewhere.update(status='IDLE')", "?"),
        ("ToolCall.objects.filter(pk=1).update(status='OK')", "ToolCall"),
    ],
)
def test_the_status_write_scan_sees_the_usual_ways_of_writing_one(source, expected):
    assert [model for _, model in status_writes(source)] == [expected]


@pytest.mark.parametrize(
    "source",
    [
        "ThinkProcess.objects.filter(status='IDLE').update(context_drift=True)",
        "changes: dict = {'at': 1}\nchanges.update(status='OK')",
        "data = {'status': process.status}",
    ],
)
def test_the_status_write_scan_ignores_reads_and_dicts(source):
    assert status_writes(source) == []


def test_no_module_but_the_transitions_writer_writes_a_process_status():
    found = [
        f"{path}:{line} writes status of {model}"
        for path in source_files()
        for line, model in status_writes((ROOT / path).read_text())
        if model in {"ThinkProcess", "?"}
    ]
    assert found == [], "a process's status is written only by processes/transitions.py"


@pytest.mark.django_db(transaction=True)
def test_a_process_closed_failed_can_be_reset_to_init(alice):
    # given a process that failed for good
    process = worker(alice)
    ThinkProcess.objects.filter(pk=process.pk).update(
        status=Status.CLOSED, close_reason=CloseReason.FAILED
    )
    # when it is reset
    reset = lifecycle.reset_process(process.pk)
    # then it starts over from INIT
    assert (reset.status, reset.close_reason) == (Status.INIT, "")
    assert ThinkProcess.objects.get(pk=process.pk).status == Status.INIT
