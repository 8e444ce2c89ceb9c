"""Where a turn's wall time goes: `turn_overhead.py --stages`.

The child stamps the clock (`time.perf_counter`, with the thread's name) as each of the turn's
stages begins and ends: the bench's client sending and reading frames, the consumer, the
thread that runs `send_chat` (the chat's lane thread, which then runs the turn; a service
thread where no lane thread is free), the lane's thread, its lease, the context, the engine
and its LLM call, the commit and each transaction's COMMIT, the push of the events and their
delivery to the socket. Each timed turn is cut out at the client's send of its `chat` frame,
and the table gives, per stage and occurrence in a turn, the median milliseconds from that
send at which it began and ended. The stamps are Python wrappers around those functions, about
fifty a turn: they make a turn half a millisecond longer (the p50 printed beside the table is the
stamped run's), so the table is read as a timeline, not as exact costs (the unstamped p50 is the
row's in the main table; the CPU by phase is `--profile`'s).

Only the embedded runtime's lanes run in the child's own process (on the distributed one they
run in the Celery worker), so the stages are stamped there alone. A stage whose function is
renamed fails the child at once (AttributeError): edit STAGES with it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# (label, module, attribute path): the turn's stages in the order they usually begin. The
# bench's own client is the class `install` is given (the child runs as __main__).
CLIENT = ""
STAGES = (
    ("client sends", CLIENT, "send_json"),
    ("client reads", CLIENT, "receive_json"),
    ("consumer", "gateway.consumer", "BrainConsumer.receive"),
    ("service thread", "vancetope.service_calls", "_in_worker_thread"),
    ("send_chat", "processes.actions.steer", "send_chat"),
    ("lane woken", "processes.lane.worker", "InProcessWorker.submit"),
    ("lane thread", "processes.lane.worker", "InProcessWorker._run"),
    ("chat's lane thread", "processes.lane.worker", "InProcessWorker._call_then_drive"),
    ("lease", "processes.lane.lease", "try_acquire"),
    ("context", "processes.lane.driver", "prepare"),
    ("engine", "processes.lane.driver", "_steer"),
    ("LLM call", "processes.capabilities.llm", "LlmAccess.complete"),
    ("commit", "processes.lane.commit", "commit_turn"),
    ("COMMIT", "django.db.backends.base.base", "BaseDatabaseWrapper.commit"),
    ("events pushed", "sessions_app.events", "push_frames"),
    ("events to socket", "gateway.consumer", "BrainConsumer.session_events"),
)
FIRST = "client sends"


class Stamps:
    """The stamps of one child run: (seconds, label, "begin" or "end", thread name)."""

    def __init__(self) -> None:
        self.stamps: list[tuple[float, str, str, str]] = []
        self._undo: list[Callable[[], None]] = []

    def install(self, client: type) -> None:
        """Wrap every stage's function; a module function also where another module imported
        it by name (`from … import commit_turn`)."""
        for label, module_name, path in STAGES:
            owner: Any = client if module_name == CLIENT else importlib.import_module(module_name)
            *outer, name = path.split(".")
            for part in outer:
                owner = getattr(owner, part)
            original = inspect.getattr_static(owner, name)
            wrapped = self._wrapped(label, getattr(owner, name))
            holders = [owner]
            if inspect.ismodule(owner):
                holders += [
                    module
                    for module in list(sys.modules.values())
                    if module is not owner and getattr(module, "__dict__", {}).get(name) is original
                ]
            for holder in holders:
                setattr(holder, name, wrapped)
                self._undo.append(functools.partial(setattr, holder, name, original))

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _wrapped(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        stamps = self.stamps

        def stamp(edge: str) -> None:
            stamps.append((time.perf_counter(), label, edge, threading.current_thread().name))

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                stamp("begin")
                try:
                    return await function(*args, **kwargs)
                finally:
                    stamp("end")

            return timed_async

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stamp("begin")
            try:
                return function(*args, **kwargs)
            finally:
                stamp("end")

        return timed

    def timeline(self, warmup: int) -> list[dict[str, Any]]:
        """Per stage and occurrence: in how many of the timed turns it ran, the median ms from
        the turn's send at which it began and ended, and the threads it ran in."""
        turns: list[list[tuple[float, str, str, str]]] = []
        for stamp in self.stamps:
            if stamp[1] == FIRST and stamp[2] == "begin":
                turns.append([])
            if turns:
                turns[-1].append(stamp)
        # The session-create's frame is the first send; the warm-up turns follow it.
        timed = turns[1 + warmup :]
        begins: dict[tuple[str, int], list[float]] = {}
        ends: dict[tuple[str, int], list[float]] = {}
        threads: dict[tuple[str, int], set[str]] = {}
        for turn in timed:
            start = turn[0][0]
            seen: dict[str, int] = {}
            for at, label, edge, thread in turn:
                if edge == "begin":
                    seen[label] = seen.get(label, 0) + 1
                key = (label, seen.get(label, 1))
                (begins if edge == "begin" else ends).setdefault(key, []).append(
                    (at - start) * 1000
                )
                threads.setdefault(key, set()).add(_kind(thread))
        rows = [
            {
                "stage": label if n == 1 else f"{label} ({n})",
                "turns": len(found),
                "begin_ms": statistics.median(found),
                "end_ms": statistics.median(ends.get((label, n), found)),
                "threads": ", ".join(sorted(threads[label, n])),
            }
            for (label, n), found in begins.items()
        ]
        return sorted(rows, key=lambda row: row["begin_ms"])


def _kind(thread: str) -> str:
    """A thread's name without its number: the pool it belongs to."""
    return thread.rstrip("0123456789").rstrip("_-") or thread


def print_timeline(row: dict[str, Any]) -> None:
    stages = row.get("stages")
    if not stages:
        return
    timed = row["turns"]
    print()
    print(
        f"{row['runtime']}/{row['chat']}/{row['path']}: where a turn's wall time goes (median ms "
        f"from the chat frame's send, over {timed} timed turns; p50 {row['p50_ms']:.2f} ms)"
    )
    # A stage of a few turns only (the last turn's disconnect, a checkpoint) is left out.
    shown = [stage for stage in stages if stage["turns"] * 2 >= timed]
    print(f"  {'stage':24} {'begins':>8} {'ends':>8} {'turns':>6}  thread")
    for stage in shown:
        print(
            f"  {stage['stage']:24} {stage['begin_ms']:8.3f} {stage['end_ms']:8.3f} "
            f"{stage['turns']:6}  {stage['threads']}"
        )
    if len(shown) < len(stages):
        print(f"  ({len(stages) - len(shown)} stages seen in fewer than half the turns left out)")
