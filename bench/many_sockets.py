"""Many sockets: S concurrent WebSocket sessions held by one real Brain, each chatting now and then.

The Brain is `manage.py brain` in its own OS process on the embedded default (SQLite in a
temporary VANCETOPE_VAR_DIR, in-memory channel layer, in-process worker), with the scripted LLM
provider (zero latency, replies "echo: <message>"). This process is the client: one asyncio
loop holding S real `websockets` connections, each with its own session (ford chat recipe),
pinging every 10 s as the vance CLI does.

First all S sockets connect and create their session (a bounded number at a time). Then every
session sends one `chat` per interval, the sessions' sends staggered evenly over the interval
(session i sends at i * interval / S, then every interval), until the duration is over. Every
chat must be answered with its assistant `chat-message` event ("echo: <message>"); a turn is
timed from sending the chat to that reply. Every socket must get all its session's events once
and in order (seq 1 … the session's lastSeq). At the end the sockets close, and every session
must then be SUSPENDED (the cli disconnect policy).

The Brain's memory (VmRSS, and VmHWM = peak RSS, from /proc) is read when it is healthy, after
all sockets are connected, and after the last reply.

    .venv/bin/python bench/many_sockets.py [--sessions 1000] [--interval 60] [--duration 120]
    .venv/bin/python bench/many_sockets.py --sessions 300 --interval 0 --duration 20 --budget 150

With `--interval 0` each session sends its next chat as soon as its last one is answered: the
Brain serves as fast as it can, and served/s is its capacity with that many sockets.

See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from common import (
    BenchBrain,
    BenchFailure,
    Deployment,
    EventOrder,
    HelpFormatter,
    PySpy,
    create_chat_session,
    is_reply_event,
    open_socket,
    peak_rss_mb,
    percentile,
    print_log_warnings,
    print_table,
    raise_open_files_limit,
    request_frame,
)

# How long the last events of a session may take to reach its socket after the last reply.
EVENT_SETTLE_SECONDS = 10.0


def _set(event: asyncio.Event) -> asyncio.Event:
    event.set()
    return event


@dataclass
class Client:
    """One socket with its session; sends chats on its schedule, collects their replies."""

    index: int
    ws: Any = None
    process_id: str = ""
    session_id: str = ""
    sent: dict[str, float] = field(default_factory=dict)  # text → time sent, until answered
    sent_count: int = 0
    latencies: list[float] = field(default_factory=list)
    last_answer: float = 0.0
    problems: list[str] = field(default_factory=list)
    reader: asyncio.Task[None] | None = None
    closing: bool = False
    order: EventOrder = field(default_factory=EventOrder)
    # Set while every chat sent so far is answered.
    all_answered: asyncio.Event = field(default_factory=lambda: _set(asyncio.Event()))

    async def connect(self, brain: BenchBrain, token: str, args: argparse.Namespace) -> None:
        ping = args.ping_interval or None
        self.ws = await open_socket(brain, token, ping_interval=ping, ping_timeout=ping)
        self.session_id, self.process_id = await create_chat_session(
            self.ws, wait_seconds=args.reply_timeout
        )
        self.reader = asyncio.create_task(self.read())

    async def read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for raw in self.ws:
                frame = json.loads(raw)
                self.order.see(frame)
                if frame.get("type") == "error":
                    self.problems.append(f"error frame {frame}")
                elif is_reply_event(frame, self.process_id):
                    self.answered(frame["data"]["text"])
        except ConnectionClosed as exc:
            if not self.closing:
                self.problems.append(f"socket closed by the Brain: {exc}")

    def answered(self, reply: str) -> None:
        now = time.perf_counter()
        text = reply.removeprefix("echo: ")
        started = self.sent.pop(text, None)
        if started is None or not reply.startswith("echo: "):
            self.problems.append(f"unexpected reply {reply!r}")
            return
        self.latencies.append(now - started)
        self.last_answer = now
        if not self.sent:
            self.all_answered.set()

    async def send_chat(self, turn: int) -> None:
        text = f"socket {self.index} chat {turn}"
        self.sent[text] = time.perf_counter()
        self.all_answered.clear()
        self.sent_count += 1
        await self.ws.send(request_frame("chat", f"c{turn}", {"text": text}))

    async def chat_on_schedule(self, start: float, args: argparse.Namespace) -> None:
        offset = self.index * args.interval / args.sessions
        turn = 0
        while offset + turn * args.interval < args.duration:
            delay = start + offset + turn * args.interval - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await self.send_chat(turn)
            turn += 1

    async def chat_closed_loop(self, start: float, args: argparse.Namespace) -> None:
        """--interval 0: the next chat as soon as the last one is answered, until the
        duration is over (what the Brain can serve, not what a schedule offers)."""
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        turn = 0
        while time.perf_counter() - start < args.duration:
            await self.send_chat(turn)
            turn += 1
            try:
                await asyncio.wait_for(self.all_answered.wait(), args.reply_timeout)
            except TimeoutError:
                return  # counted as unanswered

    async def close(self) -> None:
        self.closing = True
        await self.ws.close()
        if self.reader is not None:
            await self.reader


async def connect_all(
    brain: BenchBrain, token: str, args: argparse.Namespace
) -> tuple[list[Client], list[str]]:
    gate = asyncio.Semaphore(args.connect_concurrency)
    clients = [Client(index) for index in range(args.sessions)]
    failures: list[str] = []

    async def connect(client: Client) -> None:
        async with gate:
            try:
                await client.connect(brain, token, args)
            except Exception as exc:
                failures.append(f"socket {client.index}: {type(exc).__name__}: {exc}")

    await asyncio.gather(*(connect(client) for client in clients))
    return [client for client in clients if client.reader is not None], failures


def last_seqs(brain: BenchBrain, token: str, count: int) -> dict[str, int]:
    """lastSeq of every session of the user (one listing page)."""
    page = brain.get(f"/api/sessions?limit={count + 100}", token)
    return {row["id"]: int(row["lastSeq"]) for row in page["results"]}


async def check_event_streams(
    brain: BenchBrain, token: str, clients: list[Client], wait_seconds: float
) -> list[str]:
    """Every socket got all its session's events (seq 1 … lastSeq) once and in order."""
    seqs = await asyncio.to_thread(last_seqs, brain, token, len(clients))
    deadline = time.perf_counter() + wait_seconds
    while time.perf_counter() < deadline:
        if all(c.order.last >= seqs.get(c.session_id, 0) for c in clients):
            break
        await asyncio.sleep(0.05)
    problems = []
    for client in clients:
        problems += [f"socket {client.index}: {problem}" for problem in client.order.problems]
        if client.order.last != seqs.get(client.session_id):
            problems.append(
                f"socket {client.index}: events up to seq {client.order.last} arrived, its "
                f"session {client.session_id} has {seqs.get(client.session_id)}"
            )
    return problems


