"""The WebSocket consumer at /ws/brain/: parse, authorise, call one service, reply.

Events reach the socket through the session's channel-layer group. The consumer delivers them
in seq order, exactly once: a duplicate is dropped, and a gap (an event pushed before this socket
joined the group, or lost in transit) is filled from the database before the newer event goes out.
"""

from __future__ import annotations

import logging
from typing import Any

from autobahn.exception import Disconnected
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from pydantic import ValidationError

from engines.registry import all_engines
from processes import queries
from processes.actions import create, lifecycle
from processes.actions import steer as steering
from processes.models import ThinkProcess
from processes.presenters import process_data, process_detail
from recipes_app.api import recipe_data
from recipes_app.services import effective_recipes
from sessions_app import bound, services
from sessions_app.consumer_auth import RevocableSocket
from sessions_app.consumer_inbox import InboxFrames, in_frame
from sessions_app.consumer_memory import MemoryFrames
from sessions_app.consumer_spaces import SpaceFrames
from sessions_app.consumer_steers import SteerFrames, as_brain_error
from sessions_app.consumer_undo import UndoFrames
from sessions_app.consumer_workflows import WorkflowFrames
from sessions_app.events import events_since, group_name
from sessions_app.models import Session
from sessions_app.presenters import session_data
from sessions_app.protocol import inbound as p
from sessions_app.protocol import outbound as out
from sessions_app.service_calls import call_service
from vancetope.errors import BadRequest, BrainError, Conflict, TooLarge
from vancetope.ids import parse_public_id
from vancetope.jsonbody import parse_json
from vancetope.tenancy.services import get_visible_project
from vancetope.tools.client_bridge import accept_tool_result

log = logging.getLogger(__name__)

LIFECYCLE_REPLIES = {
    "process-start": ("start_process", "process-started"),
    "process-pause": ("pause_process", "process-paused"),
    "process-resume": ("resume_process", "process-resumed"),
    "process-stop": ("stop_process", "process-stopped"),
    "process-reset": ("reset_process", "process-reset"),
}


def fingerprint_of(model: p.Fingerprint | None) -> services.FingerprintData | None:
    if model is None:
        return None
    return services.FingerprintData(
        machine_id=model.machineId,
        working_dir=model.workingDir,
        user_home=model.userHome or "",
        os_user=model.osUser or "",
    )


