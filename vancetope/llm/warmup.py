"""The local model's warm-up, in a child process, before the Brain serves.

A llama-cpp-python built for another CPU (a prebuilt wheel: CMAKE_ARGS does not apply to one)
kills the process of its first completion with a signal, logging nothing: the Brain would die
on its first chat (exit 139). So `brain` first loads the model in a child process and completes
a couple of tokens there; a crash is the child's, and the Brain refuses to start with one line
naming the fix. VANCETOPE_LOCAL_WARMUP=false skips it (docs/operations.md).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from vancetope.llm.base import LlmProvider
from vancetope.llm.local_model import LocalModelProblem

REINSTALL = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-binary llama-cpp-python --no-cache-dir '
    "--force-reinstall llama-cpp-python"
)
# What code built for another CPU dies of: an instruction this CPU lacks (SIGILL), or the
# SIGSEGV in llama_decode that a native build from another machine gave.
CPU_SIGNALS = frozenset({signal.SIGILL, signal.SIGSEGV, signal.SIGBUS})
# Loading a large model from a cold disk takes a while; a 135M one takes about a second.
WARM_UP_SECONDS = 300.0

# The child's code, run as `python -c WARM_UP <model file> <context tokens>`: load the model
# and complete two tokens of a chat, as the first chat would (llama_decode is where it crashed).
WARM_UP = """\
import sys
from llama_cpp import Llama
llama = Llama(model_path=sys.argv[1], n_ctx=int(sys.argv[2]), verbose=False)
llama.create_chat_completion(messages=[{"role": "user", "content": "Hello"}], max_tokens=2)
"""


def warm_up(
    model_path: Path,
    context_tokens: int,
    *,
    code: str = WARM_UP,
    timeout: float = WARM_UP_SECONDS,
) -> None:
    """Run `code` (the warm-up) in a child Python with the model file and context as its
    arguments. Raises LocalModelProblem, one line, when the child dies of a signal, fails or
    does not finish in `timeout` seconds."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(model_path), str(context_tokens)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise LocalModelProblem(
            f"the local model {model_path} did not finish its warm-up in {timeout:.0f} s; "
            "VANCETOPE_LOCAL_WARMUP=false skips it"
        ) from error
    problem = warm_up_problem(done.returncode, done.stderr)
    if problem:
        raise LocalModelProblem(problem)


def warm_up_problem(returncode: int, stderr: str) -> str:
    """What the warm-up child's exit says, in one line ("" when it passed)."""
    if returncode == 0:
        return ""
    if returncode < 0:
        try:
            died_of: signal.Signals | None = signal.Signals(-returncode)
        except ValueError:
            died_of = None
        name = died_of.name if died_of else f"signal {-returncode}"
        if died_of in CPU_SIGNALS:
            return (
                f"the local model crashed its warm-up ({name}): llama-cpp-python was built "
                f"for another CPU; reinstall it from source: {REINSTALL}"
            )
        return f"the local model's warm-up was killed ({name})"
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "no output"
    return f"the local model failed its warm-up (exit {returncode}): {last}"


def warm_up_provider(provider: LlmProvider) -> None:
    """The warm-up of the local provider's model, unless VANCETOPE_LOCAL_WARMUP is off; nothing
    for the other providers, whose models run elsewhere."""
    if provider.name != "local" or not settings.VANCETOPE_LOCAL_WARMUP:
        return
    from vancetope.llm.local_provider import LocalProvider

    if isinstance(provider, LocalProvider):
        warm_up(provider.model_path, provider.context_tokens)