def sessions_suspended(brain: BenchBrain, token: str) -> int:
    return int(brain.get("/api/sessions?status=SUSPENDED&limit=1", token)["count"])


async def run(brain: BenchBrain, token: str, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"memory_start": brain.memory_at_start}
    started = time.perf_counter()
    cpu_before = brain.cpu_seconds()
    clients, failures = await connect_all(brain, token, args)
    result["connect_seconds"] = time.perf_counter() - started
    result["connect_cpu"] = brain.cpu_seconds() - cpu_before
    result["connected"] = len(clients)
    result["connect_failures"] = failures
    result["memory_connected"] = brain.memory_mb()
    try:
        if failures:
            raise BenchFailure(
                f"{len(failures)} sockets failed to connect, the first: {failures[0]}"
            )
        print(
            f"  {len(clients)} sockets connected in {result['connect_seconds']:.1f} s; chatting "
            f"for {args.duration:g} s …",
            file=sys.stderr,
            flush=True,
        )
        with PySpy(brain.pid, args.py_spy):
            cpu_before = brain.cpu_seconds()
            start = time.perf_counter() + 0.5
            chat = Client.chat_closed_loop if args.interval == 0 else Client.chat_on_schedule
            await asyncio.gather(*(chat(client, start, args) for client in clients))
            answered = asyncio.gather(*(client.all_answered.wait() for client in clients))
            try:
                await asyncio.wait_for(answered, args.reply_timeout)
            except TimeoutError:
                pass  # counted as unanswered below
            result["chat_seconds"] = time.perf_counter() - start
            # From the first chat sent to the last reply received: what the Brain served.
            last_answer = max((client.last_answer for client in clients), default=start)
            result["served_seconds"] = max(args.duration, last_answer - start)
            result["chat_cpu"] = brain.cpu_seconds() - cpu_before
        result["memory_end"] = brain.memory_mb()
        result["event_problems"] = await check_event_streams(
            brain, token, clients, EVENT_SETTLE_SECONDS
        )
    finally:
        closing = time.perf_counter()
        gate = asyncio.Semaphore(args.connect_concurrency)

        async def close(client: Client) -> None:
            async with gate:
                await client.close()

        await asyncio.gather(*(close(client) for client in clients), return_exceptions=True)
    result["sent"] = sum(client.sent_count for client in clients)
    result["unanswered"] = sum(len(client.sent) for client in clients)
    result["latencies"] = [latency for client in clients for latency in client.latencies]
    result["problems"] = [problem for client in clients for problem in client.problems]
    # The cli disconnect policy: every session ends up SUSPENDED.
    deadline = time.perf_counter() + args.disconnect_timeout
    suspended = 0
    while time.perf_counter() < deadline:
        suspended = await asyncio.to_thread(sessions_suspended, brain, token)
        if suspended >= len(clients):
            break
        await asyncio.sleep(0.2)
    result["suspended"] = suspended
    result["disconnect_seconds"] = time.perf_counter() - closing
    result["memory_closed"] = brain.memory_mb()
    return result


