"""Drive a program in a pseudo-terminal, as a person at a terminal would (stdlib only)."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>()][0-9A-Za-z]?")


class Terminal:
    def __init__(self, args: Sequence[str], *, cwd: Path, env: dict[str, str]) -> None:
        master, slave = os.openpty()
        self.master = master
        self.process = subprocess.Popen(
            list(args),
            cwd=cwd,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self.output = ""
        self.position = 0  # where the next expect starts looking

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # the program exited and closed the terminal
            chunk = b""
        if not chunk:
            time.sleep(timeout)
            return
        self.output += ANSI.sub("", chunk.decode("utf-8", errors="replace")).replace("\r", "")

    def expect(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """Wait for `pattern` in the output after the previous match."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.output, self.position)
            if match:
                self.position = match.end()
                return match
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{pattern!r} not seen within {timeout}s; output so far:\n{self.output}"
                )
            self._read(0.1)

    def send_line(self, text: str) -> None:
        os.write(self.master, text.encode() + b"\r")

    def wait(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        return self.process.wait(timeout=1)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        os.close(self.master)
