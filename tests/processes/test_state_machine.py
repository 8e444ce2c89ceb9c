"""A hypothesis state machine over the lifecycle service.

Several ford processes of one session are driven through the public service calls (create,
start, steer, pause, resume, suspend, stop, reset), a simulated worker crash and a Brain restart
(`recover_processes`). A model keeps each process's expected status, taken from the one
transition table in `processes.states`; every call the table forbids must raise Conflict and
change nothing. Turns run on the in-process worker's threads, so after every step the machine
waits (bounded) until every lane drive has finished before it checks the invariants:

- status and close reason are what the model expects;
- every ProcessTransition row is allowed by the table and the rows of a process form one
  path from INIT to its status (the only gap is the simulated crash, which a recover or a
  takeover of the expired lease closes);
- every message a steer was accepted for is stored once, in seq order, and is either consumed
  (once, by a fenced turn) or still pending; no woken process is left with pending messages;
- the conversation has contiguous indexes 0..n-1 and exactly one user entry per message
  consumed since the last reset, in seq order (a worker's goal is its first message: start
  queues it for the first turn).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.db.models import F
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, event
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from processes import recovery
from processes.actions import create, lifecycle, steer
from processes.actions.sessions import create_session
from processes.lane import interrupts
from processes.lane import lease as lanes
from processes.lane.worker import InProcessWorker, shutdown_worker
from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from processes.queries import pending_count
from processes.states import (
    TRANSITIONS,
    TURN_OUTCOMES,
    WAKE_ON_MESSAGE,
    Call,
    CloseReason,
    Status,
    is_allowed,
)
from sessions_app.models import Session
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy
from vancetope.errors import Conflict, Unavailable

pytestmark = pytest.mark.django_db(transaction=True)

MAX_PROCESSES = 5
# A message containing this word gets a reply streamed word by word for about 1.75 boundary
# intervals, so an interrupt that arrives meanwhile stops the turn at a boundary.
SLOW_WORD = "slow"
SLOW_REPLY = "a slow answer comes word by word"
SLOW_DELAY_PER_DELTA = interrupts.BOUNDARY_CHECK_SECONDS / 4
# How long steer_then_interrupt waits for the turn to begin before it interrupts anyway.
MID_TURN_WAIT = 2.0
# How long a lifecycle call waits for a lane held by a dead worker before it answers 503.
BUSY_LANE_WAIT = 0.2
# Bound on waiting for the lanes to finish after a step.
SETTLE_TIMEOUT = 30.0

DEAD_OWNER = f"{lanes.HOSTNAME}:999999:1:dead"  # this host, a pid above pid_max: dead
GONE_OWNER = "another-host:4242:1:gone"  # another host: only its expired lease tells

PUBLIC_CALLS = frozenset(
    {Call.START, Call.PAUSE, Call.RESUME, Call.SUSPEND, Call.STEER, Call.STOP, Call.RESET}
)
SERVICE = {
    Call.START: lifecycle.start_process,
    Call.PAUSE: lifecycle.pause_process,
    Call.RESUME: lifecycle.resume_process,
    Call.SUSPEND: lifecycle.suspend_process,
    Call.STOP: lifecycle.stop_process,
    Call.RESET: lifecycle.reset_process,
}


class LaneTracker:
    """Lane drives handed to the in-process worker that have not finished yet.

    A wake is handed over before the call that made it returns (or, from a lane, before that
    drive finishes), so once this is empty while the test's thread waits, no lane runs and none
    will start.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: set[Future[None]] = set()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = InProcessWorker.submit

        def submit(worker: InProcessWorker, process_id: int) -> Future[None] | None:
            future = original(worker, process_id)
            if future is not None:
                with self._lock:
                    self._futures.add(future)
                future.add_done_callback(self._done)
            return future

        monkeypatch.setattr(InProcessWorker, "submit", submit)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.discard(future)

    def running(self) -> int:
        with self._lock:
            return len(self._futures)


