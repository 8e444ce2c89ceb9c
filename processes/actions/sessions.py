"""Session use cases that reach the session's processes: create (with its chat process),
resume, close, suspend, disconnect, the idle sweep, a service's system session, the web chat a
visit of the web UI goes back into. The session's own rows (who sees it, its tools) are
sessions_app/services.py.

Every client — a person's terminal, the web UI, cron, a webhook — opens its session through
`create_session`; there is no second path for system clients.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from processes.actions import lifecycle
from processes.actions.create import create_process
from processes.models import ThinkProcess
from processes.states import Status
from recipes_app.models import Recipe
from recipes_app.services import resolve_recipe
from sessions_app import transitions
from sessions_app.events import events_since
from sessions_app.models import (
    HUMAN_CLIENT_TYPES,
    SYSTEM_CLIENT_TYPES,
    ClientType,
    DisconnectPolicy,
    Session,
    SessionEvent,
    SessionStatus,
    SuspendCause,
    SuspendPolicy,
)
from sessions_app.services import (
    FingerprintData,
    get_visible_session,
    offered_tools,
    system_user,
    tools_offered,
    visible_sessions,
)
from vancetope.errors import BadRequest, Conflict, Forbidden, NotFound
from vancetope.tenancy.models import Project, ProjectMembership
from vancetope.tenancy.services import get_visible_project
from vancetope.tools.client_bridge import GONE, fail_outstanding_client_calls
from vancetope.tools.models import ServiceSession

# What happens on disconnect when neither the client nor the recipe says: people's clients
# keep their work resumable; system clients run once and close.
DEFAULT_ON_DISCONNECT = {
    ClientType.CLI: DisconnectPolicy.SUSPEND,
    ClientType.DESKTOP: DisconnectPolicy.SUSPEND,
    ClientType.MOBILE: DisconnectPolicy.SUSPEND,
    ClientType.WEB: DisconnectPolicy.SUSPEND,
    ClientType.CRON: DisconnectPolicy.CLOSE,
    ClientType.WEBHOOK: DisconnectPolicy.CLOSE,
    ClientType.BRAIN_LINKER: DisconnectPolicy.CLOSE,
    ClientType.WORKFLOW: DisconnectPolicy.CLOSE,
    # An MCP client holds no connection: its processes run until stopped.
    ClientType.MCP: DisconnectPolicy.KEEP_OPEN,
    # Another agent over A2A holds no connection either: its tasks run until they settle.
    ClientType.A2A: DisconnectPolicy.KEEP_OPEN,
    # A service's session has no client to lose; the idle sweep suspends it.
    ClientType.SERVICE: DisconnectPolicy.KEEP_OPEN,
}

# What a suspended session does to its processes when neither the client nor the recipe says:
# the clients that carry client tools (the vance CLI, a desktop app) suspend every open
# process, as their tools (shell, files) went with them, and each resumes with the session (or
# is marked contextDrift when the client comes back in another directory); every other client
# suspends only its chat, so a closed tab does not freeze a deep think.
CASCADING_CLIENTS = frozenset({ClientType.CLI, ClientType.DESKTOP})


def default_on_suspend(client_type: str) -> str:
    return SuspendPolicy.SUSPEND_ALL if client_type in CASCADING_CLIENTS else SuspendPolicy.KEEP


def create_session(
    user: Any,
    *,
    client_type: str,
    project_id: str,
    fingerprint: FingerprintData | None = None,
    on_disconnect: str | None = None,
    on_suspend: str | None = None,
    recipe: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    system: bool = False,
    chat: bool = True,
    display_name: str = "",
    idle_timeout: int | None = None,
) -> Session:
    """Open a session and start its chat process from the chat recipe. A system run's session
    (`chat=False`) has none: a system client brings no chat, its processes
    are the run's own."""
    project = get_visible_project(user, project_id)
    is_human = client_type in HUMAN_CLIENT_TYPES
    if client_type in SYSTEM_CLIENT_TYPES and not system:
        raise Forbidden(
            f"clientType {client_type}: a system client's session is opened by the Brain "
            f"(cron jobs, webhooks, workflow runs, the brain linker); a person's client is one "
            f"of {', '.join(sorted(HUMAN_CLIENT_TYPES))}"
        )
    chat_recipe = _chat_recipe(project, recipe, is_human) if chat else None
    policy = (
        on_disconnect
        or (chat_recipe.params.get("onDisconnect") if chat_recipe is not None else None)
        or DEFAULT_ON_DISCONNECT[ClientType(client_type)]
    )
    fp = fingerprint or FingerprintData(machine_id="")
    session = Session(
        owner=user,
        project=project,
        client_type=client_type,
        is_human=is_human,
        system=system,
        on_disconnect=policy,
        on_suspend=on_suspend
        or (chat_recipe.params.get("onSuspend") if chat_recipe is not None else None)
        or default_on_suspend(client_type),
        machine_id=fp.machine_id,
        working_dir=fp.working_dir,
        user_home=fp.user_home,
        os_user=fp.os_user,
        client_tools=tools or [],
        display_name=display_name,
    )
    if idle_timeout is not None:
        session.idle_timeout = idle_timeout
    if chat_recipe is None:
        # One statement, in the caller's transaction if there is one (a cron firing's claim).
        session.save(force_insert=True)
        return session
    with transaction.atomic():
        session.save(force_insert=True)
        chat_process = create_process(session, recipe=chat_recipe.name, start=False, traced=False)
        session.chat_process = chat_process
        session.save(update_fields=["chat_process"])
    lifecycle.start_process(chat_process.pk)
    session.refresh_from_db()
    return session


