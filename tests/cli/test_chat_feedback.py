"""What `vance chat` tells its user: a prompt, queued messages, one line per status change, the
whole transcript on a resume; and `vance --version`, `vance login`'s default server."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from vance.chat import ChatClient, ChatOptions
from vance.config import Config
from vance.fingerprint import Fingerprint
from vance.lines import LineRouter
from vance.main import build_parser, main
from vance.render import PROMPT, EventPrinter
from vance.slash import run_slash_command


class FakeSocket:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send(self, raw: str) -> None:
        self.sent.append(json.loads(raw))


@pytest.fixture
def chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ChatClient, io.StringIO]:
    monkeypatch.setenv("VANCE_CONFIG_DIR", str(tmp_path / "config"))
    (tmp_path / "work").mkdir()
    output = io.StringIO()
    console = Console(file=output, width=120, color_system=None)
    fp = Fingerprint("m-1", str(tmp_path / "work"), str(tmp_path), "dev")
    client = ChatClient(Config("http://127.0.0.1:1", "t"), ChatOptions(), fp, console, LineRouter())
    client.ws = FakeSocket()  # type: ignore[assignment]
    client.connected.set()
    client.session_id = "sess_1"
    client.printer.chat_process_id = "tp_1"
    return client, output


def event(seq: int, name: str, **data: Any) -> dict[str, Any]:
    return {"type": "event", "seq": seq, "event": name, "data": data}


async def reply_to_last(client: ChatClient, kind: str, data: dict[str, Any]) -> None:
    for _ in range(100):  # the request is sent within a few turns of the loop
        if client.pending:
            break
        await asyncio.sleep(0)
    [request_id] = list(client.pending)
    client._dispatch({"type": kind, "replyTo": request_id, "data": data})


def lines(output: io.StringIO) -> list[str]:
    return [line for line in output.getvalue().splitlines() if line.strip()]


def test_the_prompt_is_drawn_again_below_each_printed_line():
    output = io.StringIO()
    printer = EventPrinter(Console(file=output, width=80, color_system=None), prompt=True)
    printer.show_prompt()
    assert output.getvalue() == PROMPT
    # when an event line arrives while the user is at the prompt
    printer.line("· tp_4 DONE")
    # then the prompt line is erased, the line printed, the prompt drawn below it
    assert output.getvalue() == f"{PROMPT}\r\x1b[2K· tp_4 DONE\n{PROMPT}"
    # and a streamed reply takes the prompt's line, the prompt coming back after it
    printer.on_chat_delta({"processId": "tp_9", "text": "hi"})
    printer.on_chat_message({"processId": "tp_9", "role": "assistant", "text": "hi"})
    assert output.getvalue().endswith(f"{PROMPT}\r\x1b[2Ktp_9 › hi\n{PROMPT}")


def test_no_prompt_when_the_output_is_not_a_terminal():
    output = io.StringIO()
    printer = EventPrinter(Console(file=output, width=80, color_system=None))
    printer.show_prompt()
    printer.line("x")
    assert output.getvalue() == "x\n"


async def test_a_message_sent_while_the_chat_is_paused_says_it_is_queued(chat):
    client, output = chat
    client._dispatch(event(1, "process-status", processId="tp_1", status="PAUSED"))
    # when
    sending = asyncio.create_task(client._handle_line("hello"))
    await reply_to_last(client, "chat-accepted", {"processId": "tp_1", "pending": 1, "seq": 1})
    await sending
    # then
    assert lines(output)[-1] == "queued: tp_1 is PAUSED (1 pending); /resume to have it answered"


async def test_a_message_behind_others_says_so_and_an_answered_one_says_nothing(chat):
    client, output = chat
    client._dispatch(event(1, "process-status", processId="tp_1", status="RUNNING"))
    before = len(lines(output))
    sending = asyncio.create_task(client._handle_line("first"))
    await reply_to_last(client, "chat-accepted", {"processId": "tp_1", "pending": 1, "seq": 2})
    await sending
    assert len(lines(output)) == before
    sending = asyncio.create_task(client._handle_line("second"))
    await reply_to_last(client, "chat-accepted", {"processId": "tp_1", "pending": 2, "seq": 3})
    await sending
    assert lines(output)[-1] == "queued behind 1 message(s) of tp_1"


@pytest.mark.parametrize("event_first", [True, False])
async def test_a_pause_is_one_line_whether_its_event_or_its_reply_comes_first(chat, event_first):
    client, output = chat
    client.printer.statuses["tp_1"] = "IDLE"
    paused = {"process": {"id": "tp_1", "status": "PAUSED"}}
    # when
    command = asyncio.create_task(run_slash_command(client, "/pause"))
    if event_first:
        client._dispatch(event(5, "process-status", processId="tp_1", status="PAUSED"))
        await reply_to_last(client, "process-paused", paused)
    else:
        await reply_to_last(client, "process-paused", paused)
        await command
        client._dispatch(event(5, "process-status", processId="tp_1", status="PAUSED"))
    await command
    # then
    assert [line for line in lines(output) if "PAUSED" in line] == ["· tp_1 PAUSED"]


def test_a_resumed_transcript_shows_the_users_lines_too(chat):
    client, output = chat
    missed = [
        event(1, "chat-message", processId="tp_1", role="user", text="hello"),
        event(2, "chat-message", processId="tp_1", role="assistant", text="echo: hello"),
    ]
    # when
    client._resumed(
        {"session": {"id": "sess_1", "chatProcessId": "tp_1"}, "processes": [], "missed": missed},
        reconnect=False,
    )
    # then
    shown = lines(output)
    assert shown[-2:] == ["you › hello", "brain › echo: hello"]
    # while a line typed just now is not printed again
    client._dispatch(event(3, "chat-message", processId="tp_1", role="user", text="live"))
    assert "you › live" not in output.getvalue()


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == "vance 0.1.0"


def test_login_defaults_to_the_local_brain():
    args = build_parser().parse_args(["login", "--token-file", "var/token"])
    assert args.server == "http://127.0.0.1:8000"


def test_a_fold_of_the_chat_is_one_line_and_so_is_its_undo():
    # given a printer of the chat's events
    output = io.StringIO()
    printer = EventPrinter(Console(file=output, width=120, color_system=None))
    fold = {"id": "cmp_3", "turns": 18, "summary": "We spoke of rivers.", "undoneAt": None}
    # when a compaction folds the chat, and is then undone
    printer.show("conversation-folded", {"processId": "tp_1", "compaction": fold})
    undone = {**fold, "undoneAt": "2026-12-07T10:00:00Z"}
    printer.show("conversation-folded", {"processId": "tp_1", "compaction": undone})
    # then each is one line, naming the summary, not its text
    assert output.getvalue().splitlines() == [
        "~ tp_1: cmp_3 18 earlier turns summarised",
        "~ tp_1: cmp_3 undone",
    ]
