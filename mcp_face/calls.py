"""What each MCP tool and resource does: parse its arguments, then call the one service
function REST calls for the same use case, with the same tenant scoping and the same errors.

Every function here is synchronous (it runs in a worker thread, see `mcp_face.tools`) and
answers a JSON-ready dict: the shapes of docs/protocol.md's objects, as REST answers them.
"""

from __future__ import annotations

from typing import Any

from inbox import services as inbox
from inbox.presenters import item_data
from processes import queries
from processes.actions import lifecycle
from processes.actions.reports import last_result
from processes.actions.steer import steer_as
from processes.actions.tool_clients import create_from_tool_client
from processes.presenters import process_data, process_detail
from processes.states import Status
from protocol.outbound import PendingData
from triggers.runs import system as runs
from vancetope.errors import BadRequest, NotFound
from vancetope.ids import parse_public_id
from vancetope.memory.scopes import person_reach
from vancetope.memory.search import Mode, search

# The most rows one list answers (newest first): an MCP client reads them into a model's
# context, so a page is small.
MAX_ROWS = 100


def _process_pk(value: str) -> int:
    return parse_public_id("tp", value, "process")


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_ROWS:
        raise BadRequest.naming("limit", f"must be between 1 and {MAX_ROWS}, not {limit}")
    return limit


# --- processes -----------------------------------------------------------------------------------


def process_create(
    user: Any,
    *,
    goal: str,
    recipe: str | None,
    params: dict[str, Any] | None,
    session: str | None,
    project: str | None,
) -> dict[str, Any]:
    process = create_from_tool_client(
        user, session=session, project=project, goal=goal, recipe=recipe, params=params
    )
    return process_data(process)


def process_list(
    user: Any, *, status: str | None, session: str | None, limit: int
) -> dict[str, Any]:
    rows = queries.readable_processes(user)
    if session:
        try:
            rows = rows.filter(session_id=parse_public_id("sess", session, "session"))
        except NotFound as exc:
            raise BadRequest.naming(
                "session", f"must be a session id like sess_12, not {session!r}"
            ) from exc
    if status:
        if status not in Status.values:
            raise BadRequest.naming("status", f"must be one of {', '.join(Status.values)}")
        rows = rows.filter(status=status)
    # The ordinary list: processes of service recipes are left out, as on every face.
    found = queries.in_category(rows, None).order_by("-pk")[: _limit(limit)]
    return {"processes": [process_data(row) for row in found]}


def process_get(user: Any, *, process: str, messages: int) -> dict[str, Any]:
    if not 0 <= messages <= MAX_ROWS:
        raise BadRequest.naming("messages", f"must be between 0 and {MAX_ROWS}, not {messages}")
    row = queries.get_readable_process(user, _process_pk(process))
    return {**process_detail(row, messages_limit=messages), "lastResult": last_result(row)}


def process_steer(user: Any, *, process: str, message: str) -> dict[str, Any]:
    if not message.strip():
        raise BadRequest.naming("message", "must not be empty")
    row = queries.get_visible_process(user, _process_pk(process))
    steered, refused = steer_as(user, row.pk, [message])
    if refused is not None:
        raise refused
    answer = PendingData(
        processId=row.public_id, pending=steered[0].pending, seq=steered[0].message.seq
    )
    return answer.model_dump()


LIFECYCLE = {
    "pause": lifecycle.pause_process,
    "resume": lifecycle.resume_process,
    "stop": lifecycle.stop_process,
}


def process_lifecycle(user: Any, *, call: str, process: str) -> dict[str, Any]:
    row = queries.get_visible_process(user, _process_pk(process))
    return process_data(LIFECYCLE[call](row.pk))


# --- inbox, workflows, memory --------------------------------------------------------------------


def inbox_list(
    user: Any, *, status: str | None, kind: str | None, process: str | None, limit: int
) -> dict[str, Any]:
    rows = inbox.filtered_items(user, status=status, kind=kind, process=process)
    return {"items": [item_data(item) for item in rows[: _limit(limit)]]}


def inbox_answer(user: Any, *, item: str, answer: dict[str, Any]) -> dict[str, Any]:
    answered = inbox.do_answer(user, item, answer)
    return {"item": item_data(answered.item), "delivered": answered.delivered}


def workflow_run(user: Any, *, workflow: str, values: dict[str, Any]) -> dict[str, Any]:
    started = runs.run_workflow(user, workflow, values)
    return {"process": process_data(started.process), "runId": started.run.public_id}


def memory_search(
    user: Any,
    *,
    query: str,
    k: int,
    scope: str | None,
    mode: str,
    project: str | None,
    session: str | None,
) -> dict[str, Any]:
    if not query.strip():
        raise BadRequest.naming("query", "must not be empty")
    try:
        chosen = Mode(mode)
    except ValueError:
        raise BadRequest.naming("mode", "must be hybrid, lexical or dense") from None
    reach = person_reach(user, project=project or "", session=session or "")
    # The search's refusals name their argument in `field` (and, as REST has it, `error`).
    return {"results": search(reach, query, k, scope=scope, mode=chosen)}