def _chat_recipe(project: Project, recipe: str | None, is_human: bool) -> Recipe:
    if recipe:
        return resolve_recipe(project, recipe=recipe, engine=None)
    engine = (
        settings.VANCETOPE_SESSION_DEFAULT_CHAT_ENGINE
        if is_human
        else settings.VANCETOPE_SYSTEM_SESSION_CHAT_ENGINE
    )
    return resolve_recipe(project, recipe=None, engine=engine)


@dataclass(frozen=True)
class Resumed:
    session: Session
    processes: list[ThinkProcess]
    missed: list[SessionEvent]


def resume_session(
    user: Any,
    session_id: int,
    fingerprint: FingerprintData,
    since_seq: int | None,
    *,
    tools: list[dict[str, Any]] | None = None,
) -> Resumed:
    """Bind a client to an existing session, subject to the fingerprint policy. `tools`: what
    the client offers, bound with it (as `tools-register` right after would, without a moment
    in which the session is bound and offers nothing)."""
    session = get_visible_session(user, session_id)
    if session.status == SessionStatus.CLOSED:
        raise Conflict(f"session {session.public_id} is CLOSED")
    # A web session's machine id names the browser that opened it, which holds nothing of the
    # session (no client tools, no directory): any browser of its owner may go back into it.
    bound_to_machine = session.client_type != ClientType.WEB
    if bound_to_machine and session.machine_id and fingerprint.machine_id != session.machine_id:
        raise Conflict(
            f"session {session.public_id} belongs to another machine; create a new session",
            error="fingerprint-mismatch",
        )
    drift = bool(session.working_dir) and fingerprint.working_dir != session.working_dir
    offered = offered_tools(tools or [])
    # The fingerprint stored at the first bind stays the reference: a client that comes back
    # to the original directory after a drifted one finds its processes as it left them.
    bind = {
        "working_dir": session.working_dir or fingerprint.working_dir,
        "user_home": session.user_home or fingerprint.user_home,
        "os_user": session.os_user or fingerprint.os_user,
        "last_activity_at": timezone.now(),
        # A new bind: the socket that held the session before no longer applies its
        # disconnect policy to it (disconnect_session).
        "binding": F("binding") + 1,
        # The tools of the client that left are not this one's: it offers its own.
        "client_tools": offered,
    }
    if not _bind(session, bind):
        raise Conflict(
            f"session {session.public_id} changed meanwhile; try again", error="session-changed"
        )
    # A task that waits for one of them goes on (processes/actions/client_waits.py).
    tools_offered(session, offered)
    suspended = session.processes.filter(status=Status.SUSPENDED)
    if drift:
        # Client tools would now point at another directory: the user decides per process.
        suspended.update(context_drift=True)
    else:
        for process_id in suspended.values_list("pk", flat=True):
            lifecycle.resume_process(process_id)
    session.refresh_from_db()
    missed = events_since(session.pk, since_seq) if since_seq is not None else []
    return Resumed(session, list(session.processes.order_by("pk")), missed)


