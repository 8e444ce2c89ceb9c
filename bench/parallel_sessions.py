"""Parallel sessions: S sessions chat at once with one real Brain, T turns each.

The Brain is `manage.py brain` in its own OS process on the embedded default (SQLite in a
temporary VANCETOPE_VAR_DIR, in-memory channel layer, in-process worker), with the scripted LLM
provider (zero latency, replies "echo: <message>"). This process is the client: one asyncio
loop, one real `websockets` connection per session. Each session sends its next `chat` as soon
as the assistant `chat-message` event of the previous one arrived, so S turns are in flight at
any time. Two Brains, one after the other: the default chat recipe (arthur; the session-create
names no recipe) and the ford recipe. The per-user message limit counts every message (a limit
that refuses none). LangGraph's in-process turn (the peers' folder, VANCETOPE_BENCH_PEERS) is
measured in the same run, one turn at a time (it has no server of its own here), and printed
beside.

A turn is timed from sending its `chat` frame to receiving that reply; the run is timed from
the moment all sessions start their timed turns until the last reply arrived. Every reply is
checked; afterwards every session's stored conversation (REST) must hold each message once, in
order, and every socket must have got all its session's events once, in order. Budget: >= 200
turns/s in total, with the default chat.

    .venv/bin/python bench/parallel_sessions.py [--sessions 10] [--turns 100]

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
from pathlib import Path
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
    request_frame,
)
from peers import (
    LANGGRAPH_TURNS,
    PEERS_VARIABLE,
    LangGraphTurns,
    langgraph_turns,
    load_average,
    missing_reason,
    peers_dir,
)

BUDGET_TURNS_PER_SECOND = 200.0
# The chats measured, each on a Brain of its own: the default chat recipe (session-create names
# none: arthur) and ford; the session-create's recipe of each.
CHATS = ("default", "ford")
RECIPES: dict[str, str | None] = {"default": None, "ford": "ford"}
# LangGraph's turns per run (its history grows as one session's does here).
PEER_TURNS = 500
# How long the last events of a session may take to reach its socket once its process is IDLE.
EVENT_SETTLE_SECONDS = 5.0


def turn_text(session: int, turn: int) -> str:
    return f"session {session} turn {turn}"


@dataclass
class ChatSession:
    index: int
    ws: Any
    session_id: str = ""
    process_id: str = ""
    turns_done: int = 0
    latencies: list[float] = field(default_factory=list)
    order: EventOrder = field(default_factory=EventOrder)

    async def chat(self, turns: int, wait_seconds: float, timed: bool) -> None:
        for _ in range(turns):
            text = turn_text(self.index, self.turns_done)
            started = time.perf_counter()
            await self.ws.send(request_frame("chat", f"c{self.turns_done}", {"text": text}))
            reply = await self._reply(wait_seconds, text)
            elapsed = time.perf_counter() - started
            if reply != f"echo: {text}":
                raise BenchFailure(f"session {self.index}: {text!r} got the reply {reply!r}")
            self.turns_done += 1
            if timed:
                self.latencies.append(elapsed)

    async def _reply(self, wait_seconds: float, text: str) -> str:
        try:
            async with asyncio.timeout(wait_seconds):
                while True:
                    frame = json.loads(await self.ws.recv())
                    self.order.see(frame)
                    if frame.get("type") == "error":
                        raise BenchFailure(f"session {self.index}: error frame {frame}")
                    if is_reply_event(frame, self.process_id):
                        return str(frame["data"]["text"])
        except TimeoutError:
            raise BenchFailure(
                f"session {self.index}: no reply to {text!r} within {wait_seconds}s"
            ) from None

    async def settle_events(self, last_seq: int, wait_seconds: float) -> list[str]:
        """Read the session's remaining events (those after the last reply) up to `last_seq`;
        every event must have come once, in order."""
        try:
            async with asyncio.timeout(wait_seconds):
                while self.order.last < last_seq:
                    self.order.see(json.loads(await self.ws.recv()))
        except TimeoutError:
            pass
        problems = [f"session {self.index}: {problem}" for problem in self.order.problems]
        if self.order.last != last_seq:
            problems.append(
                f"session {self.index}: events up to seq {self.order.last} reached the socket, "
                f"the session has {last_seq}"
            )
        return problems


def check_conversations(brain: BenchBrain, token: str, sessions: list[ChatSession]) -> list[str]:
    """Every session's stored conversation: user, assistant for each turn, once, in order."""
    problems = []
    for session in sessions:
        detail = brain.get(f"/api/processes/{session.process_id}", token)
        stored = [(m["role"], m["content"]) for m in detail["conversation"]]
        expected = []
        for turn in range(session.turns_done):
            text = turn_text(session.index, turn)
            expected += [("user", text), ("assistant", f"echo: {text}")]
        if stored != expected:
            problems.append(
                f"session {session.index} ({session.process_id}): {len(stored)} stored "
                f"messages differ from the {len(expected)} expected"
            )
        if detail["status"] != "IDLE" or detail["pending"] != 0:
            problems.append(
                f"{session.process_id} is {detail['status']} with {detail['pending']} pending"
            )
    return problems


