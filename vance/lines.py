"""Lines typed into `vance chat`: one reader thread, and a router that hands each line either
to a pending yes/no question (a MUTATING tool, a new session) or to the chat."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import TextIO


class LineRouter:
    def __init__(self) -> None:
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._questions: list[asyncio.Future[str | None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, stream: TextIO | None = None) -> None:
        """Read `stream` (stdin) in a daemon thread; None is fed at end of input."""
        self._loop = asyncio.get_running_loop()
        source = stream or sys.stdin
        threading.Thread(target=self._read, args=(source,), name="vance-stdin", daemon=True).start()

    def _read(self, stream: TextIO) -> None:
        assert self._loop is not None
        while True:
            line = stream.readline()
            if not line:
                self._loop.call_soon_threadsafe(self.feed, None)
                return
            self._loop.call_soon_threadsafe(self.feed, line.rstrip("\r\n"))

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
