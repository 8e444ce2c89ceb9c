"""Client tools over the socket: a coding session that offers `list_files`, and a tool
result sent back."""

from __future__ import annotations

import json
from typing import Any

from tests.support.ws import Client, open_session

LIST_FILES = [
    {
        "match": "list the files",
        "times": 1,
        "tool_calls": [{"name": "run_shell", "arguments": {"command": "ls"}}],
    },
]


async def coding_session(client: Client, tenancy: Any) -> str:
    created = await open_session(client, tenancy, recipe="frankie-coding")
    registered = await client.request("tools-register", {"tools": [SHELL_RUN]})
    assert registered == {"type": "tools-registered", "replyTo": "c2", "data": {"count": 1}}
    return created["chatProcessId"]


async def send_tool_result(client: Client, call_id: str, **data: Any) -> None:
    await client.ws.send_to(
        text_data=json.dumps(
            {"type": "tool-result", "id": "r", "data": {"callId": call_id, **data}}
        )
    )


SHELL_RUN = {
    "name": "run_shell",
    "description": "Run a shell command in the working directory",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
    "safety": "MUTATING",
}