@dataclass
class Expected:
    """What the model expects of one process."""

    pid: int
    goal: str
    chat: bool
    status: str
    close_reason: str = ""
    # "": not crashed; DEAD_OWNER or GONE_OWNER: left RUNNING by a worker that is gone.
    crash_owner: str = ""
    # Texts of the accepted steers; message seq n is texts[n - 1].
    texts: list[str] = field(default_factory=list)
    # Seqs consumed before the last reset (reset clears the conversation).
    forgotten: frozenset[int] = frozenset()
    # Crashes that ended (by recovery or a call that took over the expired lease).
    crashes_ended: int = 0

    @property
    def crashed(self) -> bool:
        return bool(self.crash_owner)

    @property
    def lane_is_held_by_the_dead(self) -> bool:
        return self.crash_owner == DEAD_OWNER


def reply_to(text: str) -> str:
    return SLOW_REPLY if SLOW_WORD in text else f"echo: {text}"


def snapshot(pid: int, *, session_events: bool) -> dict[str, Any]:
    """Everything a refused call must leave alone."""
    row: dict[str, Any] = dict(
        ThinkProcess.objects.filter(pk=pid)
        .values(
            "status",
            "close_reason",
            "updated_at",
            "interrupt",
            "lease_owner",
            "lease_expires_at",
            "lease_fence",
            "next_pending_seq",
            "conversation_length",
            "engine_state",
            "session_id",
        )
        .get()
    )
    messages = PendingMessage.objects.filter(process_id=pid)
    row["messages"] = messages.count()
    row["pending"] = messages.filter(consumed=False).count()
    row["transitions"] = ProcessTransition.objects.filter(process_id=pid).count()
    row["conversation"] = ConversationMessage.objects.filter(process_id=pid).count()
    if session_events:
        row["session_last_seq"] = Session.objects.get(pk=row["session_id"]).last_seq
    return row


def assert_unchanged(pid: int, before: dict[str, Any], *, session_events: bool) -> None:
    after = snapshot(pid, session_events=session_events)
    assert after == before, f"a refused call changed tp_{pid}: {before} -> {after}"


def turn_count(pid: int) -> int:
    return ProcessTransition.objects.filter(process_id=pid, call=Call.TURN).count()


def consumed_seqs(pid: int) -> frozenset[int]:
    return frozenset(
        PendingMessage.objects.filter(process_id=pid, consumed=True).values_list("seq", flat=True)
    )