def last_seqs(brain: BenchBrain, token: str, sessions: list[ChatSession]) -> list[int]:
    return [int(brain.get(f"/api/sessions/{s.session_id}", token)["lastSeq"]) for s in sessions]


async def run(
    brain: BenchBrain, token: str, args: argparse.Namespace, recipe: str | None
) -> dict[str, Any]:
    sockets = await asyncio.gather(*(open_socket(brain, token) for _ in range(args.sessions)))
    sessions = [ChatSession(index, ws) for index, ws in enumerate(sockets)]
    try:
        ids = await asyncio.gather(*(create_chat_session(s.ws, recipe=recipe) for s in sessions))
        for session, (session_id, process_id) in zip(sessions, ids, strict=True):
            session.session_id, session.process_id = session_id, process_id
        engine = brain.get(f"/api/processes/{sessions[0].process_id}", token)["thinkEngine"]
        await asyncio.gather(*(s.chat(args.warmup, args.turn_timeout, False) for s in sessions))
        memory_before = brain.memory_mb()
        with PySpy(brain.pid, args.py_spy):
            cpu_before = brain.cpu_seconds()
            started = time.perf_counter()
            await asyncio.gather(*(s.chat(args.turns, args.turn_timeout, True) for s in sessions))
            wall = time.perf_counter() - started
            cpu = brain.cpu_seconds() - cpu_before
        memory_after = brain.memory_mb()
        # Before the sockets close: a cli session's processes are suspended on disconnect.
        problems = check_conversations(brain, token, sessions)
        seqs = last_seqs(brain, token, sessions)
        for session, last_seq in zip(sessions, seqs, strict=True):
            problems += await session.settle_events(last_seq, EVENT_SETTLE_SECONDS)
        if problems:
            raise BenchFailure("; ".join(problems[:5]))
    finally:
        await asyncio.gather(*(s.ws.close() for s in sessions), return_exceptions=True)
    latencies = [latency for s in sessions for latency in s.latencies]
    per_session = [len(s.latencies) / sum(s.latencies) for s in sessions]
    return {
        "engine": engine,
        "turns": len(latencies),
        "wall": wall,
        "cpu": cpu,
        "latencies": latencies,
        "per_session": per_session,
        "memory_before": memory_before,
        "memory_after": memory_after,
    }


def row_of(chat: str, brain: BenchBrain, result: dict[str, Any], peer: Any) -> list[Any]:
    latencies = result["latencies"]
    rate = result["turns"] / result["wall"]
    ms = [f"{value * 1000:.1f}" for value in (
        percentile(latencies, 50), percentile(latencies, 99), statistics.fmean(latencies),
        max(latencies),
    )]  # fmt: skip
    return [
        f"{chat} ({result['engine']})", result["turns"], f"{result['wall']:.2f}",
        f"{rate:.1f}", f"{rate / peer.turns_per_second:.1f}" if peer else "-", *ms,
        f"{result['cpu'] * 1000 / result['turns']:.1f}",
        f"{result['cpu'] / result['wall'] * 100:.0f} %",
        f"{brain.memory_at_start['rss']:.1f} MB", f"{result['memory_after']['rss']:.1f} MB",
        f"{result['memory_after']['peak']:.1f} MB",
    ]  # fmt: skip


def report(
    runs: list[tuple[str, BenchBrain, dict[str, Any]]],
    peer: Any,
    reason: str,
    args: argparse.Namespace,
) -> None:
    print()
    print(
        f"{args.sessions} sessions chatting in parallel, {args.turns} timed turns each after "
        f"{args.warmup} warm-up turns; scripted provider (zero latency); the per-user message "
        "limit counts every message"
    )
    print(
        "Brain: `manage.py brain` OS process, embedded default (SQLite, in-memory channel "
        "layer, in-process worker), one per chat; client: this process, real websockets"
    )
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs; {load_average()}"
    )
    if peer is not None:
        print(
            f"LangGraph in-process SqliteSaver, one turn at a time (same run, mean of the runs "
            f"before and after): {peer.turns_per_second:.0f} turns/s, p50 {peer.p50_ms:.2f} ms"
        )
    else:
        print(f"LangGraph in-process: left out ({reason})")
    print()
    print_table(
        ["chat", "turns", "wall s", "turns/s", "x peer", "p50 ms", "p99 ms", "mean ms", "max ms",
         "CPU ms/turn", "Brain CPU", "RSS start", "RSS end", "peak RSS"],
        [row_of(chat, brain, result, peer) for chat, brain, result in runs],
    )  # fmt: skip
    print()
    for chat, brain, result in runs:
        slowest, fastest = min(result["per_session"]), max(result["per_session"])
        print(
            f"{chat}: per session {slowest:.1f} … {fastest:.1f} turns/s; Brain started in "
            f"{brain.healthy_after:.2f} s"
        )
    print(f"client peak RSS {peak_rss_mb():.1f} MB")
    print(
        "turns/s = all timed turns / wall time from the start of the timed turns to the last "
        "reply; x peer = turns/s / LangGraph's turns/s; p50/p99 (nearest rank) of one turn: "
        "chat frame sent → its assistant chat-message event received;\nCPU ms/turn = CPU time "
        "(user + system, all threads) the Brain used during the timed turns / turns; Brain "
        "CPU = that CPU time / wall time (100 % = one core);\nRSS start = Brain VmRSS when "
        "healthy, RSS end = VmRSS after the timed turns, peak RSS = VmHWM (high-water mark) "
        "of the Brain process"
    )
    for chat, _, result in runs:
        print(f"{chat}:", end=" ")
        print_log_warnings(result["warnings"])