def report(
    brain: BenchBrain, row: dict[str, Any], args: argparse.Namespace, brain_nofile: int | None
) -> list[str]:
    """Print the table; return the correctness problems."""
    problems = list(row["problems"]) + row["event_problems"]
    if row["unanswered"]:
        problems.insert(0, f"{row['unanswered']} of {row['sent']} chats unanswered")
    if row["suspended"] < row["connected"]:
        problems.append(
            f"{row['suspended']} of {row['connected']} sessions SUSPENDED "
            f"{args.disconnect_timeout:g} s after the sockets closed"
        )
    latencies = row["latencies"] or [float("nan")]
    start, connected, end = row["memory_start"], row["memory_connected"], row["memory_end"]
    per_socket_kib = (connected["rss"] - start["rss"]) * 1024 / max(1, row["connected"])
    print()
    offered = (
        "each session's next chat as soon as its last is answered"
        if args.interval == 0
        else f"one chat per session every {args.interval:g} s (staggered)"
    )
    print(
        f"{args.sessions} websocket sessions held by one Brain, {offered} for "
        f"{args.duration:g} s; ford, scripted provider (zero latency)"
    )
    print(
        "Brain: `manage.py brain` OS process, embedded default (SQLite, in-memory channel "
        "layer, in-process worker); client: this process, one asyncio loop, real websockets"
    )
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs; open-files limit: client {args.nofile}, Brain "
        f"{brain_nofile}"
    )
    print()
    print_table(
        ["sockets", "connect s", "CPU", "sent", "answered", "turns/s", "served/s", "p50 ms",
         "p99 ms", "mean ms", "max ms", "CPU", "CPU ms/turn"],
        [[row["connected"], f"{row['connect_seconds']:.1f}",
          f"{row['connect_cpu'] / row['connect_seconds'] * 100:.0f} %", row["sent"],
          row["sent"] - row["unanswered"], f"{row['sent'] / args.duration:.1f}",
          f"{(row['sent'] - row['unanswered']) / row['served_seconds']:.1f}",
          f"{percentile(latencies, 50) * 1000:.1f}", f"{percentile(latencies, 99) * 1000:.1f}",
          f"{statistics.fmean(latencies) * 1000:.1f}", f"{max(latencies) * 1000:.1f}",
          f"{row['chat_cpu'] / row['chat_seconds'] * 100:.0f} %",
          f"{row['chat_cpu'] * 1000 / max(1, row['sent'] - row['unanswered']):.2f}"]],
    )  # fmt: skip
    print()
    print_table(
        ["Brain memory", "start", "connected", "end", "closed", "peak (VmHWM)", "per socket"],
        [["RSS", f"{start['rss']:.1f} MB", f"{connected['rss']:.1f} MB",
          f"{end['rss']:.1f} MB", f"{row['memory_closed']['rss']:.1f} MB",
          f"{row['memory_closed']['peak']:.1f} MB", f"{per_socket_kib:.0f} KiB"]],
    )  # fmt: skip
    print()
    print(
        f"after closing: {row['suspended']} of {row['connected']} sessions SUSPENDED "
        f"{row['disconnect_seconds']:.1f} s after the first close; client peak RSS "
        f"{peak_rss_mb():.1f} MB; Brain started in {brain.healthy_after:.2f} s"
    )
    print_log_warnings(row["log_warnings"])
    served = (row["sent"] - row["unanswered"]) / row["served_seconds"]
    if args.budget:
        verdict = "met" if served >= args.budget else "NOT met"
        print(
            f"budget >= {args.budget:g} turns/s served with {row['connected']} sockets: "
            f"{verdict} ({served:.1f})"
        )
        if args.strict and served < args.budget:
            problems.append(f"served {served:.1f} turns/s, the budget is {args.budget:g}")
    print(
        "connect s = all sockets opened and session-create answered "
        f"({args.connect_concurrency} at a time); turns/s = sent / duration; p50/p99 (nearest "
        "rank) of one turn: chat sent → its assistant chat-message;\nserved/s = answered / "
        "(first chat sent → last reply received, at least the duration): below turns/s, the "
        "Brain fell behind;\nCPU = the Brain's CPU time "
        "(user + system, all threads) / wall time while connecting and while chatting (100 % = "
        "one core); CPU ms/turn = the Brain's CPU time while chatting / answered chats (what "
        "a turn costs the Brain; the least noisy figure on a shared machine);\nmemory: VmRSS when "
        "healthy (start), after all sockets connected, after the last reply (end), after the "
        "sockets closed and the sessions were suspended; per socket = (connected − start) / "
        "sockets"
    )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--sessions", type=int, default=1000, help="sockets, one session each")
    parser.add_argument(
        "--interval",
        type=float,
        default=60.0,
        help="seconds between two chats of one session (0: the next as soon as one is answered)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=120.0,
        help="seconds during which chats are sent (each session chats duration/interval times)",
    )
    parser.add_argument(
        "--connect-concurrency", type=int, default=20, help="sockets connecting at a time"
    )
    parser.add_argument(
        "--ping-interval",
        type=float,
        default=10.0,
        help="client websocket ping interval in s, as the vance CLI (0: no client pings)",
    )
    parser.add_argument(
        "--reply-timeout", type=float, default=60.0, help="seconds to wait for the last replies"
    )
    parser.add_argument(
        "--disconnect-timeout",
        type=float,
        default=120.0,
        help="seconds after closing until every session must be SUSPENDED",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=0.0,
        help="turns/s the Brain must serve (printed met or not; 0: none)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when --budget is not met")
    parser.add_argument(
        "--py-spy",
        metavar="PATH",
        help="record the Brain with py-spy while chatting (.txt: raw collapsed stacks, .json: "
        "speedscope, else SVG)",
    )
    args = parser.parse_args()
    if args.sessions < 1 or args.interval < 0 or args.duration <= 0:
        parser.error("--sessions must be >= 1, --interval >= 0, --duration > 0")
    # Each socket is a file descriptor in the client and in the Brain; the Brain inherits this.
    args.nofile = raise_open_files_limit(args.sessions + 512)
    if args.nofile < args.sessions + 64:
        parser.error(f"the open-files limit ({args.nofile}) is too low for {args.sessions} sockets")

    try:
        return bench(args)
    except BenchFailure as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1


def bench(args: argparse.Namespace) -> int:
    with Deployment("embedded", "sockets") as deployment:
        brain = BenchBrain(deployment)
        brain_nofile = brain.open_files_limit()
        try:
            row = asyncio.run(run(brain, deployment.token, args))
        except BenchFailure as exc:
            print(f"FAILED: {exc}\n{brain.log_tail(12)}", file=sys.stderr)
            brain.stop()
            return 1
        code = brain.stop()
        row["log_warnings"] = brain.log_warnings()
    problems = report(brain, row, args, brain_nofile)
    if code != 0:
        problems.append(f"the Brain exited with {code}")
    for problem in problems[:10]:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
