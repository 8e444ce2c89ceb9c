"""Creating a process: from a recipe (named, or by the engine-name convention), in a session."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.utils import timezone

from engines.base import ParamsRefused, ThinkEngine
from engines.registry import all_engines, get_engine
from processes.actions import lifecycle
from processes.budgets import BUDGETS, BudgetExceeded, Placement, check_spawn
from processes.models import ThinkProcess
from recipes_app.services import effective_recipes, resolve_recipe
from recipes_app.strategies import ProjectDefinitions
from sessions_app.models import Session, SessionStatus
from vancetope.config.llm import check_model_choice, session_settings
from vancetope.errors import BadRequest, Conflict, NotFound
from vancetope.ids import parse_public_id
from vancetope.infra import fastsql
from vancetope.jsonbody import nesting_depth
from vancetope.observability import tracing
from vancetope.ratelimit import PROCESS_CREATE, hit
from vancetope.tenancy.models import Project

# A process's params are copied, stored and sent whole with every change of it: bounded, so each
# of those stays cheap and within Python's recursion limit (a copy nested 600 deep is not).
PARAMS_MAX_DEPTH = 32
PARAMS_MAX_BYTES = 64 * 1024


def check_params(params: dict[str, Any]) -> None:
    """Params nested deeper than PARAMS_MAX_DEPTH (objects and arrays) or larger than
    PARAMS_MAX_BYTES as JSON are a 400 naming `params` and the limit; a budget
    (processes/budgets.py: maxChildren, maxDepth, maxTokens, maxWallSeconds) that is not a
    positive number is a 400 naming it."""
    depth = nesting_depth(params)
    if depth > PARAMS_MAX_DEPTH:
        raise BadRequest(
            f"params: nested {depth} levels deep, at most {PARAMS_MAX_DEPTH} allowed",
            field="params",
        )
    size = len(json.dumps(params))
    if size > PARAMS_MAX_BYTES:
        raise BadRequest(
            f"params: {size} bytes as JSON, at most {PARAMS_MAX_BYTES} bytes allowed",
            field="params",
        )
    for name in BUDGETS:
        # A budget that is not a positive number was ignored (the tree ran unbounded by it):
        # a 400 naming it, as any other bad input.
        value = params.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
        ):
            raise BadRequest(
                f"params.{name}: must be a positive number, not {value!r}",
                field=f"params.{name}",
            )


def check_model_params(engine: ThinkEngine, params: dict[str, Any], session: Session) -> None:
    """A param that picks a model (the engine's `model_params`: zaphod's synthesizerModel,
    fallbackModel) must name one the session's settings configure (llm.model,
    llm.fallbackModel, llm.models, which admins set): the calls go to the operator's or the
    project's provider with its key. Any other is a 400 naming `params.<name>`. The settings
    are read only when such a param is there."""
    named = [name for name in engine.model_params if params.get(name) not in (None, "")]
    if not named:
        return
    cascade = session_settings(session.project, session.pk)
    for name in named:
        check_model_choice(cascade, f"params.{name}", params[name])


def create_process(
    session: Session,
    *,
    goal: str = "",
    engine: str | None = None,
    recipe: str | None = None,
    params: dict[str, Any] | None = None,
    parent: ThinkProcess | None = None,
    start: bool = True,
    requested_by: Any = None,
    spawned_by_turn: bool = False,
    run_owner: Any = None,
    traced: bool = True,
) -> ThinkProcess:
    """Spawn a process in the session; its recipe is copied into it (the snapshot). A child
    (`parent`) is placed in its parent's tree, within the tree's budgets (BudgetExceeded).
    Params the engine refuses (`prepare_params`: a vogon strategy that does not fit its
    schema) are a 400 naming the field, and nothing is created; so are params over the limits
    (check_params) and a param naming a model that is not configured (check_model_params).
    A process a person asked for (`requested_by`: WebSocket process-create, REST) counts
    against their process-create limit (VANCETOPE_RATE_PROCESS_CREATE): over it, a 429 and
    nothing is created. A child a turn spawns (`spawned_by_turn`) belongs to that
    turn until it commits. `run_owner`: the person a system run works for, who reads its
    processes (a child inherits its parent's). `traced=False` (a session's chat process): its
    turns are a trace each, not one trace."""
    if session.status == SessionStatus.CLOSED:
        # A SUSPENDED session takes new processes (a REST or `vance create` call while no
        # client is bound); they run without client tools until a client resumes it.
        raise Conflict(f"session {session.public_id} is {session.status}")
    check_params(params or {})
    if parent is not None and parent.session_id != session.pk:
        raise NotFound(f"parent process {parent.public_id} not found in {session.public_id}")
    if not recipe and not engine:
        # A client that names neither gets deep thinking (marvin), not a chat.
        recipe = settings.VANCETOPE_DEFAULT_PROCESS_RECIPE
    chosen = resolve_recipe(session.project, recipe=recipe, engine=engine)
    engine_impl = get_engine(chosen.engine)
    if engine_impl is None:
        raise NotFound(f"think engine {chosen.engine!r} is not registered")
    merged = {**chosen.params, **(params or {})}
    check_model_params(engine_impl, merged, session)
    try:
        engine_params = engine_impl.prepare_params(merged, ProjectDefinitions(session.project))
    except ParamsRefused as refused:
        raise BadRequest(str(refused), error="invalid", field=refused.field) from refused
    try:
        placement = check_spawn(parent) if parent is not None else Placement(depth=0, root_id=None)
    except BudgetExceeded as exc:
        if spawned_by_turn:
            raise  # the turn ends; the lane fails the spawning process
        raise exc.refusal() from exc
    if requested_by is not None:
        hit(PROCESS_CREATE, str(requested_by.pk))
    trace_parent, opened = (
        tracing.parent_for_new_process(
            {"gen_ai.agent.name": chosen.name, "vancetope.engine": engine_impl.name}
        )
        if traced
        else ("", None)
    )
    now = timezone.now()
    # One prepared INSERT (a parent's turn spawns many children), as the ORM would store it.
    process = fastsql.build(
        ThinkProcess,
        {
            "session_id": session.pk,
            "parent_id": parent.pk if parent is not None else None,
            "root_id": placement.root_id,
            "depth": placement.depth,
            "think_engine": engine_impl.name,
            "engine_version": engine_impl.version,
            "goal": goal,
            "recipe_name": chosen.name,
            "recipe_snapshot": chosen.snapshot(),
            "engine_params": engine_params,
            "created_at": now,
            "updated_at": now,
            "uncommitted_spawn": spawned_by_turn,
            "run_owner_id": (
                run_owner.pk if run_owner is not None else parent.run_owner_id if parent else None
            ),
            "trace_parent": trace_parent,
        },
    )
    fastsql.insert([process], returning_pk=True)
    process.session = session
    if parent is not None:
        process.parent = parent
    if opened is not None:
        opened.set_attribute("gen_ai.agent.id", process.public_id)
        tracing.end(opened)
    if start:
        return lifecycle.start_process(process.pk)
    return process


# The error word these 400s have always had (a schema error's is "invalid").
BAD_REQUEST = BadRequest.error


def check_spawn_names(project: Project, *, engine: str | None, recipe: str | None) -> None:
    """A think engine or recipe that does not exist here is a 400 naming the field and listing
    the known ones (a client's create, where the person typed the name)."""
    if engine and get_engine(engine) is None:
        known = ", ".join(sorted(impl.name for impl in all_engines()))
        raise BadRequest.naming(
            "thinkEngine", f"no think engine {engine!r}; known: {known}", error=BAD_REQUEST
        )
    if recipe:
        names = [row.name for row in effective_recipes(project)]
        if recipe not in names:
            raise BadRequest.naming(
                "recipe",
                f"no recipe {recipe!r} in project {project.public_id}; known: {', '.join(names)}",
                error=BAD_REQUEST,
            )


def create_for_user(
    user: Any,
    session_id: str,
    *,
    goal: str = "",
    engine: str | None = None,
    recipe: str | None = None,
    params: dict[str, Any] | None = None,
    start: bool = True,
) -> ThinkProcess:
    """A person's create over REST or the CLI: in one of their own sessions that is not
    CLOSED (another user's is a 404), with a wrong engine or recipe a 400 naming it."""
    try:
        pk = parse_public_id("sess", session_id, "session")
    except NotFound as exc:
        raise BadRequest.naming(
            "session", f"must be a session id like sess_12, not {session_id!r}", error=BAD_REQUEST
        ) from exc
    session = (
        Session.objects.filter(pk=pk, owner_id=user.pk).select_related("project").first()
        if user.is_authenticated
        else None
    )
    if session is None:
        raise NotFound(f"session {session_id} not found")
    check_spawn_names(session.project, engine=engine, recipe=recipe)
    return create_process(
        session,
        goal=goal,
        engine=engine,
        recipe=recipe,
        params=params,
        start=start,
        requested_by=user,
    )
