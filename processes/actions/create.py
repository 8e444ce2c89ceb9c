"""Creating a process: from a recipe (named, or by the engine-name convention), in a session."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone

from engines.base import ParamsRefused
from engines.registry import all_engines, get_engine
from processes.actions import lifecycle
from processes.budgets import Placement, check_spawn
from processes.models import ThinkProcess
from recipes_app.services import effective_recipes, resolve_recipe
from recipes_app.strategies import ProjectDefinitions
from sessions_app.models import Session, SessionStatus
from vancetope.errors import BadRequest, Conflict, NotFound
from vancetope.ids import parse_public_id
from vancetope.ratelimit import PROCESS_CREATE, hit
from vancetope.tenancy.models import Project


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
) -> ThinkProcess:
    """Spawn a process in the session; its recipe is copied into it (the snapshot). A child
    (`parent`) is placed in its parent's tree, within the tree's budgets (BudgetExceeded).
    Params the engine refuses (`prepare_params`: a vogon strategy that does not fit its
    schema) are a 400 naming the field, and nothing is created. A process a person asked for
    (`requested_by`: WebSocket process-create, REST) counts against their process-create
    limit (VANCETOPE_RATE_PROCESS_CREATE): over it, a 429 and nothing is created."""
    if session.status == SessionStatus.CLOSED:
        # A SUSPENDED session takes new processes (a REST or `vance create` call while no
        # client is bound); they run without client tools until a client resumes it.
        raise Conflict(f"session {session.public_id} is {session.status}")
    if parent is not None and parent.session_id != session.pk:
        raise NotFound(f"parent process {parent.public_id} not found in {session.public_id}")
    if not recipe and not engine:
        # A client that names neither gets deep thinking (marvin), not a chat.
        recipe = settings.VANCETOPE_DEFAULT_PROCESS_RECIPE
    chosen = resolve_recipe(session.project, recipe=recipe, engine=engine)
    engine_impl = get_engine(chosen.engine)
    if engine_impl is None:
        raise NotFound(f"think engine {chosen.engine!r} is not registered")
    try:
        engine_params = engine_impl.prepare_params(
            {**chosen.params, **(params or {})}, ProjectDefinitions(session.project)
        )
    except ParamsRefused as refused:
        error = BadRequest(str(refused), error="invalid")
        error.field = refused.field  # type: ignore[attr-defined]
        raise error from refused
    placement = check_spawn(parent) if parent is not None else Placement(depth=0, root_id=None)
    if requested_by is not None:
        hit(PROCESS_CREATE, str(requested_by.pk))
    now = timezone.now()
    process = ThinkProcess.objects.create(
        session=session,
        parent=parent,
        root_id=placement.root_id,
        depth=placement.depth,
        think_engine=engine_impl.name,
        engine_version=engine_impl.version,
        goal=goal,
        recipe_name=chosen.name,
        recipe_snapshot=chosen.snapshot(),
        engine_params=engine_params,
        created_at=now,
        updated_at=now,
    )
    if start:
        return lifecycle.start_process(process.pk)
    return process


def _field_error(field: str, message: str) -> BadRequest:
    error = BadRequest(f"{field}: {message}")
    error.field = field  # type: ignore[attr-defined]
    return error


def check_spawn_names(project: Project, *, engine: str | None, recipe: str | None) -> None:
    """A think engine or recipe that does not exist here is a 400 naming the field and listing
    the known ones (a client's create, where the person typed the name)."""
    if engine and get_engine(engine) is None:
        known = ", ".join(sorted(impl.name for impl in all_engines()))
        raise _field_error("thinkEngine", f"no think engine {engine!r}; known: {known}")
    if recipe:
        names = [row.name for row in effective_recipes(project)]
        if recipe not in names:
            raise _field_error(
                "recipe",
                f"no recipe {recipe!r} in project {project.public_id}; known: {', '.join(names)}",
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
        raise _field_error(
            "session", f"must be a session id like sess_12, not {session_id!r}"
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