class LifecycleMachine(RuleBasedStateMachine):
    processes = Bundle("processes")

    def __init__(self, tenancy: Tenancy, tracker: LaneTracker) -> None:
        super().__init__()
        self.tenancy = tenancy
        self.tracker = tracker
        self.session: Session | None = None
        self.model: dict[int, Expected] = {}
        self.goals = 0

    # --- setup ----------------------------------------------------------------------------------

    @initialize(target=processes)
    def open_session(self) -> int:
        self.session = create_session(
            self.tenancy.user,
            client_type="cli",
            project_id=self.tenancy.project_id,
            fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        )
        pid = self.session.chat_process_id
        assert pid is not None
        self.model[pid] = Expected(pid, goal="", chat=True, status=Status.IDLE)
        return pid

    @precondition(lambda self: len(self.model) < MAX_PROCESSES)
    @rule(target=processes, with_goal=st.booleans(), start=st.booleans())
    def create(self, with_goal: bool, start: bool) -> int:
        assert self.session is not None
        self.goals += 1
        goal = f"goal {self.goals}" if with_goal else ""
        process = create.create_process(self.session, goal=goal, engine="ford", start=start)
        status = Status.IDLE if start else Status.INIT
        assert (process.status, process.close_reason) == (status, "")
        self.model[process.pk] = Expected(
            process.pk, goal=goal, chat=False, status=status, texts=[goal] if start and goal else []
        )
        return process.pk

    # --- lifecycle calls ------------------------------------------------------------------------

    @rule(pid=processes)
    def start(self, pid: int) -> None:
        self._lifecycle(pid, Call.START)

    @rule(pid=processes)
    def pause(self, pid: int) -> None:
        self._lifecycle(pid, Call.PAUSE)

    @rule(pid=processes)
    def resume(self, pid: int) -> None:
        self._lifecycle(pid, Call.RESUME)

    @rule(pid=processes)
    def suspend(self, pid: int) -> None:
        self._lifecycle(pid, Call.SUSPEND)

    @rule(pid=processes)
    def stop(self, pid: int) -> None:
        self._lifecycle(pid, Call.STOP)

    @rule(pid=processes)
    def reset(self, pid: int) -> None:
        self._lifecycle(pid, Call.RESET)

    @rule(pid=processes)
    def steer(self, pid: int) -> None:
        self._steer(pid, slow=False, settled=True)

    @rule(pids=st.lists(processes, min_size=2, max_size=4), slow_first=st.booleans())
    def steer_burst(self, pids: list[int], slow_first: bool) -> None:
        """Steers in a row without waiting: later ones meet running turns (no wake)."""
        for index, pid in enumerate(pids):
            self._steer(pid, slow=slow_first and index == 0, settled=False)

    @precondition(lambda self: bool(self._idle()))
    @rule(
        data=st.data(),
        call=st.sampled_from([Call.PAUSE, Call.SUSPEND, Call.STOP]),
        slow=st.booleans(),
        mid_turn=st.booleans(),
    )
    def steer_then_interrupt(
        self, data: st.DataObject, call: Call, slow: bool, mid_turn: bool
    ) -> None:
        """Wake the lane and interrupt it, at once or once the turn runs: the call gets the
        lane at the turn's next boundary; the message is consumed or still pending."""
        pid = data.draw(st.sampled_from(self._idle()), label="pid")
        turns = turn_count(pid)
        self._steer(pid, slow, settled=False)
        if mid_turn:
            deadline = time.monotonic() + MID_TURN_WAIT
            while turn_count(pid) == turns and time.monotonic() < deadline:
                time.sleep(0.005)
        self._lifecycle(pid, call, settled=False)
        self._settle()
        last = PendingMessage.objects.filter(process_id=pid).order_by("seq").last()
        assert last is not None
        started = turn_count(pid) > turns
        outcome = "consumed" if last.consumed else "interrupted" if started else "not started"
        event(f"steer then {call.value}: {outcome}")

    # --- crash and restart ----------------------------------------------------------------------

    @precondition(lambda self: bool(self._idle()))
    @rule(data=st.data(), expired=st.booleans(), with_message=st.booleans())
    def crash(self, data: st.DataObject, expired: bool, with_message: bool) -> None:
        """A worker took the lane for a turn and was killed: RUNNING under its lease.

        Not expired: a dead pid on this host (recovery spots it). Expired: a worker of another
        host (recovery, or any call that takes the lane, ends it).
        """
        pid = data.draw(st.sampled_from(self._idle()), label="pid")
        now = timezone.now()
        owner, expires = (
            (GONE_OWNER, now - timedelta(minutes=1))
            if expired
            else (DEAD_OWNER, now + timedelta(hours=1))
        )
        taken = ThinkProcess.objects.filter(
            pk=pid, status__in=WAKE_ON_MESSAGE, lease_owner=""
        ).update(
            status=Status.RUNNING,
            lease_owner=owner,
            lease_expires_at=expires,
            lease_fence=F("lease_fence") + 1,
        )
        assert taken == 1, f"tp_{pid} is not idle with a free lane after the lanes settled"
        expected = self.model[pid]
        expected.status, expected.crash_owner = Status.RUNNING, owner
        if with_message:
            # Arrives while the dead worker "runs" the process: waits for recovery.
            self._steer(pid, slow=False, settled=True)

    @precondition(lambda self: any(e.crashed for e in self.model.values()))
    @rule()
    def restart(self) -> None:
        crashed = [e for e in self.model.values() if e.crashed]
        others = [e.pid for e in self.model.values() if not e.crashed]
        pending = [pending_count(e.pid) for e in crashed]
        before = {pid: snapshot(pid, session_events=False) for pid in others}
        report = recovery.recover_processes()
        assert (report.recovered, report.expired) == (len(crashed), 0)
        # One wake per process with messages waiting; that they drain is an invariant.
        assert report.woken == sum(1 for n in pending if n), (report, pending)
        event(f"restart: {len(crashed)} crashed, {sum(pending)} messages waiting")
        for pid in others:
            assert_unchanged(pid, before[pid], session_events=False)
        for expected in crashed:
            expected.status, expected.crash_owner = Status.IDLE, ""
            expected.crashes_ended += 1

    # --- helpers --------------------------------------------------------------------------------

    def _idle(self) -> list[int]:
        return sorted(
            e.pid for e in self.model.values() if e.status == Status.IDLE and not e.crashed
        )

    def _lifecycle(self, pid: int, call: Call, *, settled: bool = True) -> None:
        expected = self.model[pid]
        before = snapshot(pid, session_events=settled)
        function = SERVICE[call]
        if expected.lane_is_held_by_the_dead and is_allowed(call, Status.RUNNING):
            # The table allows it, but the lane belongs to a dead worker whose lease has not
            # expired: busy (503), nothing changed; recovery frees it.
            with (
                override_settings(VANCETOPE_LIFECYCLE_WAIT_SECONDS=BUSY_LANE_WAIT),
                pytest.raises(Unavailable),
            ):
                function(pid)
            assert_unchanged(pid, before, session_events=settled)
            event(f"{call.value}: busy lane of a dead worker")
            return
        if not is_allowed(call, expected.status, expected.close_reason):
            with pytest.raises(Conflict) as refused:
                function(pid)
            assert refused.value.code == 409
            assert_unchanged(pid, before, session_events=settled)
            event(f"{call.value}: refused")
            return
        event(f"{call.value}: from {expected.status}")
        result = function(pid)
        # A reset forgets what was consumed before it, and consumes the turns the process had
        # queued for itself (its deferred goal) unrun.
        forgotten = consumed_seqs(pid) if call is Call.RESET else expected.forgotten
        to_status = TRANSITIONS[call].to
        reason = CloseReason.STOPPED if call is Call.STOP else ""
        assert (result.status, result.close_reason) == (to_status, reason)
        assert result.goal == expected.goal
        rows = ProcessTransition.objects.filter(process_id=pid).order_by("pk")
        new_rows = [
            (from_status, to_status_, reason_)
            for call_, from_status, to_status_, reason_ in rows.values_list(
                "call", "from_status", "to_status", "close_reason"
            )[before["transitions"] :]
            if call_ == call
        ]
        assert new_rows == [(expected.status, to_status, reason)], new_rows
        if call is Call.RESET:
            assert result.engine_state == {}
            assert result.conversation_length == 0
        expected.status, expected.close_reason = str(to_status), str(reason)
        if expected.crashed:
            expected.crash_owner = ""
            expected.crashes_ended += 1
        if call is Call.START and expected.goal and not expected.chat:
            # ford's start queues its goal as the first turn's message (CONTROL).
            expected.texts.append(expected.goal)
        if call is Call.RESET:
            expected.forgotten = forgotten

    def _steer(self, pid: int, slow: bool, *, settled: bool) -> None:
        expected = self.model[pid]
        text = f"m{pid}-{len(expected.texts) + 1}" + (f" {SLOW_WORD}" if slow else "")
        before = snapshot(pid, session_events=settled)
        if not is_allowed(Call.STEER, expected.status, expected.close_reason):
            with pytest.raises(Conflict) as refused:
                steer.steer_process(pid, text)
            assert refused.value.code == 409
            assert_unchanged(pid, before, session_events=settled)
            return
        steered = steer.steer_process(pid, text)
        event(f"steer: accepted ({'settled' if settled else 'burst'})")
        expected.texts.append(text)
        assert steered.message.seq == len(expected.texts)
        if settled:
            assert steered.pending == before["pending"] + 1
        else:
            assert 1 <= steered.pending <= before["pending"] + 1

    def _settle(self) -> None:
        """Wait until no lane drive runs and no process (but the crashed) is RUNNING or held."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while True:
            running = self.tracker.running()
            rows = ThinkProcess.objects.filter(pk__in=list(self.model)).values_list(
                "pk", "status", "lease_owner"
            )
            busy = [
                row
                for row in rows
                if not self.model[row[0]].crashed and (row[1] == Status.RUNNING or row[2])
            ]
            if not running and not busy:
                return
            if time.monotonic() > deadline:
                pytest.fail(
                    f"lanes did not settle within {SETTLE_TIMEOUT}s: "
                    f"{running} drives running; RUNNING or held: {busy}"
                )
            time.sleep(0.01)

    # --- invariants -----------------------------------------------------------------------------

    @invariant()
    def settled_and_consistent(self) -> None:
        if self.session is None:
            return
        self._settle()
        for expected in self.model.values():
            process = ThinkProcess.objects.get(pk=expected.pid)
            check_status(expected, process)
            consumed = check_messages(expected, process)
            check_conversation(expected, process, consumed)
            check_transitions(expected, process)

    def teardown(self) -> None:
        # Let every lane stop, then close this example's processes directly, so the next
        # example's restart finds nothing of this one (not even after a failed step).
        try:
            shutdown_worker(wait=True)
        finally:
            if self.model:
                ThinkProcess.objects.filter(pk__in=list(self.model)).update(
                    status=Status.CLOSED,
                    close_reason=CloseReason.STOPPED,
                    lease_owner="",
                    lease_expires_at=None,
                )


def check_status(expected: Expected, process: ThinkProcess) -> None:
    where = f"tp_{expected.pid}"
    assert (process.status, process.close_reason) == (expected.status, expected.close_reason), where
    assert process.interrupt == "", f"{where}: interrupt {process.interrupt!r} left behind"
    if expected.crashed:
        assert process.lease_owner == expected.crash_owner, where
    else:
        assert (process.lease_owner, process.lease_expires_at) == ("", None), where


def check_messages(expected: Expected, process: ThinkProcess) -> list[PendingMessage]:
    """Every accepted steer is stored once, in seq order; consumed once or still pending."""
    where = f"tp_{expected.pid}"
    messages = list(PendingMessage.objects.filter(process_id=expected.pid).order_by("seq"))
    assert [m.seq for m in messages] == list(range(1, len(expected.texts) + 1)), where
    assert [m.text for m in messages] == expected.texts, where
    assert process.next_pending_seq == len(expected.texts) + 1, where
    consumed = [m for m in messages if m.consumed]
    pending = [m for m in messages if not m.consumed]
    # sent == consumed + pending, and the process row's counters agree with its messages
    assert len(consumed) + len(pending) == len(expected.texts), where
    assert process.consumed_count == len(consumed), where
    assert process.waiting == len(pending), where
    for message in consumed:
        assert message.consumed_fence is not None, f"{where} #{message.seq}"
        assert message.consumed_at is not None, f"{where} #{message.seq}"
        assert message.consumed_fence <= process.lease_fence, f"{where} #{message.seq}"
    for message in pending:
        assert (message.consumed_fence, message.consumed_at) == (None, None), where
    # Drained in seq order: what is consumed is a prefix of the queue.
    if consumed and pending:
        assert consumed[-1].seq < pending[0].seq, (
            f"{where}: consumed {[m.seq for m in consumed]}, pending {[m.seq for m in pending]}"
        )
    # A woken lane drains everything: no settled IDLE/BLOCKED process keeps pending messages.
    if process.status in WAKE_ON_MESSAGE:
        assert not pending, f"{where} is {process.status} with pending {[m.seq for m in pending]}"
    return consumed


def check_conversation(
    expected: Expected, process: ThinkProcess, consumed: list[PendingMessage]
) -> None:
    where = f"tp_{expected.pid}"
    rows = list(
        ConversationMessage.objects.filter(process_id=expected.pid)
        .order_by("index")
        .values_list("index", "role", "content")
    )
    assert [index for index, _, _ in rows] == list(range(len(rows))), where
    assert process.conversation_length == len(rows), where
    assert [role for _, role, _ in rows] == ["user", "assistant"] * (len(rows) // 2), (
        f"{where}: {rows}"
    )
    users = [content for _, role, content in rows if role == "user"]
    replies = [content for _, role, content in rows if role == "assistant"]
    # Exactly one user entry per message consumed since the last reset, in seq order.
    wanted = [m.text for m in consumed if m.seq not in expected.forgotten]
    assert users == wanted, f"{where}: conversation {users}, consumed {wanted}"
    assert replies == [reply_to(text) for text in users], where


def check_transitions(expected: Expected, process: ThinkProcess) -> None:
    """Every row is allowed by the table, and the rows form one path from INIT."""
    where = f"tp_{expected.pid}"
    rows = list(
        ProcessTransition.objects.filter(process_id=expected.pid)
        .order_by("pk")
        .values_list("call", "from_status", "to_status", "close_reason")
    )
    status, reason, after_turn = str(Status.INIT), "", False
    gaps = 0
    for call, from_status, to_status, close_reason in rows:
        step = f"{where}: {from_status} -{call}-> {to_status}/{close_reason} in {rows}"
        if from_status != status:
            # The only change without a row is the simulated crash: IDLE/BLOCKED -> RUNNING,
            # ended by recovery or by a call that took over the expired lease.
            assert status in WAKE_ON_MESSAGE, step
            assert from_status == Status.RUNNING, step
            assert call in {"recover", Call.PAUSE, Call.SUSPEND, Call.STOP}, step
            gaps += 1
            reason = ""
        elif after_turn:
            # Nothing but the lane's own turn-end follows its turn.
            assert call == Call.TURN_END, step
        if call in PUBLIC_CALLS:
            rule_ = TRANSITIONS[Call(call)]
            assert is_allowed(Call(call), from_status, reason), step
            if call == Call.START:
                assert to_status in {rule_.to, *TURN_OUTCOMES}, step
            else:
                assert to_status == rule_.to, step
            if call == Call.STOP:
                assert close_reason == CloseReason.STOPPED, step
            elif to_status != Status.CLOSED:
                assert close_reason == "", step
        elif call == Call.TURN:
            assert is_allowed(Call.TURN, from_status), step
            assert (to_status, close_reason) == (Status.RUNNING, ""), step
        elif call == Call.TURN_END:
            assert from_status == Status.RUNNING, step
            assert to_status in TURN_OUTCOMES, step
            if to_status != Status.CLOSED:
                assert close_reason == "", step
        elif call == "recover":
            assert (from_status, to_status, close_reason) == (Status.RUNNING, Status.IDLE, ""), step
        elif call == Call.EXPIRE:
            assert from_status != Status.CLOSED, step
            assert (to_status, close_reason) == (Status.CLOSED, CloseReason.STALE), step
        else:
            pytest.fail(f"unknown call in {step}")
        status, reason, after_turn = to_status, close_reason, call == Call.TURN
    assert gaps == expected.crashes_ended, f"{where}: {gaps} gaps for {expected.crashes_ended}"
    if expected.crashed:
        assert status in WAKE_ON_MESSAGE, where
    else:
        assert (status, reason) == (process.status, process.close_reason), where


# Sized for about half a minute on a loaded 2-core machine (PostgreSQL takes about twice as
# long as SQLite); STATE_MACHINE_EXAMPLES=200 makes a deeper run.
MACHINE_SETTINGS = hypothesis_settings(
    max_examples=int(os.environ.get("STATE_MACHINE_EXAMPLES", "20")),
    stateful_step_count=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.mark.timeout(300)
def test_lifecycle_service_follows_the_transition_table(
    alice: Tenancy, settings: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "slow.yaml"
    script.write_text(
        yaml.safe_dump(
            [{"match": SLOW_WORD, "reply": SLOW_REPLY, "delay_per_delta": SLOW_DELAY_PER_DELTA}]
        )
    )
    settings.VANCETOPE_LLM_SCRIPT = str(script)
    tracker = LaneTracker()
    tracker.install(monkeypatch)
    started = time.monotonic()
    run_state_machine_as_test(
        lambda: LifecycleMachine(alice, tracker),  # type: ignore[arg-type,return-value]
        settings=MACHINE_SETTINGS,
    )
    print(f"state machine: {time.monotonic() - started:.1f}s")


def test_recovery_reports_one_wake_per_waiting_process(alice: Tenancy) -> None:
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
    )
    chat_id = session.chat_process_id
    assert chat_id is not None
    ThinkProcess.objects.filter(pk=chat_id).update(
        status=Status.RUNNING,
        lease_owner=DEAD_OWNER,
        lease_expires_at=timezone.now() + timedelta(hours=1),
        lease_fence=F("lease_fence") + 1,
    )
    steer.steer_process(chat_id, "first")
    steer.steer_process(chat_id, "second")
    report = recovery.recover_processes()
    assert report == recovery.RecoveryReport(recovered=1, expired=0, woken=1)