def budget_met(runs: list[tuple[str, BenchBrain, dict[str, Any]]], budget: float) -> bool:
    """The budget holds for the default chat (when it ran)."""
    met = True
    for chat, _, result in runs:
        if chat != "default":
            continue
        rate = result["turns"] / result["wall"]
        met = rate >= budget
        verdict = "met" if met else "NOT met"
        print(f"budget >= {budget:g} turns/s in total, default chat: {verdict} ({rate:.1f})")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--sessions", type=int, default=10, help="sessions chatting at once")
    parser.add_argument("--turns", type=int, default=100, help="timed turns per session")
    parser.add_argument(
        "--warmup", type=int, default=5, help="untimed turns per session before them"
    )
    parser.add_argument(
        "--turn-timeout", type=float, default=30.0, help="seconds one turn may take"
    )
    parser.add_argument(
        "--chat", choices=CHATS, help="only this chat (default: both, the default chat first)"
    )
    parser.add_argument(
        "--budget", type=float, default=BUDGET_TURNS_PER_SECOND, help="turns/s to reach in total"
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when the budget is not met, too"
    )
    parser.add_argument(
        "--peers",
        default=os.environ.get(PEERS_VARIABLE, ""),
        help=f"the peers' folder (langgraph/bench_inproc.py; default ${PEERS_VARIABLE})",
    )
    parser.add_argument("--no-peer", action="store_true", help="leave LangGraph out")
    parser.add_argument(
        "--py-spy",
        metavar="PATH",
        help="record the Brain with py-spy during the timed turns (.txt: raw collapsed stacks, "
        ".json: speedscope, else SVG)",
    )
    args = parser.parse_args()
    if args.sessions < 1 or args.turns < 1 or args.warmup < 0 or args.turn_timeout <= 0:
        parser.error("--sessions and --turns must be >= 1, --warmup >= 0, --turn-timeout > 0")
    try:
        return bench(args)
    except BenchFailure as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1


def peer_runs(args: argparse.Namespace) -> tuple[list[LangGraphTurns], Path | None, str]:
    peers = peers_dir(args.peers)
    reason = "--no-peer" if args.no_peer else missing_reason(peers, LANGGRAPH_TURNS)
    if reason is not None or peers is None:
        return [], None, reason or ""
    return [langgraph_turns(peers, PEER_TURNS)], peers, ""


def bench(args: argparse.Namespace) -> int:
    # The peer runs before and after the Brains (the machine's load moves both).
    peer_results, peers, reason = peer_runs(args)
    runs: list[tuple[str, BenchBrain, dict[str, Any]]] = []
    for chat in [args.chat] if args.chat else list(CHATS):
        with Deployment("embedded", f"parallel_{chat}") as deployment:
            brain = BenchBrain(deployment)
            try:
                result = asyncio.run(run(brain, deployment.token, args, RECIPES[chat]))
            except BenchFailure as exc:
                print(f"FAILED ({chat}): {exc}", file=sys.stderr)
                print(brain.log_tail(), file=sys.stderr)
                return 1
            finally:
                code = brain.stop()
            if code != 0:
                print(f"FAILED: the Brain exited with {code}:\n{brain.log_tail()}", file=sys.stderr)
                return 1
            # Read before the deployment (and the Brain's log with it) is deleted.
            result["warnings"] = brain.log_warnings()
            runs.append((chat, brain, result))
    if peers is not None:
        peer_results.append(langgraph_turns(peers, PEER_TURNS))
    peer = None
    if peer_results:
        peer = LangGraphTurns(
            statistics.fmean(run.p50_ms for run in peer_results),
            statistics.fmean(run.p99_ms for run in peer_results),
            statistics.fmean(run.turns_per_second for run in peer_results),
            statistics.fmean(run.bytes_per_turn for run in peer_results),
            "",
        )
    report(runs, peer, reason, args)
    met = budget_met(runs, args.budget)
    return 0 if met or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
