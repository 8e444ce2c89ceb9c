"""`ctx.tools`: the one invocation path for every kind of tool.

`invoke(name, arguments)` refuses a tool outside the process's pool and arguments that do not
match the tool's schema before anything runs; then runs the tool where it lives (server, the
session's client, an MCP server), records the call as a ToolCall row, and on failure runs the
synchronous checker, which queues ambiguous failures for agrajag. It never raises for a tool
problem: the engine gets a ToolResult with `ok=False` and a clear error to show its LLM.

This is a kernel: it knows the process it works for only as a `Caller`, and the session's
client as a `ClientSide`, each read through a callable the lane gives
(processes/lane/context_builder.py) when a tool first needs it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextlib import nullcontext
from typing import Any

import jsonschema
from django.db import transaction
from django.utils import timezone

from vancetope import failpoints
from vancetope.llm.base import LlmMessage, ToolCall, ToolSchema
from vancetope.observability import metrics, tracing
from vancetope.tools import catalogue as cat
from vancetope.tools import health, replay
from vancetope.tools.caller import Appender, Caller, ClientSide, EventOut
from vancetope.tools.checker import Classification, classify
from vancetope.tools.client_bridge import run_client_tool
from vancetope.tools.errors import AwaitingExternal, ClientToolRequired, ToolFailure
from vancetope.tools.manifest import ToolManifest
from vancetope.tools.mcp_client import McpFailure, get_mcp_manager
from vancetope.tools.models import (
    CallStatus,
    Location,
    McpServer,
    Safety,
)
from vancetope.tools.models import ToolCall as ToolCallRow
from vancetope.tools.registry import server_tools
from vancetope.tools.replay import CallJournal
from vancetope.tools.results import ToolResult, as_text, failed, jsonable, refused

log = logging.getLogger(__name__)


class ToolBox:
    """Built fresh with each context; the catalogue is read lazily (ford never pays for it)."""

    def __init__(
        self,
        caller: Callable[[], Caller],
        engine_default: Iterable[str],
        boundary: Callable[[], None],
        *,
        client: Callable[[], ClientSide],
        conversation: Appender | None = None,
        events: EventOut | None = None,
        on_new_diagnosis: Callable[[int], None] | None = None,
        user_client: Callable[[int, int], tuple[int, ClientSide] | None] | None = None,
        emit_to_session: Callable[[int, str, dict[str, Any]], Any] | None = None,
        health_revision: int | None = None,
        journal: CallJournal | None = None,
    ) -> None:
        # Read when a tool is first used (a turn without tools never needs it).
        self._caller_of = caller
        self._caller: Caller | None = None
        self._events = events
        self._engine_default = list(engine_default)
        self._boundary = boundary
        self._client_of = client
        self._conversation = conversation
        self._on_new_diagnosis = on_new_diagnosis
        # (project, user) -> the user's bound session and its client; and an event to a
        # session other than the process's (probe_as_user's client calls).
        self._user_client = user_client
        self._emit_to_session = emit_to_session
        # The tool health revision the lane's lease read (None: none was read, read them now).
        self._health_revision = health_revision
        self._pool: dict[str, ToolManifest] | None = None
        self._catalogue: dict[str, ToolManifest] | None = None
        self._client: ClientSide | None = None
        # Set by await_external: the turn ends BLOCKED once its result is answered.
        self.awaiting: AwaitingExternal | None = None
        # The journal of the turn attempt (None outside a turn): a retried turn's calls are
        # answered from it (vancetope/tools/replay.py).
        self._journal = journal

    # --- what the process may use ----------------------------------------------------------------

    @property
    def caller(self) -> Caller:
        if self._caller is None:
            self._caller = self._caller_of()
        return self._caller

    def _client_side(self) -> ClientSide:
        """The client as it is now (read once per context): it may have registered tools or
        gone away since the lane loaded the process."""
        if self._client is None:
            self._client = self._client_of()
        return self._client

    def catalogue(self) -> dict[str, ToolManifest]:
        if self._catalogue is None:
            project_id, client_tools = self.caller.project_id, self._client_side().tools
            patterns = [*self._engine_default, *self.caller.allowed_add]
            without_mcp = cat.build_catalogue(project_id, client_tools, with_mcp=False)
            if cat.pool_patterns_need_mcp(patterns, without_mcp):
                self._catalogue = cat.build_catalogue(project_id, client_tools)
            else:
                self._catalogue = without_mcp
        return self._catalogue

    def pool(self) -> dict[str, ToolManifest]:
        if self._pool is None:
            self._pool = cat.effective_pool(
                self.catalogue(),
                engine_default=self._engine_default,
                add=list(self.caller.allowed_add),
                remove=list(self.caller.allowed_remove),
                roles=list(self.caller.roles),
                client_bound=self._client_side().bound,
            )
        return self._pool

    def names(self) -> list[str]:
        return sorted(self.pool())

    def down_tools(self) -> Mapping[str, str]:
        return health.down_tools(self.caller.project_id, self._health_revision)

    def schemas(self, *, safety: str | None = None) -> list[ToolSchema]:
        """The pool as the LLM sees it; tools known to be down say so in their description."""
        offered = [
            (name, manifest)
            for name, manifest in sorted(self.pool().items())
            if safety is None or manifest.safety == safety
        ]
        if not offered:
            return []  # nothing to mark down: no query
        down = self.down_tools()
        return [manifest.schema(down=down.get(name, "")) for name, manifest in offered]

    def describe(self) -> list[dict[str, Any]]:
        down = self.down_tools()
        return [
            {**manifest.describe(), "down": name in down}
            for name, manifest in sorted(self.pool().items())
        ]

    # --- invoking --------------------------------------------------------------------------------

    def invoke(
        self, name: str, arguments: dict[str, Any], *, only_safety: str | None = None
    ) -> ToolResult:
        if self._events is not None:
            # Text the LLM streamed before asking for the tool reaches the client before the
            # tool's own events.
            self._events.store_held()
        manifest = self.pool().get(name)
        step = self._step(name, arguments, manifest)
        if step.answered is not None:
            return step.answered
        if manifest is None and only_safety is None and self._needs_absent_client(name):
            raise ClientToolRequired(name)
        if manifest is None or (only_safety is not None and manifest.safety != only_safety):
            why = "is not available to this process" if manifest is None else "is not a probe"
            return self._refuse(name, arguments, f"tool {name!r} {why}", manifest, step)
        try:
            jsonschema.validate(arguments, manifest.parameters)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(part) for part in exc.absolute_path) or "arguments"
            error = f"invalid arguments for {name}: {where}: {exc.message}"
            return self._refuse(name, arguments, error, manifest, step)
        except jsonschema.SchemaError as exc:
            error = f"tool {name} has a broken schema: {exc}"
            return self._refuse(name, arguments, error, manifest, step)
        return self._call(manifest, arguments, diagnose=True, step=step)

    def _step(
        self, name: str, arguments: dict[str, Any], manifest: ToolManifest | None
    ) -> replay.Step:
        """The call's step of the turn's journal: a retried turn's call that the journal
        answers, whatever the pool is now (vancetope/tools/replay.py)."""
        if self._journal is None:
            return replay.Step()
        return replay.step_of(self._journal, name, arguments, manifest)

    def _needs_absent_client(self, name: str) -> bool:
        """The tool is one of the session's client tools that this process's pool would offer
        if a client were bound, and none is: no refusal the LLM could work around, the task
        waits for a client (only computed on this refusal path)."""
        client = self._client_side()
        if client.bound:
            return False
        manifest = self.catalogue().get(name)
        if manifest is None or manifest.location != Location.CLIENT:
            return False
        pool = cat.effective_pool(
            {name: manifest},
            engine_default=self._engine_default,
            add=list(self.caller.allowed_add),
            remove=list(self.caller.allowed_remove),
            roles=list(self.caller.roles),
            client_bound=True,
        )
        return name in pool

    def _call(
        self,
        manifest: ToolManifest,
        arguments: dict[str, Any],
        *,
        diagnose: bool,
        session_id: int | None = None,
        step: replay.Step | None = None,
    ) -> ToolResult:
        """`session_id`: the session whose client runs a client tool (default: the
        process's own). `step`: its step of the turn's journal (a call to run again keeps
        its row)."""
        name = manifest.name
        step = step or replay.Step()
        if step.row is not None:
            row = replay.run_again(step.row)
        else:
            failpoints.reach("tool-starting")
            row = self._journaled(
                step,
                session_id=session_id or self.caller.session_id,
                tool=name,
                location=manifest.location,
                arguments=arguments,
                status=CallStatus.PENDING,
            )
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": row.public_id,
            # Where it runs: on the server, on the session's client, on an MCP server.
            "vancetope.tool.location": manifest.location,
        }
        with tracing.span(f"execute_tool {name}", attributes) as opened:
            result = self._attempt(manifest, arguments, row, diagnose=diagnose)
            if opened is not None and not result.ok:
                opened.set_attribute("error.type", result.classification or "failed")
        metrics.tool_call(name, manifest.location, "ok" if result.ok else "failed")
        return result

    def _journaled(self, step: replay.Step, **fields: Any) -> ToolCallRow:
        """A new ToolCall row of this process; in a turn, journaled at its step with it (both
        are stored, or neither)."""
        journal = self._journal
        in_turn = journal is not None and step.index >= 0
        key = journal.key(step.index) if journal is not None and in_turn else uuid.uuid4().hex
        with transaction.atomic() if in_turn else nullcontext():
            row = ToolCallRow.objects.create(
                process_id=self.caller.process_id, idempotency_key=key, **fields
            )
            if journal is not None and in_turn:
                journal.record_call(step.index, row.pk)
        return row

    def _attempt(
        self, manifest: ToolManifest, arguments: dict[str, Any], row: ToolCallRow, *, diagnose: bool
    ) -> ToolResult:
        name = manifest.name
        started = time.monotonic()
        try:
            data = self._run(manifest, arguments, row)
        except ToolFailure as exc:
            return self._failed(row, manifest, exc.message, exc.classification, diagnose)
        except McpFailure as exc:
            return self._failed(row, manifest, str(exc), "", diagnose)
        except Exception as exc:  # interrupts and lease loss (TurnControl) pass through
            log.exception("tool %s failed", name)
            return self._failed(row, manifest, f"{type(exc).__name__}: {exc}", "", diagnose)
        failpoints.reach("tool-ran")
        ToolCallRow.objects.filter(pk=row.pk).exclude(status=CallStatus.OK).update(
            status=CallStatus.OK, result=jsonable(data), finished_at=timezone.now()
        )
        failpoints.reach("tool-answered")
        log.info("tool %s ok in %.2fs", name, time.monotonic() - started)
        return ToolResult(True, as_text(data), data=data, call_id=row.public_id)

    def probe(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run a SAFE_PROBE tool of the project's catalogue (not only this pool) once, for
        diagnosis; a failing probe queues nothing."""
        manifest = cat.build_catalogue(self.caller.project_id, self._client_side().tools).get(name)
        step = self._step(name, arguments, manifest)
        if step.answered is not None:
            return step.answered
        if manifest is None or manifest.safety != Safety.SAFE_PROBE:
            why = "is unknown" if manifest is None else "is not SAFE_PROBE and is never probed"
            return self._refuse(name, arguments, f"tool {name!r} {why}", manifest, step)
        return self._call(manifest, arguments, diagnose=False, step=step)

    def answer(self, call: ToolCall, *, only_safety: str | None = None) -> ToolResult:
        """Invoke a call the LLM asked for and store the result (or error) in the
        conversation as the `tool` message answering it (`only_safety`: see `invoke`)."""
        result = self.invoke(call.name, call.arguments, only_safety=only_safety)
        if self._conversation is not None:
            self._conversation.append(
                LlmMessage(role="tool", content=result.content, tool_call_id=call.id)
            )
        if self.awaiting is not None and result.ok:
            raise self.awaiting
        return result

    def _run(self, manifest: ToolManifest, arguments: dict[str, Any], row: ToolCallRow) -> Any:
        if manifest.location == Location.SERVER:
            return server_tools()[manifest.name].run(self, arguments)
        # Only a tool that declares it may be repeated is told the call's key.
        key = row.idempotency_key if manifest.idempotent else ""
        if manifest.location == Location.CLIENT:
            if row.session_id != self.caller.session_id:
                emit = self._emitter_to(row.session_id)
                return run_client_tool(row, self._boundary, emit, key)
            return run_client_tool(row, self._boundary, self._emit, key)
        server = McpServer.objects.filter(pk=manifest.mcp_server_id or 0, enabled=True).first()
        if server is None:
            raise ToolFailure(
                f"MCP server of {manifest.name} not found", classification="not-found"
            )
        is_error, text, structured = get_mcp_manager().call_tool(
            server, manifest.remote_name, arguments, idempotency_key=key
        )
        if is_error:
            raise ToolFailure(text or f"MCP tool {manifest.name} reported an error")
        return text if text else structured

    def probe_as_user(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run a SAFE_PROBE tool once as the user this (service) process acts for: the tools
        of the user's bound client are known, and a client tool runs on that client (its
        call is a call of the user's session). A failing probe queues nothing."""
        user_id = self.caller.acting_user_id
        if user_id is None:
            return self._refuse(name, arguments, "this process acts for no user", None, None)
        found = self._user_client(self.caller.project_id, user_id) if self._user_client else None
        client_tools = found[1].tools if found is not None else []
        manifest = cat.build_catalogue(self.caller.project_id, client_tools).get(name)
        step = self._step(name, arguments, manifest)
        if step.answered is not None:
            return step.answered
        if manifest is None or manifest.safety != Safety.SAFE_PROBE:
            why = "is unknown" if manifest is None else "is not SAFE_PROBE and is never probed"
            return self._refuse(name, arguments, f"tool {name!r} {why}", manifest, step)
        session_id = (
            found[0] if found is not None and manifest.location == Location.CLIENT else None
        )
        return self._call(manifest, arguments, diagnose=False, session_id=session_id, step=step)

    def _emitter_to(self, session_id: int) -> Callable[[str, dict[str, Any]], None]:
        def emit(event: str, data: dict[str, Any]) -> None:
            if self._emit_to_session is None:
                raise ToolFailure(
                    "no client to send the call to", classification="disconnected-client"
                )
            self._emit_to_session(session_id, event, data)

        return emit

    def _emit(self, event: str, data: dict[str, Any]) -> None:
        if self._events is None:
            raise ToolFailure("no client to send the call to", classification="disconnected-client")
        self._events.emit(event, data)

    def _refuse(
        self,
        name: str,
        arguments: dict[str, Any],
        error: str,
        manifest: ToolManifest | None,
        step: replay.Step | None = None,
    ) -> ToolResult:
        log.warning("%s: refused call of %s: %s", self.caller.public_id, name, error)
        # A name outside the pool is the LLM's to choose: counted under one label, not its own.
        metrics.tool_call(
            name if manifest else "(unknown)", manifest.location if manifest else "", "refused"
        )
        classification = (
            Classification.NOT_ALLOWED if manifest is None else Classification.BAD_ARGUMENTS
        )
        row = self._journaled(
            step or replay.Step(),
            session_id=self.caller.session_id,
            tool=name,
            location=manifest.location if manifest else "",
            arguments=jsonable(arguments),
            status=CallStatus.REFUSED,
            error=error,
            classification=classification,
            finished_at=timezone.now(),
        )
        return refused(error, classification, row.public_id)

    def _failed(
        self,
        row: ToolCallRow,
        manifest: ToolManifest,
        error: str,
        classification: str,
        diagnose: bool,
    ) -> ToolResult:
        classification = classification or classify(error)
        ToolCallRow.objects.filter(pk=row.pk).update(
            error=error, classification=classification, finished_at=timezone.now()
        )
        # A timed-out or cancelled client call keeps its status (a late answer is refused).
        ToolCallRow.objects.filter(pk=row.pk, status=CallStatus.PENDING).update(
            status=CallStatus.FAILED
        )
        if (
            diagnose
            and classification == Classification.AMBIGUOUS
            and self.caller.category != "service"
        ):
            try:
                diagnosis, new = health.queue_diagnosis(self.caller, manifest.name, error)
                if new and self._on_new_diagnosis is not None:
                    self._on_new_diagnosis(diagnosis.pk)
            except Exception:
                # Diagnosis is a side effect: the engine still gets its tool error.
                log.exception("could not queue a diagnosis of %s", manifest.name)
        return failed(error, classification, row.public_id)
