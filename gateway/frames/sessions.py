"""The session frames (docs/protocol.md): `session-create`, `session-resume`, `session-close`,
and the client's tools: `tools-register`, `tool-result`."""

from __future__ import annotations

from gateway.frames.socket import FrameHandler, Socket
from processes.actions import sessions
from processes.presenters import process_data
from protocol import inbound as p
from protocol import outbound as out
from sessions_app import services
from sessions_app.presenters import session_data
from vancetope.ids import parse_public_id
from vancetope.service_calls import call_service
from vancetope.tools.client_bridge import accept_tool_result


def fingerprint_of(model: p.Fingerprint | None) -> services.FingerprintData | None:
    if model is None:
        return None
    return services.FingerprintData(
        machine_id=model.machineId,
        working_dir=model.workingDir,
        user_home=model.userHome or "",
        os_user=model.osUser or "",
    )


async def session_create(socket: Socket, frame: p.SessionCreate) -> None:
    data = frame.data
    session = await call_service(
        sessions.create_session,
        socket.user,
        client_type=data.clientType,
        project_id=data.projectId,
        fingerprint=fingerprint_of(data.fingerprint),
        on_disconnect=data.onDisconnect,
        on_suspend=data.onSuspend,
        recipe=data.recipe,
        tools=[tool.model_dump() for tool in data.tools],
    )
    await socket.bind(session, last_seq=0)
    created = out.SessionCreatedData(
        session=await call_service(session_data, session),
        chatProcessId=f"tp_{session.chat_process_id}",
    )
    await socket.send_model(out.SessionCreated(replyTo=frame.id, data=created))
    await socket.catch_up()


async def session_resume(socket: Socket, frame: p.SessionResume) -> None:
    data = frame.data
    session_pk = parse_public_id("sess", data.sessionId, "session")
    fingerprint = fingerprint_of(data.fingerprint)
    assert fingerprint is not None
    resumed = await call_service(
        sessions.resume_session,
        socket.user,
        session_pk,
        fingerprint,
        data.sinceSeq,
        tools=[tool.model_dump() for tool in data.tools],
    )
    missed = [event.as_frame() for event in resumed.missed]
    last = int(missed[-1]["seq"]) if missed else (data.sinceSeq or resumed.session.last_seq)  # type: ignore[call-overload]
    await socket.bind(resumed.session, last_seq=last)
    back = out.SessionResumedData(
        session=await call_service(session_data, resumed.session),
        processes=[process_data(process) for process in resumed.processes],
        missed=missed,
    )
    await socket.send_model(out.SessionResumed(replyTo=frame.id, data=back))
    await socket.catch_up()


async def session_close(socket: Socket, frame: p.SessionClose) -> None:
    session = await socket.session()
    closed = await call_service(sessions.close_session, session.pk)
    session_object = await call_service(session_data, closed)
    await socket.send_model(
        out.SessionClosed(replyTo=frame.id, data=out.SessionClosedData(session=session_object))
    )
    await socket.catch_up()
    await socket.unbind()


async def tools_register(socket: Socket, frame: p.ToolsRegister) -> None:
    session = await socket.session()
    tools = [tool.model_dump() for tool in frame.data.tools]
    count = await call_service(services.register_tools, session, tools)
    await socket.send_model(
        out.ToolsRegistered(replyTo=frame.id, data=out.ToolsRegisteredData(count=count))
    )


async def tool_result(socket: Socket, frame: p.ToolResult) -> None:
    """The client answers a tool-call event; no reply unless it is refused."""
    data = frame.data
    await call_service(
        accept_tool_result,
        socket.bound_session_id(),
        data.callId,
        ok=data.ok,
        result=data.result,
        error=data.error or "",
    )


HANDLERS: dict[str, FrameHandler] = {
    "session-create": session_create,
    "session-resume": session_resume,
    "session-close": session_close,
    "tools-register": tools_register,
    "tool-result": tool_result,
}
