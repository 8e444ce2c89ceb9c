"""Steer burst: N `process-steer` frames sent back to back into one process of one real Brain.

The Brain is `manage.py brain` in its own OS process with the scripted LLM provider (zero
latency, replies "echo: <message>"). This process opens one real `websockets` connection,
creates a session (ford chat recipe) and sends N `process-steer` frames to the session's chat
process without waiting for any reply, then counts the `process-steered` replies and the
assistant `chat-message` events (ford answers every steer with one turn: the steer as user
message, then the reply).

  accepted   N / (time of the last `process-steered` reply − time of the first send)
  drained    time from the first send until the assistant reply to the last steer arrived

Afterwards GET /api/processes/{id} must show the process IDLE with nothing pending and a
conversation of exactly the N steers, each once and in order, each followed by its reply, and
the socket must have got every event of the session once and in order.
Budget: every steer consumed once and in order, >= 500 steers/s accepted.

Runtimes: embedded (SQLite, in-memory channel layer, in-process worker) always; postgres+redis
(a throwaway database on the server of DATABASE_URL, dropped afterwards, and Redis with a
channel prefix of its own) when DATABASE_URL and REDIS_URL are set.

    .venv/bin/python bench/steer_burst.py [--steers 1000]

See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
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
    available_runtimes,
    create_chat_session,
    is_reply_event,
    open_socket,
    print_log_warnings,
    print_table,
    proc_memory_mb,
    request_frame,
)

BUDGET_STEERS_PER_SECOND = 500.0
# How long the last events of the session may take to reach the socket once the process is IDLE.
EVENT_SETTLE_SECONDS = 5.0


def steer_text(index: int) -> str:
    return f"steer number {index}"


@dataclass
class Burst:
    """What came back over the socket while the burst ran."""

    process_id: str
    session_id: str
    steers: int
    order: EventOrder = field(default_factory=EventOrder)
    first_send: float = 0.0
    last_send: float = 0.0
    steered: list[str] = field(default_factory=list)  # replyTo of each process-steered
    last_steered: float = 0.0
    replies: list[str] = field(default_factory=list)  # assistant texts, in arrival order
    last_reply: float = 0.0
    errors: list[dict[str, Any]] = field(default_factory=list)
    all_steered: asyncio.Event = field(default_factory=asyncio.Event)
    all_replied: asyncio.Event = field(default_factory=asyncio.Event)

    async def read(self, ws: Any) -> None:
        try:
            await self._read(ws)
        finally:
            # The socket is gone (or the reader cancelled): nobody waits for more.
            self.all_steered.set()
            self.all_replied.set()

    async def _read(self, ws: Any) -> None:
        async for raw in ws:
            frame = json.loads(raw)
            self.order.see(frame)
            kind = frame.get("type")
            if kind == "process-steered":
                self.steered.append(str(frame.get("replyTo")))
                self.last_steered = time.perf_counter()
                if len(self.steered) == self.steers:
                    self.all_steered.set()
            elif kind == "error":
                self.errors.append(frame)
                self.all_steered.set()
                self.all_replied.set()
            elif is_reply_event(frame, self.process_id):
                self.replies.append(str(frame["data"]["text"]))
                self.last_reply = time.perf_counter()
                if len(self.replies) == self.steers:
                    self.all_replied.set()


async def burst(brain: BenchBrain, token: str, args: argparse.Namespace) -> dict[str, Any]:
    ws = await open_socket(brain, token)
    try:
        session_id, process_id = await create_chat_session(ws)
        state = Burst(process_id, session_id, args.steers)
        reader = asyncio.create_task(state.read(ws))
        memory_before = brain.memory_mb()
        frames = [
            request_frame(
                "process-steer", f"s{i}", {"processId": process_id, "message": steer_text(i)}
            )
            for i in range(args.steers)
        ]
        with PySpy(brain.pid, args.py_spy):
            cpu_before = brain.cpu_seconds()
            state.first_send = time.perf_counter()
            for frame in frames:
                await ws.send(frame)
            state.last_send = time.perf_counter()
            try:
                await asyncio.wait_for(state.all_steered.wait(), args.timeout)
                await asyncio.wait_for(state.all_replied.wait(), args.timeout)
            except TimeoutError:
                pass
            cpu = brain.cpu_seconds() - cpu_before
        memory_after = brain.memory_mb()
        if state.errors:
            raise BenchFailure(f"{len(state.errors)} error frames, the first: {state.errors[0]}")
        if len(state.steered) != args.steers:
            raise BenchFailure(
                f"{len(state.steered)} of {args.steers} process-steered replies within "
                f"{args.timeout}s"
            )
        if len(state.replies) != args.steers:
            raise BenchFailure(
                f"{len(state.replies)} of {args.steers} replies within {args.timeout}s"
            )
        # Before the socket closes: a cli session's processes are suspended on disconnect.
        await asyncio.to_thread(check_process, brain, token, state, args)
        reader.cancel()
    finally:
        await ws.close()
    return {
        "accept_seconds": state.last_steered - state.first_send,
        "send_seconds": state.last_send - state.first_send,
        "drain_seconds": state.last_reply - state.first_send,
        "cpu": cpu,
        "memory_before": memory_before,
        "memory_after": memory_after,
    }


def check_process(brain: BenchBrain, token: str, state: Burst, args: argparse.Namespace) -> None:
    """The replies, then the stored process: IDLE, nothing pending, the N steers once and in
    order, each followed by its reply; then the socket's events."""
    wanted = [f"s{i}" for i in range(args.steers)]
    if state.steered != wanted:
        raise BenchFailure("process-steered replies are not in the order the steers were sent")
    expected_replies = [f"echo: {steer_text(i)}" for i in range(args.steers)]
    if state.replies != expected_replies:
        first = next(
            i for i, pair in enumerate(zip(state.replies, expected_replies, strict=True))
            if pair[0] != pair[1]
        )  # fmt: skip
        raise BenchFailure(f"reply #{first} is {state.replies[first]!r}")
    path = f"/api/processes/{state.process_id}"
    deadline = time.perf_counter() + args.timeout
    while True:
        detail = brain.get(f"{path}?messages=0", token)
        if detail["status"] == "IDLE" and detail["pending"] == 0:
            break
        if time.perf_counter() > deadline:
            raise BenchFailure(
                f"{state.process_id} is {detail['status']}, {detail['pending']} pending"
            )
        time.sleep(0.01)
    stored = [(m["role"], m["content"]) for m in brain.get(path, token)["conversation"]]
    expected = []
    for i in range(args.steers):
        expected += [("user", steer_text(i)), ("assistant", f"echo: {steer_text(i)}")]
    if stored != expected:
        users = [content for role, content in stored if role == "user"]
        duplicates = len(users) - len(set(users))
        raise BenchFailure(
            f"stored conversation differs: {len(stored)} messages (expected {len(expected)}), "
            f"{duplicates} duplicated steers, in order: {users == sorted(users, key=_steer_no)}"
        )
    # Every event of the session reached the socket once, in order, the last ones too.
    last_seq = brain.get(f"/api/sessions/{state.session_id}", token)["lastSeq"]
    deadline = time.perf_counter() + EVENT_SETTLE_SECONDS
    while state.order.last < last_seq and time.perf_counter() < deadline:
        time.sleep(0.01)
    if state.order.problems:
        raise BenchFailure(f"session events: {'; '.join(state.order.problems)}")
    if state.order.last != last_seq:
        raise BenchFailure(
            f"the socket got events up to seq {state.order.last}; the session has {last_seq} "
            f"({EVENT_SETTLE_SECONDS:g} s after the process was IDLE)"
        )


