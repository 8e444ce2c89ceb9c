"""`vance chat`: one session over the WebSocket, kept across network drops.

The client opens a session (or resumes the one remembered for this working directory), offers
its local tools, sends what the user types as `chat` frames and shows events as they arrive.
Events carry a per-session `seq`; the client remembers the last one it showed, so after a drop
it resumes with `sinceSeq` and shows each event exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from vance.config import Config, RememberedSession, SessionMemory
from vance.exits import EXIT_AUTH, EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE
from vance.fingerprint import Fingerprint
from vance.lines import LineRouter, is_yes
from vance.local_tools import TOOL_SPECS, Workspace
from vance.notes import drift_panel, queued_note
from vance.render import EventPrinter, error_text
from vance.slash import run_slash_command
from vance.tool_calls import ToolCalls

UNAUTHENTICATED_CLOSE = 4401
RECONNECT_DELAYS = (0.5, 1.0, 2.0, 3.0, 5.0)
REPLY_TIMEOUT_SECONDS = 120
MAX_FRAME_BYTES = 4 * 1024 * 1024


class ConnectionLost(Exception):
    """The socket closed while a request waited for its reply."""


class NotSent(ConnectionLost):
    """The socket was already closed: the request never left this machine."""


class Abandon(Exception):
    """The chat cannot go on; `code` is the exit code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class ChatOptions:
    project: str = "proj_default"
    recipe: str | None = None
    assume_yes: bool = False
    session_id: str | None = None  # resume this session instead of the remembered one
    new_session: bool = False


