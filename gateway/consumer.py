"""The WebSocket consumer at /ws/brain/: parse a frame, call its handler from the table
(gateway/frames/table.py), reply; errors become the frame's error reply.

Events reach the socket through the session's channel-layer group. The consumer delivers them
in seq order, exactly once: a duplicate is dropped, and a gap (an event pushed before this socket
joined the group, or lost in transit) is filled from the database before the newer event goes out.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from autobahn.exception import Disconnected
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from pydantic import ValidationError

from gateway.frames import auth
from gateway.frames.errors import as_brain_error
from gateway.frames.spaces import cancel_control_replies
from gateway.frames.steers import SteerQueue
from gateway.frames.table import FRAME_HANDLERS
from processes.actions import sessions
from protocol import inbound as p
from protocol import outbound as out
from sessions_app import services, socket_bindings
from sessions_app.events import events_since, group_name
from sessions_app.models import Session, SuspendCause
from vancetope.errors import BadRequest, BrainError, Conflict, TooLarge
from vancetope.jsonbody import check_read_json, read_json, text_problem
from vancetope.service_calls import call_service

log = logging.getLogger(__name__)


class BrainConsumer(AsyncWebsocketConsumer):
    session_id: int | None = None
    # The session's bind this socket made (Session.binding): its disconnect applies to it only.
    binding = 0
    last_seq = 0
    auth_groups: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.steers = SteerQueue(self)
        self.control_tasks: set[asyncio.Future[None]] = set()

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
            await auth.refuse(self)
            return
        await auth.join_auth_groups(self)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """As channels' own, and the session's disconnect policy runs however the socket's
        application ends: also when it fails (a channel layer that lost Redis; the server
        then closes the socket with 1011) or is cancelled, where no disconnect() is called."""
        try:
            await super().__call__(scope, receive, send)
        finally:
            await auth.leave_auth_groups(self)
            if self.session_id is not None:
                log.warning("socket of sess_%s ended without a disconnect", self.session_id)
                await self._leave_session()

    async def disconnect(self, code: int) -> None:
        # Steers the client sent are applied even if it left before their replies.
        await self.steers.applied()
        cancel_control_replies(self)
        await auth.leave_auth_groups(self)
        await self._leave_session()

    async def auth_revoked(self, message: dict[str, Any]) -> None:
        """Group handler: this socket's token was revoked or its user deactivated."""
        log.info("closing a socket of user %s: its access was revoked", self.user.pk)
        await self.close(code=auth.UNAUTHENTICATED)
        # The session's disconnect policy runs now, not only once the client has completed
        # the close; the server's disconnect afterwards finds nothing left to do.
        await self.disconnect(auth.UNAUTHENTICATED)

    async def _leave_session(self) -> None:
        """Apply the bound session's disconnect policy, once."""
        session_id, self.session_id = self.session_id, None
        if session_id is None:
            return
        held_elsewhere = socket_bindings.unbind(session_id)
        try:
            await self.channel_layer.group_discard(group_name(session_id), self.channel_name)
        except Exception:
            log.exception("leaving the group of sess_%s failed", session_id)
        if held_elsewhere:
            # A newer socket resumed the session (a reloaded page) before this one left: the
            # client is still there, and its tools are the new socket's.
            log.info("sess_%s is held by another socket: no disconnect policy", session_id)
            return
        try:
            # The server closing its sockets to stop is a shutdown, not the client leaving.
            cause = (
                SuspendCause.SHUTDOWN
                if socket_bindings.is_server_stopping()
                else SuspendCause.DISCONNECT
            )
            await call_service(sessions.disconnect_session, session_id, cause, binding=self.binding)
        except Exception:
            log.exception("disconnect policy of sess_%s failed", session_id)

    # --- frames in -------------------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        raw = text_data if text_data is not None else (bytes_data or b"").decode("utf-8", "replace")
        request_id: str | None = None
        try:
            if len(raw.encode()) > settings.VANCETOPE_MAX_FRAME_BYTES:
                raise TooLarge(f"frame exceeds {settings.VANCETOPE_MAX_FRAME_BYTES} bytes")
            payload = read_json(raw, "frame")
            if not isinstance(payload, dict):
                raise BadRequest("frame must be a JSON object")
            given_id = payload.get("id")
            if isinstance(given_id, str) and not text_problem(given_id):
                request_id = given_id
            check_read_json(payload, raw)
            frame = self._parse(payload)
            if frame.type != "process-steer":
                await self.steers.applied()
            await FRAME_HANDLERS[frame.type](self, frame)
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
            raise BadRequest.naming(where, message) from exc

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
        """A reply (or error), built from its model in protocol/outbound.py."""
        await self.send(text_data=frame.model_dump_json())

    async def send_error(self, request_id: str | None, exc: BrainError) -> None:
        data = out.ErrorData(
            code=exc.code,
            error=exc.error,
            message=exc.message,
            field=exc.field,
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

    # --- the bound session (gateway/frames/socket.py) --------------------------------------------

    async def catch_up(self) -> None:
        assert self.session_id is not None
        for event in await call_service(events_since, self.session_id, self.last_seq):
            await self._deliver(event.seq, event.frame_text())

    async def bind(self, session: Session, last_seq: int) -> None:
        if self.session_id is not None and self.session_id != session.pk:
            # The earlier session has no client from now on (its events no longer reach
            # this socket, its tools cannot be answered): its disconnect policy applies now.
            await self._leave_session()
        if self.session_id != session.pk:
            socket_bindings.bind(session.pk)
        self.session_id = session.pk
        self.binding = session.binding
        self.last_seq = last_seq
        await self.channel_layer.group_add(group_name(session.pk), self.channel_name)

    async def unbind(self) -> None:
        assert self.session_id is not None
        await self.channel_layer.group_discard(group_name(self.session_id), self.channel_name)
        socket_bindings.unbind(self.session_id)
        self.session_id = None

    def bound_session_id(self) -> int:
        if self.session_id is None:
            raise Conflict("no session: send session-create or session-resume first")
        return self.session_id

    async def session(self) -> Session:
        return await call_service(services.load_session, self.bound_session_id())