def latest_web_chat(user: Any, project_id: str | None = None) -> Session | None:
    """The web chat a plain visit of the interactive page goes back into, so that a visit does
    not leave one more idle chat process behind: the person's own web session (not a system
    one), OPEN (another tab holds it, or its socket went without a word) or SUSPENDED, whose
    chat process is not CLOSED, the latest activity first; in `project_id` when given (one the
    person does not see is a 400 naming `project`). None when there is none."""
    rows = visible_sessions(user).filter(
        client_type=ClientType.WEB,
        system=False,
        status__in=[SessionStatus.OPEN, SessionStatus.SUSPENDED],
        chat_process__isnull=False,
    )
    if project_id is not None:
        try:
            project = get_visible_project(user, project_id)
        except NotFound as exc:
            raise BadRequest.naming("project", exc.message) from exc
        rows = rows.filter(project=project)
    return (
        rows.exclude(chat_process__status=Status.CLOSED)
        .order_by("-last_activity_at", "-pk")
        .first()
    )


def _bind(session: Session, bind: dict[str, Any], attempts: int = 3) -> bool:
    """Write a resume's bind: SUSPENDED → OPEN, or on an OPEN session (another socket of the
    same client, a reloaded page) the bind alone, on the status it was read in. A disconnect
    that suspends the session meanwhile is met by reading it again."""
    for _ in range(attempts):
        if session.status == SessionStatus.SUSPENDED:
            if transitions.apply(session, transitions.SessionCall.RESUME, changes=bind):
                return True
        elif session.status == SessionStatus.OPEN:
            if Session.objects.filter(pk=session.pk, status=SessionStatus.OPEN).update(**bind):
                return True
        else:
            raise Conflict(f"session {session.public_id} is {session.status}")
        session.refresh_from_db(fields=["status"])
    return False


def close_session(session_id: int) -> Session:
    """Close the session: every open process is stopped."""
    session = Session.objects.get(pk=session_id)
    if session.status == SessionStatus.CLOSED:
        return session
    for process_id in session.processes.exclude(status=Status.CLOSED).values_list("pk", flat=True):
        try:
            lifecycle.stop_process(process_id)
        except Conflict:
            continue  # closed meanwhile
    session.refresh_from_db()
    if session.status != SessionStatus.CLOSED:
        transitions.apply(session, transitions.SessionCall.CLOSE)
    session.refresh_from_db()
    return session


def suspend_session(session_id: int, cause: SuspendCause, binding: int | None = None) -> Session:
    """Suspend the session and its chat process; with `on_suspend` SUSPEND_ALL (the default
    of the clients that carry client tools), every process of it that can be suspended. With
    KEEP (every other client's default) the long-lived work the person started from the
    session keeps running: closing a tab does not freeze a deep think. `binding`:
    only while the session is still at that bind of a client (a disconnect's)."""
    session = Session.objects.get(pk=session_id)
    if session.status != SessionStatus.OPEN:
        return session
    if not transitions.apply(
        session, transitions.SessionCall.SUSPEND, cause=cause, binding=binding
    ):
        return Session.objects.get(pk=session_id)
    open_processes = ThinkProcess.objects.filter(session_id=session_id).exclude(
        status__in=[Status.INIT, Status.CLOSED, Status.SUSPENDED]
    )
    if session.on_suspend != SuspendPolicy.SUSPEND_ALL:
        open_processes = open_processes.filter(pk=session.chat_process_id or 0)
    suspended: list[int] = []
    for process_id in open_processes.values_list("pk", flat=True):
        try:
            lifecycle.suspend_process(process_id)
        except Conflict:
            continue  # its status changed meanwhile; suspend is then not needed
        suspended.append(process_id)
    session = Session.objects.get(pk=session_id)
    if binding is not None and session.binding != binding and suspended:
        # A client resumed the session while its processes were being suspended: the resume
        # found them not suspended yet, so they are resumed here, as it would have.
        for process_id in suspended:
            try:
                lifecycle.resume_process(process_id)
            except Conflict:
                continue  # moved on meanwhile (the client's own resume, a stop)
    return session


