"""A process as an A2A task: its id (tp_N), its context (the session, sess_N), its state, the
message that goes with the state, its result as an artifact, its conversation as history.

| process                                         | task state      | status message        |
| ----------------------------------------------- | --------------- | --------------------- |
| INIT                                            | submitted       |                       |
| RUNNING; IDLE with messages or children at work | working         |                       |
| PAUSED, SUSPENDED                               | working         | says so               |
| IDLE, nothing left to do (a chat's answer)      | input-required  | its last answer       |
| BLOCKED (a question in the inbox, an event)     | input-required  | what it waits for     |
| CLOSED/DONE                                     | completed       | its report (artifact) |
| CLOSED/STOPPED                                  | canceled        |                       |
| CLOSED/FAILED, CLOSED/STALE                     | failed          | its last error        |

A task that is input-required takes the next message of the same task as a steer; one that is
completed, canceled or failed takes no more. The reply to such an answer is the state the answer
led to: until the process has read the answer, the task is working (`task_of`'s `answer_seq`),
never the input-required it answered.
"""

from __future__ import annotations

from dataclasses import dataclass

from a2a.types.a2a_pb2 import Artifact, Message, Part, Role, Task, TaskState, TaskStatus

from processes.actions.reports import last_reply, last_result
from processes.models import ConversationMessage, PendingMessage, ThinkProcess
from processes.states import CloseReason, Status

# States after which the task is over, and those in which it waits for the client: a blocking
# send and a stream end at either.
TERMINAL = frozenset(
    {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_FAILED}
)
SETTLED = TERMINAL | {TaskState.TASK_STATE_INPUT_REQUIRED}
CLOSED_STATES = {
    CloseReason.DONE: TaskState.TASK_STATE_COMPLETED,
    CloseReason.STOPPED: TaskState.TASK_STATE_CANCELED,
    CloseReason.FAILED: TaskState.TASK_STATE_FAILED,
    CloseReason.STALE: TaskState.TASK_STATE_FAILED,
}
ROLES = {"user": Role.ROLE_USER, "assistant": Role.ROLE_AGENT}
FRESH_FIELDS = [
    "status",
    "close_reason",
    "next_pending_seq",
    "consumed_count",
    "last_error",
    "updated_at",
]
RESULT_ARTIFACT = "result"


@dataclass(frozen=True)
class Seen:
    """What a stream compares between two reads: a new status message is a new event."""

    state: int
    text: str


def task_state(process: ThinkProcess, children_at_work: bool) -> int:
    if process.status == Status.CLOSED:
        return CLOSED_STATES.get(CloseReason(process.close_reason), TaskState.TASK_STATE_FAILED)
    if process.status == Status.INIT:
        return TaskState.TASK_STATE_SUBMITTED
    if process.status == Status.BLOCKED:
        return TaskState.TASK_STATE_INPUT_REQUIRED
    if process.status == Status.IDLE and not process.waiting and not children_at_work:
        return TaskState.TASK_STATE_INPUT_REQUIRED
    return TaskState.TASK_STATE_WORKING


def read_fresh(process: ThinkProcess) -> tuple[ThinkProcess, bool]:
    """The process as it is now, and whether a child of it is still at work (a marvin waiting
    for its workers rests IDLE with nothing pending: it is still at work). The children are
    read first: a child closes in the same commit that leaves its report with the parent, so
    a row read after "no child open" already counts that report as pending (or done)."""
    children_at_work = process.children.exclude(status=Status.CLOSED).exists()
    process.refresh_from_db(fields=FRESH_FIELDS)
    return process, children_at_work


def unread(process: ThinkProcess, seq: int) -> bool:
    """Whether the process has still to read its pending message `seq` (one unsent since is
    never read: not waited for)."""
    if seq <= 0:
        return False
    return PendingMessage.objects.filter(
        process_id=process.pk, seq=seq, consumed=False, undone_at__isnull=True
    ).exists()


def status_text(process: ThinkProcess, state: int) -> str:
    if state == TaskState.TASK_STATE_COMPLETED or process.status == Status.BLOCKED:
        return last_result(process) or ""
    if state == TaskState.TASK_STATE_FAILED:
        return process.last_error or last_result(process) or "the process failed"
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        return last_reply(process)
    if process.status in (Status.PAUSED, Status.SUSPENDED):
        return f"the process is {process.status}; it goes on once it is resumed"
    return ""


def task_of(process: ThinkProcess, history_length: int = 0, answer_seq: int = 0) -> Task:
    """The task of a process (read fresh), with its last `history_length` messages.
    `answer_seq`: the pending message of a client's answer to the task; while the process has
    not read it, the task is working, not the input-required that the answer answered."""
    process, children_at_work = read_fresh(process)
    state = task_state(process, children_at_work)
    if state == TaskState.TASK_STATE_INPUT_REQUIRED and unread(process, answer_seq):
        state = TaskState.TASK_STATE_WORKING
    text = status_text(process, state)
    task = Task(id=process.public_id, context_id=f"sess_{process.session_id}")
    task.status.CopyFrom(status_of(process, state, text))
    if state == TaskState.TASK_STATE_COMPLETED and text:
        task.artifacts.append(
            Artifact(artifact_id=RESULT_ARTIFACT, name=RESULT_ARTIFACT, parts=[Part(text=text)])
        )
    task.history.extend(history_of(process, history_length))
    task.metadata["vancetope"] = {
        "status": process.status,
        "closeReason": process.close_reason or None,
        "recipe": process.recipe_name,
        "thinkEngine": process.think_engine,
    }
    return task


def status_of(process: ThinkProcess, state: int, text: str) -> TaskStatus:
    status = TaskStatus(state=state)  # type: ignore[arg-type]
    status.timestamp.FromDatetime(process.updated_at)
    if text:
        status.message.CopyFrom(
            Message(
                message_id=f"{process.public_id}-status-{process.consumed_count}",
                role=Role.ROLE_AGENT,
                task_id=process.public_id,
                context_id=f"sess_{process.session_id}",
                parts=[Part(text=text)],
            )
        )
    return status


def history_of(process: ThinkProcess, length: int) -> list[Message]:
    """The last `length` messages of the person and the agent, oldest first: the goal (the
    message that made the task), then the conversation's (tool calls and their results are
    the process's own business)."""
    if length <= 0:
        return []
    rows = (
        ConversationMessage.objects.filter(
            process_id=process.pk, undone_at__isnull=True, role__in=list(ROLES)
        )
        .exclude(content="")
        .order_by("-index")[:length]
    )
    said = [(row.index, row.role, row.content) for row in sorted(rows, key=lambda r: r.index)]
    opens_with_goal = bool(said) and said[0][0] == 0 and said[0][2] == process.goal
    if process.goal and not opens_with_goal:
        said.insert(0, (-1, "user", process.goal))
    return [
        Message(
            message_id=f"{process.public_id}-" + (f"m{index}" if index >= 0 else "goal"),
            role=ROLES[role],
            task_id=process.public_id,
            context_id=f"sess_{process.session_id}",
            parts=[Part(text=content)],
        )
        for index, role, content in said[-length:]
    ]


def seen(task: Task) -> Seen:
    parts = task.status.message.parts
    return Seen(task.status.state, parts[0].text if parts else "")
