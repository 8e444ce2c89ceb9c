"""llama-cpp-python's own OpenAI-compatible server, run as a child process with a GGUF model:
a server nobody here wrote, so the `openai` provider meets real streaming, real tool-call
formats and a stream without usage. Used by tests/real_llm and bench/real_llm.py.

    with LlamaServer(model_path) as server:
        server.base_url  # http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Self

# The library's function-calling chat format: a tool_choice naming a function is answered
# through a grammar made from the function's JSON Schema.
CHAT_FORMAT = "chatml-function-calling"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    def __init__(self, model_path: Path, *, context_tokens: int = 4096) -> None:
        self.port = free_port()
        self.model_path = model_path
        self.args = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model_path),
            "--chat_format", CHAT_FORMAT,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(context_tokens),
            "--verbose", "False",
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        """The model id the server answers to (its --model path)."""
        return str(self.model_path)

    def start(self, timeout: float = 120) -> None:
        self.process = subprocess.Popen(
            self.args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                _, errors = self.process.communicate()
                raise RuntimeError(f"llama_cpp.server exited: {errors.decode()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as answer:
                    if json.load(answer)["data"]:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout:g}s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
