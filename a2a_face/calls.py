"""What each A2A method does, synchronously (the handler runs these in a worker thread): check
its input, then call the one service function REST and MCP call for the same use case.

| method                    | service                                                        |
| ------------------------- | -------------------------------------------------------------- |
| message without a task id | `create_from_tool_client`: the agent's recipe, the text a goal |
| message with a task id    | `steer_as`: the person's message to that process               |
| tasks/get                 | `queries.get_readable_process`                                 |
| tasks/cancel              | `lifecycle.stop_process` (with its children)                   |
| tasks/list                | `queries.readable_processes`                                   |

A process is a task of an agent when it runs the agent's recipe in the agent's project and the
person may read it: any other id, another tenant's included, is not found. A new task runs in
the session the message names as its context, or in the person's A2A session of the project
(client type `a2a`, no chat, opened on first use).
"""

from __future__ import annotations

from typing import Any

from a2a.types.a2a_pb2 import ListTasksResponse, Task

from a2a_face.agents import Agent
from a2a_face.tasks import task_of
from processes import queries
from processes.actions import lifecycle
from processes.actions.steer import steer_as
from processes.actions.tool_clients import create_from_tool_client
from processes.models import ThinkProcess
from sessions_app.models import ClientType, Session, SessionStatus
from vancetope.errors import BadRequest, NotFound
from vancetope.ids import parse_public_id

MAX_PAGE = 100
DEFAULT_PAGE = 20


def agent_process(user: Any, agent: Agent, task_id: str, field: str = "id") -> ThinkProcess:
    """The person's process `task_id` of this agent; any other is not found."""
    if not task_id:
        raise BadRequest.naming(field, "name the task, tp_N")
    process = queries.get_readable_process(user, parse_public_id("tp", task_id, "task"))
    if process.recipe_name != agent.recipe or process.session.project.public_id != agent.project_id:
        raise NotFound(f"task {task_id!r} not found")
    return process


def context_session(user: Any, agent: Agent, context_id: str) -> str:
    """The session a new task's context names: one of the person's, open, of this agent's
    project."""
    try:
        pk = parse_public_id("sess", context_id, "session")
    except NotFound:
        raise BadRequest.naming("message.contextId", "must be a context id like sess_12") from None
    session = Session.objects.filter(pk=pk, owner_id=user.pk).select_related("project").first()
    if session is None or session.status == SessionStatus.CLOSED:
        raise BadRequest.naming("message.contextId", f"no open context {context_id} of yours")
    if session.project.public_id != agent.project_id:
        raise BadRequest.naming(
            "message.contextId",
            f"{context_id} is of project {session.project.public_id}, not {agent.project_id}",
        )
    return session.public_id


def send(
    user: Any, agent: Agent, *, text: str, task_id: str, context_id: str, history: int
) -> tuple[Task, int]:
    """A message: a new task (a process started with the text as its goal), or a steer of
    the task it names; with the steer's pending seq (0 for a new task), which the reply waits
    for the process to read."""
    if task_id:
        process = agent_process(user, agent, task_id, field="message.taskId")
        if context_id and context_id != f"sess_{process.session_id}":
            raise BadRequest.naming("message.contextId", f"task {task_id} is of another context")
        steered, refused = steer_as(user, process.pk, [text])
        if refused is not None:
            raise refused
        seq = steered[0].message.seq
        return task_of(queries.load_process(process.pk), history, seq), seq
    session = context_session(user, agent, context_id) if context_id else None
    created = create_from_tool_client(
        user,
        session=session,
        project=agent.project_id,
        goal=text,
        recipe=agent.recipe,
        client_type=ClientType.A2A,
    )
    return task_of(queries.load_process(created.pk), history), 0


def get(user: Any, agent: Agent, *, task_id: str, history: int, answer_seq: int = 0) -> Task:
    """The task; `answer_seq`: the pending seq of an answer sent to it (see tasks.task_of)."""
    return task_of(agent_process(user, agent, task_id), history, answer_seq)


def cancel(user: Any, agent: Agent, *, task_id: str) -> Task:
    """Stop the task's process (and its children); a task already over is a 409."""
    process = agent_process(user, agent, task_id)
    queries.check_changeable(process, user)
    return task_of(lifecycle.stop_process(process.pk))


def list_tasks(
    user: Any, agent: Agent, *, context_id: str, page_size: int, page_token: str, history: int
) -> ListTasksResponse:
    """The agent's tasks the person may read, newest first; the page token is an offset."""
    size = page_size or DEFAULT_PAGE
    if not 1 <= size <= MAX_PAGE:
        raise BadRequest.naming("pageSize", f"must be between 1 and {MAX_PAGE}, not {size}")
    if page_token and not page_token.isdigit():
        raise BadRequest.naming("pageToken", "must be a token of an earlier page")
    offset = int(page_token or 0)
    rows = queries.readable_processes(user).filter(
        recipe_name=agent.recipe, session__project__slug=agent.project_id.removeprefix("proj_")
    )
    if context_id:
        try:
            rows = rows.filter(session_id=parse_public_id("sess", context_id, "session"))
        except NotFound:
            raise BadRequest.naming("contextId", "must be a context id like sess_12") from None
    total = rows.count()
    page = list(rows.order_by("-pk")[offset : offset + size])
    following = offset + len(page)
    return ListTasksResponse(
        tasks=[task_of(row, history) for row in page],
        next_page_token=str(following) if following < total else "",
        page_size=size,
        total_size=total,
    )