class BrainConsumer(
    SteerFrames,
    InboxFrames,
    WorkflowFrames,
    UndoFrames,
    SpaceFrames,
    MemoryFrames,
    RevocableSocket,
    AsyncWebsocketConsumer,
):
    session_id: int | None = None
    last_seq = 0

    async def dispatch(self, message: dict[str, Any]) -> None:
        """As channels' own, without its hop to a thread to close old database connections
        before every message: this consumer never touches the database on the event loop, and
        its service calls (`call_service`) do that around each call themselves. At a few
        messages per streamed reply, the hop was a large part of a turn's cost."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)

    async def connect(self) -> None:
        self.user = self.scope.get("user")
        await self.accept()
        if self.user is None or not self.user.is_authenticated:
            await self.refuse()
            return
        await self.join_auth_groups()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """As channels' own, and the session's disconnect policy runs however the socket's
        application ends: also when it fails (a channel layer that lost Redis; the server
        then closes the socket with 1011) or is cancelled, where no disconnect() is called."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.leave_auth_groups()
            if self.session_id is not None:
                log.warning("socket of sess_%s ended without a disconnect", self.session_id)
                await self._leave_session()

    async def disconnect(self, code: int) -> None:
        # Steers the client sent are applied even if it left before their replies.
        await self._steers_applied()
        await self._spaces_done()
        await self.leave_auth_groups()
        await self._leave_session()

    async def _leave_session(self) -> None:
        """Apply the bound session's disconnect policy, once."""
        session_id, self.session_id = self.session_id, None
        if session_id is None:
            return
        bound.unbind(session_id)
        try:
            await self.channel_layer.group_discard(group_name(session_id), self.channel_name)
        except Exception:
            log.exception("leaving the group of sess_%s failed", session_id)
        try:
            await call_service(services.disconnect_session, session_id)
        except Exception:
            log.exception("disconnect policy of sess_%s failed", session_id)

    # --- frames in -------------------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        raw = text_data if text_data is not None else (bytes_data or b"").decode("utf-8", "replace")
        request_id: str | None = None
        try:
            if len(raw.encode()) > settings.VANCETOPE_MAX_FRAME_BYTES:
                raise TooLarge(f"frame exceeds {settings.VANCETOPE_MAX_FRAME_BYTES} bytes")
            payload = parse_json(raw, "frame")
            if not isinstance(payload, dict):
                raise BadRequest("frame must be a JSON object")
            request_id = payload.get("id") if isinstance(payload.get("id"), str) else None
            frame = self._parse(payload)
            if frame.type != "process-steer":
                await self._steers_applied()
            await getattr(self, "on_" + frame.type.replace("-", "_"))(frame)
        except Exception as exc:
            await self.send_error(request_id, as_brain_error(exc, "frame failed"))

    def _parse(self, payload: dict[str, Any]) -> Any:
        kind = payload.get("type")
        if kind in p.NOT_YET_AVAILABLE:
            raise BadRequest(f"{kind!r} needs {p.NOT_YET_AVAILABLE[kind]}, not built yet")
        try:
            return p.client_frame.validate_python(payload)
        except ValidationError as exc:
            where, message = p.describe_validation_error(exc)
            if where in {"", "type"} or exc.errors()[0]["type"] == "union_tag_invalid":
                raise BadRequest(f"unknown message type {kind!r}", error="unknown-type") from exc
            error = BadRequest(f"{where}: {message}", error="invalid")
            error.field = where  # type: ignore[attr-defined]
            raise error from exc

    # --- frames out ------------------------------------------------------------------------------

    async def send(
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False
    ) -> None:
        """Every frame out goes through here. A socket the client closed while a handler was
        still answering (a reply, events it catches up) drops the frame: the events stay
        stored for a resume, and the disconnect policy still runs once the handler returns.
        Raising instead would end the application and skip that policy."""
        try:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
        except Disconnected:
            log.info("socket closed before a frame for sess_%s went out", self.session_id)

    async def send_model(self, frame: out.Reply) -> None:
        """A reply (or error), built from its model in sessions_app/protocol/outbound.py."""
        await self.send(text_data=frame.model_dump_json())

    async def send_error(self, request_id: str | None, exc: BrainError) -> None:
        data = out.ErrorData(
            code=exc.code,
            error=exc.error,
            message=exc.message,
            field=getattr(exc, "field", None),
            retryAfter=getattr(exc, "retry_after", None),
        )
        await self.send_model(out.ErrorFrame(replyTo=request_id, data=data))

    async def session_events(self, message: dict[str, Any]) -> None:
        """Group handler: events for the bound session, in seq order, each as (seq, frame
        text)."""
        for seq, text in message["frames"]:
            await self._deliver(int(seq), text)

    async def _deliver(self, seq: int, text: str) -> None:
        if self.session_id is None or seq <= self.last_seq:
            return
        if seq > self.last_seq + 1:
            missing = await call_service(events_since, self.session_id, self.last_seq, seq)
            for event in missing:
                await self.send(text_data=event.frame_text())
        # Frames are built by the Brain from stored events (see SessionEvent.frame_text): sent
        # as they are, without a second validation per event.
        await self.send(text_data=text)
        self.last_seq = seq

    async def _catch_up(self) -> None:
        assert self.session_id is not None
        for event in await call_service(events_since, self.session_id, self.last_seq):
            await self._deliver(event.seq, event.frame_text())

    async def _bind(self, session: Session, last_seq: int) -> None:
        if self.session_id is not None and self.session_id != session.pk:
            await self._unbind()
        if self.session_id != session.pk:
            bound.bind(session.pk)
        self.session_id = session.pk
        self.last_seq = last_seq
        await self.channel_layer.group_add(group_name(session.pk), self.channel_name)

    async def _unbind(self) -> None:
        assert self.session_id is not None
        await self.channel_layer.group_discard(group_name(self.session_id), self.channel_name)
        bound.unbind(self.session_id)
        self.session_id = None

    def _bound_session_id(self) -> int:
        if self.session_id is None:
            raise Conflict("no session: send session-create or session-resume first")
        return self.session_id

    async def _session(self) -> Session:
        return await call_service(services.load_session, self._bound_session_id())

    # --- handlers --------------------------------------------------------------------------------

    async def on_session_create(self, frame: p.SessionCreate) -> None:
        data = frame.data
        session = await call_service(
            services.create_session,
            self.user,
            client_type=data.clientType,
            project_id=data.projectId,
            fingerprint=fingerprint_of(data.fingerprint),
            on_disconnect=data.onDisconnect,
            recipe=data.recipe,
            tools=[tool.model_dump() for tool in data.tools],
        )
        await self._bind(session, last_seq=0)
        created = out.SessionCreatedData(
            session=await call_service(session_data, session),
            chatProcessId=f"tp_{session.chat_process_id}",
        )
        await self.send_model(out.SessionCreated(replyTo=frame.id, data=created))
        await self._catch_up()

    async def on_session_resume(self, frame: p.SessionResume) -> None:
        data = frame.data
        session_pk = parse_public_id("sess", data.sessionId, "session")
        fingerprint = fingerprint_of(data.fingerprint)
        assert fingerprint is not None
        resumed = await call_service(
            services.resume_session, self.user, session_pk, fingerprint, data.sinceSeq
        )
        missed = [event.as_frame() for event in resumed.missed]
        last = int(missed[-1]["seq"]) if missed else (data.sinceSeq or resumed.session.last_seq)  # type: ignore[call-overload]
        await self._bind(resumed.session, last_seq=last)
        back = out.SessionResumedData(
            session=await call_service(session_data, resumed.session),
            processes=[process_data(process) for process in resumed.processes],
            missed=missed,
        )
        await self.send_model(out.SessionResumed(replyTo=frame.id, data=back))
        await self._catch_up()

    async def on_session_close(self, frame: p.SessionClose) -> None:
        session = await self._session()
        closed = await call_service(services.close_session, session.pk)
        session_object = await call_service(session_data, closed)
        await self.send_model(
            out.SessionClosed(replyTo=frame.id, data=out.SessionClosedData(session=session_object))
        )
        await self._catch_up()
        await self._unbind()

    async def on_tools_register(self, frame: p.ToolsRegister) -> None:
        session = await self._session()
        tools = [tool.model_dump() for tool in frame.data.tools]
        count = await call_service(services.register_tools, session, tools)
        await self.send_model(
            out.ToolsRegistered(replyTo=frame.id, data=out.ToolsRegisteredData(count=count))
        )

    async def on_tool_result(self, frame: p.ToolResult) -> None:
        """The client answers a tool-call event; no reply unless it is refused."""
        data = frame.data
        await call_service(
            accept_tool_result,
            self._bound_session_id(),
            data.callId,
            ok=data.ok,
            result=data.result,
            error=data.error or "",
        )

    async def on_chat(self, frame: p.Chat) -> None:
        steered = await call_service(
            steering.send_chat, self._bound_session_id(), frame.data.text, user=self.user
        )
        data = out.PendingData(
            processId=f"tp_{steered.message.process_id}",
            pending=steered.pending,
            seq=steered.message.seq,
        )
        await self.send_model(out.ChatAccepted(replyTo=frame.id, data=data))

    async def on_process_create(self, frame: p.ProcessCreate) -> None:
        session = await self._session()
        data = frame.data
        parent = None
        if data.parentId:
            parent_pk = parse_public_id("tp", data.parentId, "process")
            parent = await call_service(queries.get_visible_process, self.user, parent_pk)
        try:
            process = await call_service(
                create.create_process,
                session,
                goal=data.goal,
                engine=data.thinkEngine,
                recipe=data.recipe,
                params=data.params,
                parent=parent,
                start=data.start,
                requested_by=self.user,
            )
        except BadRequest as exc:
            # Params the engine refused (a vogon strategy) name their field.
            raise in_frame(exc) from exc
        await self._send_process("process-created", frame.id, process)

    async def _send_process(self, kind: str, request_id: str | None, process: ThinkProcess) -> None:
        data = out.ProcessData(process=process_data(process))
        await self.send_model(out.ProcessChanged(type=kind, replyTo=request_id, data=data))

    async def _visible_process_pk(self, public_id: str) -> int:
        pk = parse_public_id("tp", public_id, "process")
        await call_service(queries.get_visible_process, self.user, pk)
        return pk

    async def on_process_start(self, frame: p.ProcessLifecycle) -> None:
        pk = await self._visible_process_pk(frame.data.processId)
        service_name, reply_type = LIFECYCLE_REPLIES[frame.type]
        process = await call_service(getattr(lifecycle, service_name), pk)
        await self._send_process(reply_type, frame.id, process)

    on_process_pause = on_process_start
    on_process_resume = on_process_start
    on_process_stop = on_process_start
    on_process_reset = on_process_start

    async def on_process_get(self, frame: p.ProcessLifecycle) -> None:
        pk = parse_public_id("tp", frame.data.processId, "process")
        process = await call_service(queries.get_visible_process, self.user, pk)
        detail = await call_service(process_detail, process)
        await self.send_model(
            out.Process(replyTo=frame.id, data=out.ProcessDetailData(process=detail))
        )

    async def on_process_list(self, frame: p.ProcessList) -> None:
        def listing() -> list[dict[str, Any]]:
            rows = queries.visible_processes(self.user)
            if self.session_id is not None:
                rows = rows.filter(session_id=self.session_id)
            if frame.data.status:
                rows = rows.filter(status=frame.data.status)
            return [process_data(process) for process in rows.order_by("pk")[:500]]

        data = out.ProcessListData(processes=await call_service(listing))
        await self.send_model(out.ProcessList(replyTo=frame.id, data=data))

    async def on_thinkengines_list(self, frame: p.ThinkEnginesList) -> None:
        data = out.ThinkEnginesData(engines=[engine.describe() for engine in all_engines()])
        await self.send_model(out.ThinkEngines(replyTo=frame.id, data=data))

    async def on_recipes_list(self, frame: p.RecipesList) -> None:
        if self.session_id is not None:
            session_id = self.session_id
            project = await call_service(lambda: services.load_session(session_id).project)
        elif frame.data.projectId:
            project = await call_service(get_visible_project, self.user, frame.data.projectId)
        else:
            raise BadRequest("name data.projectId or open a session first")
        # recipe_data reads each recipe's tenant and project: in the worker thread, not here.
        listed = await call_service(lambda: [recipe_data(r) for r in effective_recipes(project)])
        data = out.RecipesData(recipes=listed)
        await self.send_model(out.Recipes(replyTo=frame.id, data=data))
