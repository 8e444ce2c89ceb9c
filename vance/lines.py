"""Lines typed into `vance chat`: one reader thread, and a router that hands each line either
to a pending yes/no question (a MUTATING tool, a new session) or to the chat.

On a terminal the lines are read with GNU readline (the standard library's `readline`), so a
command can put text back into the input line: `/undo` and `/unsend` hand back the message they
took back, to be edited and sent again (`put_back`). The reader waits for their answer before
it reads the next line, so the text is there when the line opens.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import TextIO

# Commands whose answer may put text back into the next input line.
PUTS_BACK = ("/undo", "/unsend")
# How long the reader waits for such an answer (the chat's own reply timeout is shorter).
PUT_BACK_WAIT_SECONDS = 60.0


class LineRouter:
    def __init__(self) -> None:
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._questions: list[asyncio.Future[str | None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._interactive = False
        self._answered = threading.Event()
        self._put_back = ""

    def start(self, stream: TextIO | None = None) -> None:
        """Read `stream` (stdin) in a daemon thread; None is fed at end of input."""
        self._loop = asyncio.get_running_loop()
        source = stream or sys.stdin
        self._interactive = stream is None and sys.stdin.isatty()
        threading.Thread(target=self._read, args=(source,), name="vance-stdin", daemon=True).start()

    def _read(self, stream: TextIO) -> None:
        assert self._loop is not None
        while True:
            line = self._next_line(stream)
            if not line:
                self._loop.call_soon_threadsafe(self.feed, None)
                return
            line = line.rstrip("\r\n")
            waits = self._interactive and line.strip().startswith(PUTS_BACK)
            self._answered.clear()
            self._loop.call_soon_threadsafe(self.feed, line)
            if waits:
                self._answered.wait(PUT_BACK_WAIT_SECONDS)

    def _next_line(self, stream: TextIO) -> str:
        if not self._interactive:
            return stream.readline()
        import readline

        text, self._put_back = self._put_back, ""
        readline.set_startup_hook((lambda: readline.insert_text(text)) if text else None)
        try:
            return input() + "\n"
        except EOFError:
            return ""
        finally:
            readline.set_startup_hook(None)

    def put_back(self, text: str = "") -> None:
        """The answer to a PUTS_BACK command: `text` opens the next input line (on a
        terminal; elsewhere there is no input line to put it in)."""
        self._put_back = text
        self._answered.set()

    @property
    def edits_lines(self) -> bool:
        """Whether put-back text appears in the input line (stdin is a terminal)."""
        return self._interactive

    def feed(self, line: str | None) -> None:
        while self._questions:
            question = self._questions.pop(0)
            if not question.done():
                question.set_result(line)
                if line is not None:
                    return
        self.lines.put_nowait(line)

    async def ask(self) -> str | None:
        """The next line typed, taken before the chat sees it; None at end of input."""
        question: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._questions.append(question)
        return await question


def is_yes(answer: str | None, *, default: bool) -> bool:
    if answer is None:
        return False
    answer = answer.strip().lower()
    if not answer:
        return default
    return answer in {"y", "yes", "j", "ja"}