class ChatClient:
    def __init__(
        self,
        config: Config,
        options: ChatOptions,
        fingerprint: Fingerprint,
        console: Console,
        router: LineRouter,
    ) -> None:
        self.config = config
        self.options = options
        self.fingerprint = fingerprint
        self.console = console
        self.router = router
        self.memory = SessionMemory(config.server, options.project, fingerprint.working_dir)
        self.printer = EventPrinter(console)
        self.tool_calls = ToolCalls(
            Workspace(Path(fingerprint.working_dir)),
            self.printer,
            console,
            router,
            assume_yes=options.assume_yes,
        )
        self.session_id: str | None = None
        self.last_seq = 0
        self.ws: ClientConnection | None = None
        self.connected = asyncio.Event()
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.counter = 0
        self.background: set[asyncio.Task[None]] = set()
        self.close_code: int | None = None
        self._receiver: asyncio.Task[None] | None = None
        self.sent: tuple[int, str] | None = None  # the last chat message: its seq and text

    # --- the whole run ---------------------------------------------------------------------------

    async def run(self) -> int:
        if not self.options.new_session:
            remembered = self.memory.recall()
            if self.options.session_id:
                same = remembered and remembered.session_id == self.options.session_id
                self.session_id = self.options.session_id
                self.last_seq = remembered.last_seq if remembered and same else 0
            elif remembered:
                self.session_id, self.last_seq = remembered.session_id, remembered.last_seq
        connection = asyncio.create_task(self._connection_loop(), name="connection")
        tasks = {asyncio.create_task(self._input_loop(), name="input"), connection}
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            # A connection that ended (refused token, unreachable Brain) says how it ended.
            return int((connection if connection in done else done.pop()).result())
        finally:
            # A reply still drawn live (vance/prose.py) is left whole, the cursor shown again.
            self.printer.end_stream()
            for task in tasks | self.background:
                task.cancel()
            if self.ws is not None:
                with contextlib.suppress(Exception):
                    await self.ws.close()
            self._remember()

    def _remember(self) -> None:
        if self.session_id is not None:
            self.memory.remember(RememberedSession(self.session_id, self.last_seq))

    # --- connection ------------------------------------------------------------------------------

    async def _connection_loop(self) -> int:
        ever_connected = False
        failures = 0
        while True:
            try:
                async with connect(
                    self.config.websocket_url,
                    additional_headers={"Authorization": f"Bearer {self.config.token}"},
                    open_timeout=10,
                    ping_interval=10,
                    ping_timeout=10,
                    max_size=MAX_FRAME_BYTES,
                ) as ws:
                    await self._serve(ws, reconnect=ever_connected)
                    ever_connected, failures = True, 0
                    assert self._receiver is not None
                    await self._receiver
            except Abandon as exc:
                return exc.code
            except (
                ConnectionLost,
                ConnectionClosed,
                InvalidHandshake,
                OSError,
                TimeoutError,
            ) as exc:
                if self.close_code == UNAUTHENTICATED_CLOSE:
                    self.printer.line(
                        Text(
                            "The Brain refused the token (401). Run `vance login` with a valid "
                            "token.",
                            style="bold red",
                        )
                    )
                    return EXIT_AUTH
                if not ever_connected and failures == 0 and not isinstance(exc, ConnectionLost):
                    self.printer.line(
                        Text(f"Cannot reach the Brain at {self.config.server}: {exc}", "bold red")
                    )
                    return EXIT_UNREACHABLE
            finally:
                self.connected.clear()
                self.ws = None
            if failures == 0:
                self.printer.line(
                    Text("Connection to the Brain lost; reconnecting…", style="bold yellow")
                )
            self._remember()
            await asyncio.sleep(RECONNECT_DELAYS[min(failures, len(RECONNECT_DELAYS) - 1)])
            failures += 1

    async def _serve(self, ws: ClientConnection, *, reconnect: bool) -> None:
        self.ws = ws
        self.close_code = None
        self._receiver = asyncio.create_task(self._receive(ws))
        await self._open_session(reconnect=reconnect)
        register = await self._call("tools-register", {"tools": TOOL_SPECS})
        if register["type"] == "error":
            self.printer.line(Text("Local tools not registered:", style="yellow"))
            self.printer.line(error_text(register["data"]))
        self.connected.set()

    async def _receive(self, ws: ClientConnection) -> None:
        try:
            async for raw in ws:
                try:
                    frame = json.loads(raw)
                except ValueError:
                    continue  # not a protocol frame; nothing to show or answer
                if isinstance(frame, dict):
                    self._dispatch(frame)
        except ConnectionClosed:
            pass
        finally:
            self.close_code = ws.close_code
            self.connected.clear()
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(ConnectionLost("connection closed"))
            self.pending.clear()

    def _dispatch(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "event":
            self._event(frame)
            return
        future = self.pending.pop(str(frame.get("replyTo")), None)
        if future is not None:
            if not future.done():
                future.set_result(frame)
        elif frame.get("type") == "error":
            self.printer.line(error_text(frame.get("data") or {}))

    async def _call(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its reply (or error) frame."""
        if self.ws is None:
            raise NotSent("not connected")
        self.counter += 1
        request_id = f"c{self.counter}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            await self.ws.send(json.dumps({"type": kind, "id": request_id, "data": data}))
        except ConnectionClosed as exc:
            self.pending.pop(request_id, None)
            raise NotSent("connection closed") from exc
        return await asyncio.wait_for(future, REPLY_TIMEOUT_SECONDS)

    async def request(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """A request from the user: waits for the connection, and resends only what was never
        sent (a request that may have arrived is not sent twice)."""
        while True:
            await self.connected.wait()
            try:
                return await self._call(kind, data)
            except NotSent:
                continue

    # --- session ---------------------------------------------------------------------------------

    async def _open_session(self, *, reconnect: bool) -> None:
        if self.session_id is None:
            await self._create_session()
            return
        reply = await self._call(
            "session-resume",
            {
                "sessionId": self.session_id,
                "fingerprint": self.fingerprint.as_protocol(),
                "sinceSeq": self.last_seq,
                # Offered with the bind: a task that waits for one of them goes on at once.
                "tools": TOOL_SPECS,
            },
        )
        if reply["type"] == "session-resumed":
            self._resumed(reply["data"], reconnect=reconnect)
            return
        error = reply.get("data") or {}
        if error.get("error") == "fingerprint-mismatch":
            self.printer.line(
                Panel(
                    Text(
                        f"Session {self.session_id} belongs to another machine: it was opened "
                        "with a different machine id, so the Brain will not hand it to this one. "
                        "It stays suspended for its own machine.\n" + str(error.get("message", ""))
                    ),
                    title="resume refused",
                    title_align="left",
                    border_style="red",
                )
            )
            if not await self._confirm_new_session():
                raise Abandon(EXIT_REFUSED)
        elif error.get("code") in {404, 409}:
            self.printer.line(
                Text(
                    f"Session {self.session_id} cannot be resumed ({error.get('message')}); "
                    "starting a new session.",
                    style="yellow",
                )
            )
        else:
            self.printer.line(error_text(error))
            raise Abandon(EXIT_REFUSED)
        self.memory.forget()
        await self._create_session()

    async def _confirm_new_session(self) -> bool:
        if self.options.assume_yes:
            self.printer.line(Text("Creating a new session (--yes).", style="yellow"))
            return True
        self.console.print(
            f"Create a new session in {self.fingerprint.working_dir}? [Y/n] ", end="", markup=False
        )
        answer = await self.router.ask()
        self.printer.typed()
        return is_yes(answer, default=True)

    async def _create_session(self) -> None:
        data: dict[str, Any] = {
            "clientType": "cli",
            "projectId": self.options.project,
            "fingerprint": self.fingerprint.as_protocol(),
            "tools": TOOL_SPECS,
        }
        if self.options.recipe:
            data["recipe"] = self.options.recipe
        self.session_id, self.last_seq = None, 0
        reply = await self._call("session-create", data)
        if reply["type"] != "session-created":
            self.printer.line(error_text(reply.get("data") or {}))
            raise Abandon(EXIT_REFUSED)
        session = reply["data"]["session"]
        self.session_id = str(session["id"])
        self.printer.chat_process_id = reply["data"]["chatProcessId"]
        self._remember()
        self.printer.line(
            Text.assemble(
                ("new session ", "bold green"),
                (self.session_id, "bold"),
                f"  chat process {self.printer.chat_process_id} in {self.fingerprint.working_dir}",
            )
        )
        self.printer.statuses[self.printer.chat_process_id] = "IDLE"
        self.printer.line(Text("Type a message; /help lists commands.", style="dim"))

    def _resumed(self, data: dict[str, Any], *, reconnect: bool) -> None:
        session = data["session"]
        self.printer.chat_process_id = session.get("chatProcessId")
        missed = data.get("missed") or []
        self.printer.line(
            Text.assemble(
                ("resumed session ", "bold green"),
                (str(session["id"]), "bold"),
                f"  chat process {self.printer.chat_process_id}",
                f"  ({'reconnected, ' if reconnect else ''}{len(missed)} events since seq "
                f"{self.last_seq})",
            )
        )
        drifted = [
            process
            for process in data.get("processes") or []
            if process.get("contextDrift") and process.get("status") == "SUSPENDED"
        ]
        if drifted:
            original_dir = str(session.get("fingerprint", {}).get("workingDir"))
            self.printer.line(drift_panel(drifted, original_dir, self.fingerprint.working_dir))
        self.printer.replaying = True
        try:
            for frame in missed:
                self._event(frame)
        finally:
            self.printer.replaying = False
        # Where each process stands now (the missed events may end before the resume's own).
        for process in data.get("processes") or []:
            self.printer.statuses[str(process.get("id"))] = str(process.get("status"))
            self.printer.progress.known(
                str(process.get("id")), str(process.get("status")), process.get("closeReason")
            )
        self._remember()

    # --- events ----------------------------------------------------------------------------------

    def _event(self, frame: dict[str, Any]) -> None:
        seq = int(frame.get("seq") or 0)
        if seq <= self.last_seq:
            return  # seen before the drop
        self.last_seq = seq
        event, data = str(frame.get("event")), frame.get("data") or {}
        self.printer.show(event, data)
        if event == "tool-call":
            task = asyncio.create_task(self._answer_tool(data))
            self.background.add(task)
            task.add_done_callback(self.background.discard)
        if event != "chat-delta":
            self._remember()

    async def _answer_tool(self, call: dict[str, Any]) -> None:
        answer = await self.tool_calls.answer(call)
        if answer is None:
            return
        while True:
            await self.connected.wait()
            assert self.ws is not None
            self.counter += 1
            frame = {"type": "tool-result", "id": f"t{self.counter}", "data": answer.data}
            try:
                await self.ws.send(json.dumps(frame))
                return
            except ConnectionClosed:
                continue

    # --- input -----------------------------------------------------------------------------------

    async def _input_loop(self) -> int:
        await self.connected.wait()
        self.printer.show_prompt()
        while True:
            line = await self.router.lines.get()
            self.printer.typed()
            if line is None:
                return EXIT_OK
            line = line.strip()
            if line:
                code = await self._handle_line(line)
                if code is not None:
                    return code
            self.printer.show_prompt()

    async def _handle_line(self, line: str) -> int | None:
        """One line the user typed: a /command, or a chat message; an exit code when the chat
        should end."""
        try:
            if line.startswith("/"):
                return await run_slash_command(self, line)
            reply = await self.request("chat", {"text": line})
        except ConnectionLost:
            self.printer.line(
                Text(
                    "The connection dropped before the Brain confirmed this; if it arrived "
                    "it takes effect anyway (/processes shows where things stand).",
                    style="yellow",
                )
            )
            return None
        except TimeoutError:
            self.printer.line(
                Text(f"No reply from the Brain within {REPLY_TIMEOUT_SECONDS}s.", "yellow")
            )
            return None
        if reply["type"] == "error":
            self.printer.line(error_text(reply["data"], "not sent"))
            return None
        accepted = reply["data"]
        # What /unsend takes back (processes/undo frames, vance/slash.py).
        self.sent = (accepted["seq"], line)
        note = queued_note(accepted, self.printer.statuses.get(str(accepted.get("processId"))))
        if note is not None:
            self.printer.line(note)
        return None
