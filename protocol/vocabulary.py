"""The protocol's vocabulary: the values of a status, a client type, a policy, as the wire
(docs/protocol.md) spells them. The frame models here and the domain's models and status tables
(processes/states.py, sessions_app/models.py, recipes_app/models.py) use these same classes, so
the protocol depends on no app."""

from __future__ import annotations

from typing import Any

from django.db import models


class Status(models.TextChoices):
    INIT = "INIT"  # created, engine.start not yet called
    RUNNING = "RUNNING"  # a lifecycle call or turn is running in the lane
    IDLE = "IDLE"  # between turns, pending queue empty; a new message wakes it
    BLOCKED = "BLOCKED"  # waiting for an inbox answer; a new message wakes it
    PAUSED = "PAUSED"  # paused by the user; waits for resume
    SUSPENDED = "SUSPENDED"  # halted by the system; waits for resume
    CLOSED = "CLOSED"  # terminal; see close_reason


class CloseReason(models.TextChoices):
    DONE = "DONE"  # the goal was reached
    STOPPED = "STOPPED"  # stopped by the user, a parent or a session close
    STALE = "STALE"  # engine gone or its version incompatible; never resumed automatically
    FAILED = "FAILED"  # the engine failed and its retries are exhausted


class RecipeScope(models.TextChoices):
    BUNDLED = "bundled"  # shipped in recipes_app/recipes.yaml, same for every tenant
    TENANT = "tenant"  # defined for one tenant, overrides bundled
    PROJECT = "project"  # defined for one project, overrides tenant and bundled


class RecipeCategory(models.TextChoices):
    USER = "user"  # spawned by people and their chat engines; listed to users
    SERVICE = "service"  # spawned by the system (e.g. agrajag); hidden from user listings


class ClientType(models.TextChoices):
    CLI = "cli"  # the vance terminal client; brings shell, filesystem and git tools
    DESKTOP = "desktop"  # desktop app; brings local tools
    MOBILE = "mobile"  # phone; few tools, short sessions
    WEB = "web"  # browser in interactive mode; no local tools
    CRON = "cron"  # scheduled system client
    WEBHOOK = "webhook"  # system client opened by an incoming webhook
    BRAIN_LINKER = "brain_linker"  # internal knowledge-graph analysis client
    WORKFLOW = "workflow"  # system client of a workflow run started over REST
    MCP = "mcp"  # a person's MCP client (an IDE, a desktop assistant); no chat, no local tools
    # The system session of one service engine (agrajag) in one project: no chat, short idle.
    SERVICE = "service"
    A2A = "a2a"  # another agent, over A2A (a2a_face/); no chat, no local tools


class SessionStatus(models.TextChoices):
    OPEN = "OPEN"  # a client is (or may be) bound; processes may run
    SUSPENDED = "SUSPENDED"  # halted by the system; resumable by the same client fingerprint
    CLOSED = "CLOSED"  # terminal; all processes stopped


class SuspendCause(models.TextChoices):
    DISCONNECT = "DISCONNECT"  # the client went away and on_disconnect is SUSPEND
    IDLE = "IDLE"  # the idle sweep found no activity for idle_timeout
    SHUTDOWN = "SHUTDOWN"  # the Brain was shut down
    MANUAL = "MANUAL"  # an operator suspended it


class DisconnectPolicy(models.TextChoices):
    SUSPEND = "SUSPEND"  # suspend the session and cascade suspend to its processes
    KEEP_OPEN = "KEEP_OPEN"  # keep processes running until the idle sweep suspends
    CLOSE = "CLOSE"  # close the session and stop its processes


class SuspendPolicy(models.TextChoices):
    """What a session's suspension does to its processes (docs/architecture.md, Sessions)."""

    # The chat process suspends; the work it started (deep thinks, workers, processes created
    # in the session) keeps running, and its reports and questions wait for the chat's resume.
    KEEP = "KEEP"
    # Every open process of the session suspends with it.
    SUSPEND_ALL = "SUSPEND_ALL"


def iso(value: Any) -> str | None:
    """A time as the wire spells it: ISO 8601 in UTC with a `Z` (None stays None)."""
    return value.isoformat().replace("+00:00", "Z") if value else None