def disconnect_session(
    session_id: int,
    cause: SuspendCause = SuspendCause.DISCONNECT,
    binding: int | None = None,
    *,
    calls_owed: bool = True,
) -> Session:
    """The bound client went away (or the server stops): apply the on_disconnect property.
    `binding`: the bind of the socket that left (Session.binding); if a client has resumed
    the session since (a reloaded page's new socket), nothing is changed. `calls_owed`:
    whether the calls the client still owes fail now (not after a crash: nobody waits for
    them, and whether the client ran them is not known; their retried turns ask)."""
    held = Session.objects.filter(pk=session_id)
    if binding is not None:
        held = held.filter(binding=binding)
    session = held.first()
    if session is None:
        return Session.objects.get(pk=session_id)
    # The calls it still owes fail now. Its tools went with it: no pool offers them, as no
    # client is bound to a suspended or closed session; their declarations stay, so a turn
    # that calls one (a cron continuation, a retried turn) waits BLOCKED for a client, naming
    # the tool, instead of being told there is no such tool. A session that stays open
    # (KEEP_OPEN) would still look bound: there they are taken away.
    if calls_owed:
        fail_outstanding_client_calls(session_id, GONE)
    if session.status != SessionStatus.OPEN:
        return session
    if session.on_disconnect == DisconnectPolicy.CLOSE:
        return close_session(session_id)
    if session.on_disconnect == DisconnectPolicy.SUSPEND:
        return suspend_session(session_id, cause, binding)
    held.update(client_tools=[])
    session.refresh_from_db()
    return session


def disconnect_dead_clients() -> int:
    """At the start of a Brain whose sockets all lived in its own OS process (the embedded
    runtime), after a stop that closed none of them (a crash): each session a socket held gets
    the disconnect policy a clean shutdown would have applied, so that no turn takes it for
    bound and sends a client tool call to nobody. Returns how many."""
    # A person's clients hold sockets; system clients and MCP or A2A tool clients hold none.
    held = Session.objects.filter(status=SessionStatus.OPEN, client_type__in=HUMAN_CLIENT_TYPES)
    count = 0
    for session_id in held.values_list("pk", flat=True):
        disconnect_session(session_id, SuspendCause.SHUTDOWN, calls_owed=False)
        count += 1
    return count


def suspend_idle_sessions(now: datetime | None = None) -> int:
    """The idle sweep: apply on_idle to every open session without activity for its
    idle_timeout. Returns how many sessions were suspended or closed."""
    now = now or timezone.now()
    candidates = Session.objects.filter(status=SessionStatus.OPEN).exclude(
        on_idle=DisconnectPolicy.KEEP_OPEN
    )
    handled = 0
    for session_id, last_activity, idle_timeout, on_idle in candidates.values_list(
        "pk", "last_activity_at", "idle_timeout", "on_idle"
    ):
        if last_activity + timedelta(seconds=idle_timeout) > now:
            continue
        if on_idle == DisconnectPolicy.CLOSE:
            close_session(session_id)
        else:
            suspend_session(session_id, SuspendCause.IDLE)
        handled += 1
    return handled


def system_session(project: Project, service: str) -> Session:
    """The system session of a service engine in a project (one per tenant, project and
    service), made when its first job comes (or reopened): opened through `create_session`, as
    every client's session is. Client type `service`, owner `_system`, shown as `_<service>`;
    no chat process (the service's processes are its own); suspended by the idle sweep after
    VANCETOPE_SERVICE_SESSION_IDLE_SECONDS, and a suspension keeps its running processes
    (`onSuspend: KEEP`)."""
    link = (
        ServiceSession.objects.select_related("session")
        .filter(project=project, service=service)
        .first()
    )
    if link is not None and link.session.status == SessionStatus.OPEN:
        return link.session
    user = system_user()
    ProjectMembership.objects.get_or_create(user=user, project=project)
    if link is not None and link.session.status == SessionStatus.SUSPENDED:
        return resume_session(user, link.session.pk, FingerprintData(machine_id=""), None).session
    session = create_session(
        user,
        client_type=ClientType.SERVICE,
        project_id=project.public_id,
        on_disconnect=DisconnectPolicy.KEEP_OPEN,
        on_suspend=SuspendPolicy.KEEP,
        system=True,
        chat=False,
        display_name=f"_{service}",
        idle_timeout=int(settings.VANCETOPE_SERVICE_SESSION_IDLE_SECONDS),
    )
    ServiceSession.objects.update_or_create(
        project=project, service=service, defaults={"session": session}
    )
    return session
