"""Creating a process: from a recipe (named, or by the engine-name convention), in a session."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import timezone

from engines.base import ParamsRefused
from engines.registry import get_engine
from processes.actions import lifecycle
from processes.budgets import Placement, check_spawn
from processes.models import ThinkProcess
from recipes_app.services import resolve_recipe
from recipes_app.strategies import ProjectDefinitions
from sessions_app.models import Session, SessionStatus
from vancetope.errors import BadRequest, Conflict, NotFound
from vancetope.ratelimit import PROCESS_CREATE, hit


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
    if session.status != SessionStatus.OPEN:
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
