"""The tool calls of `vance chat`: each `tool-call` event answered once, with the user asked
before a MUTATING tool runs (unless `--yes`), one question at a time.

Sending the answer is the chat's business (it waits for the connection); this module runs the
tool and says what came of it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from vance.lines import LineRouter, is_yes
from vance.local_tools import ToolAnswer, Workspace, answer_tool_call
from vance.render import EventPrinter


class ToolCalls:
    def __init__(
        self,
        workspace: Workspace,
        printer: EventPrinter,
        console: Console,
        router: LineRouter,
        *,
        assume_yes: bool,
    ) -> None:
        self.workspace = workspace
        self.printer = printer
        self.console = console
        self.router = router
        self.assume_yes = assume_yes
        self.answered: set[str] = set()
        self.confirm_lock = asyncio.Lock()

    async def answer(self, call: dict[str, Any]) -> ToolAnswer | None:
        """The `tool-result` data for a `tool-call` event; None for a call answered before."""
        call_id = str(call.get("callId"))
        if call_id in self.answered:
            return None
        self.answered.add(call_id)
        answer = await answer_tool_call(
            call, self.workspace, self.confirm, assume_yes=self.assume_yes
        )
        outcome = "ok" if answer.ok else f"refused: {answer.data.get('error')}"
        self.printer.line(Text(f"⚙ {call.get('tool')} → {outcome}", style="blue"))
        return answer

    async def confirm(self, name: str, arguments: dict[str, Any]) -> bool:
        """Show what the Brain wants to run and ask the user; no unless they say yes."""
        async with self.confirm_lock:
            self.printer.line(
                Panel(
                    Text(describe_call(name, arguments)),
                    title=f"the Brain wants to run {name}",
                    border_style="yellow",
                )
            )
            self.console.print(f"Allow {name}? [y/N] ", end="", markup=False)
            answer = await self.router.ask()
            self.printer.typed()  # the answer's line ends below the question
            return is_yes(answer, default=False)


def describe_call(name: str, arguments: dict[str, Any]) -> str:
    """What a MUTATING call would do, as the approval prompt shows it."""
    if name == "run_shell":
        return f"$ {arguments.get('command')}"
    if name == "write_file":
        content = str(arguments.get("content", ""))
        detail = f"write {len(content)} characters to {arguments.get('path')}"
        if arguments.get("append"):
            detail = detail.replace("write", "append", 1)
        return detail + "\n" + content[:500]
    return json.dumps(arguments, indent=2)