def _steer_no(text: str) -> int:
    return int(text.rsplit(" ", 1)[-1]) if text.rsplit(" ", 1)[-1].isdigit() else -1


def run_runtime(runtime: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"  running {runtime} …", file=sys.stderr, flush=True)
    worker_kind = args.worker if runtime == "postgres+redis" else "inprocess"
    with Deployment(runtime, "steer", worker=worker_kind) as deployment:
        worker = deployment.celery_worker() if deployment.worker == "celery" else None
        brain: BenchBrain | None = None
        try:
            brain = BenchBrain(deployment)
            result = asyncio.run(burst(brain, deployment.token, args))
            if worker is not None:
                result["worker_peak"] = proc_memory_mb(worker.process.pid)["peak"]
        except BenchFailure as exc:
            tail = brain.log_tail(12) if brain is not None else ""
            print(f"    {runtime} FAILED: {exc}\n{tail}", file=sys.stderr)
            return {"runtime": runtime, "error": str(exc).splitlines()[0][:120]}
        finally:
            code = brain.stop() if brain is not None else None
            if worker is not None:
                worker.stop()
        if code != 0:
            return {"runtime": runtime, "error": f"the Brain exited with {code}"}
        result.update(
            runtime=runtime,
            description=deployment.description,
            memory_start=brain.memory_at_start,
            log_warnings=brain.log_warnings(),
        )
        return result


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> bool:
    print()
    print(
        f"{args.steers} process-steer frames sent back to back over one websocket into one "
        "ford process; scripted provider (zero latency); Brain = `manage.py brain` OS process"
    )
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    print()
    rows = []
    met = True
    for row in results:
        if "error" in row:
            rows.append([row["runtime"], "FAILED", row["error"], *[""] * 7])
            continue
        rate = args.steers / row["accept_seconds"]
        met = met and rate >= args.budget
        rows.append(
            [
                row["runtime"],
                f"{rate:.0f}",
                f"{row['send_seconds']:.2f}",
                f"{row['accept_seconds']:.2f}",
                f"{row['drain_seconds']:.2f}",
                f"{args.steers / row['drain_seconds']:.0f}",
                f"{row['cpu'] / row['drain_seconds'] * 100:.0f} %",
                f"{row['memory_start']['rss']:.1f} MB",
                f"{row['memory_after']['rss']:.1f} MB",
                f"{row['memory_after']['peak']:.1f} MB",
            ]
        )
    print_table(
        ["runtime", "accepted/s", "send s", "accept s", "drain s", "turns/s", "Brain CPU",
         "RSS start", "RSS end", "peak RSS"],
        rows,
    )  # fmt: skip
    print()
    for row in results:
        if "error" not in row:
            extra = (
                f"; Celery worker peak RSS {row['worker_peak']:.1f} MB"
                if "worker_peak" in row
                else ""
            )
            print(f"{row['runtime']}: {row['description']}{extra}")
            print_log_warnings(row["log_warnings"])
    print(
        "accepted/s = steers / (last process-steered reply − first send); send s = time to "
        "write all frames; accept s = first send → last process-steered;\ndrain s = first send "
        "→ assistant chat-message for the last steer; turns/s = steers / drain s; Brain CPU = "
        "CPU time of the Brain process during the drain / drain s (100 % = one core);\nRSS start = "
        "Brain VmRSS when healthy, RSS end = VmRSS after the drain, peak RSS = VmHWM"
    )
    print(
        "checked: process-steered replies in send order, every reply 'echo: <steer>' in order, "
        "process IDLE with 0 pending, stored conversation = each steer once, in order, + reply,"
        "\nthe socket got every event of the session (seq 1 … lastSeq) once and in order"
    )
    ok = [row for row in results if "error" not in row]
    if ok:
        rates = ", ".join(f"{r['runtime']} {args.steers / r['accept_seconds']:.0f}" for r in ok)
        print(
            f"budget >= {args.budget:g} steers/s accepted: {'met' if met else 'NOT met'} ({rates})"
        )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--steers", type=int, default=1000, help="steers in the burst")
    parser.add_argument(
        "--runtime",
        choices=("embedded", "postgres+redis"),
        help="only this runtime (default: embedded, and postgres+redis when DATABASE_URL and "
        "REDIS_URL are set)",
    )
    parser.add_argument(
        "--worker",
        choices=("inprocess", "celery"),
        default="inprocess",
        help="postgres+redis: drive lanes in the Brain (inprocess, as turn_overhead.py) or in a "
        "separate real Celery worker process (celery)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for all replies"
    )
    parser.add_argument(
        "--budget", type=float, default=BUDGET_STEERS_PER_SECOND, help="steers/s to accept"
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when the budget is not met, too"
    )
    parser.add_argument(
        "--py-spy",
        metavar="PATH",
        help="record the Brain with py-spy during the burst (.txt: raw collapsed stacks, "
        ".json: speedscope, else SVG); one runtime only",
    )
    args = parser.parse_args()
    if args.steers < 1 or args.timeout <= 0:
        parser.error("--steers must be >= 1, --timeout > 0")
    wanted = [args.runtime] if args.runtime else ["embedded", "postgres+redis"]
    runtimes, skipped = available_runtimes(*wanted)
    if args.runtime and skipped:
        parser.error(skipped[0])
    if args.py_spy and len(runtimes) > 1:
        parser.error("--py-spy needs --runtime")
    results = [run_runtime(runtime, args) for runtime in runtimes]
    met = report(results, args)
    for note in skipped:
        print(f"({note})")
    if any("error" in row for row in results):
        return 1
    return 0 if met or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
