"""The per-turn cost model of `turn_overhead.py --profile`: where one chat turn's time goes.

From the child's cProfile of all threads (stats merged) and its count of every statement of
every connection, per timed-and-warm-up turn:

- statements by kind (verb and the table it names first);
- Python time by phase, each the cumulative time of the functions that make the phase
  (a phase's functions may call into another phase's: the commit pushes the events);
- what each feature adds: its functions' cumulative time and the statements on its tables.

The profiler slows everything down (several times on small functions): read its milliseconds
as proportions, and the unprofiled p50 of the same row for the absolute time.
"""

from __future__ import annotations

import pstats
from collections import Counter
from typing import Any

from django.apps import apps

# (a path's ending, a function name) per phase of a turn, in the order a turn runs them.
PHASES: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "consumer: the frame in, send_chat (its transaction, the wake)",
        [("gateway/consumer.py", "receive"), ("processes/actions/steer.py", "send_chat")],
    ),
    (
        "lane wake: the lease, the next message",
        [("processes/lane/lease.py", "try_acquire"), ("processes/queries.py", "next_pendings")],
    ),
    ("context build", [("processes/lane/context_builder.py", "build_context")]),
    ("engine: steer (the LLM call, the tool pool, the prompt)", [("engines/builtin/", "steer")]),
    (
        "commit: the turn's transaction, the run's end",
        [("processes/lane/commit.py", "commit_turn")],
    ),
    (
        "event push: to the channel layer and the socket",
        [
            ("sessions_app/events.py", "push_frames"),
            ("gateway/consumer.py", "session_events"),
        ],
    ),
]

# What each feature of a turn costs: its functions, and the models whose tables its statements
# name.
FEATURES: list[tuple[str, list[tuple[str, str]], list[str]]] = [
    ("run log", [("triggers/runs/human.py", "wake_committed")], ["triggers.RunLog"]),
    (
        "undo snapshot",
        [("processes/lane/snapshots.py", "before_turn"), ("processes/lane/snapshots.py", "prune")],
        [],
    ),
    ("rate limit", [("vancetope/ratelimit.py", "hit")], []),
    (
        "settings",
        [
            ("vancetope/config/cascade.py", "session_values"),
            ("processes/lane/context_builder.py", "engine_settings"),
            ("vancetope/config/llm.py", "llm_config"),
        ],
        ["config.Setting", "config.SettingsRevision"],
    ),
    ("tool health", [("vancetope/tools/dispatch.py", "down_tools")], ["tools.ToolHealth"]),
    (
        "tool pool (catalogue, caller, client)",
        [("vancetope/tools/dispatch.py", "pool")],
        [],
    ),
]


def _cumulative(stats: pstats.Stats, functions: list[tuple[str, str]]) -> float:
    """Seconds: the cumulative time of every function matching one of `functions`."""
    total = 0.0
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _line, name), (_cc, _nc, _tt, cumulative, _callers) in table.items():
        if any(name == wanted and path in filename for path, wanted in functions):
            total += cumulative
    return total


def cost_model(pstats_path: str, shapes: Counter[str], turns: int) -> dict[str, Any]:
    """The model as JSON-able data: ms and statements per turn."""
    stats = pstats.Stats(pstats_path)
    statements = {shape: count / turns for shape, count in shapes.most_common()}
    phases = {name: _cumulative(stats, functions) * 1000 / turns for name, functions in PHASES}
    features = {}
    for name, functions, models in FEATURES:
        tables = {apps.get_model(model)._meta.db_table for model in models}
        own = sum(count for shape, count in shapes.items() if shape.split()[-1] in tables)
        features[name] = {
            "ms": _cumulative(stats, functions) * 1000 / turns,
            "statements": own / turns,
        }
    return {"statements": statements, "phases": phases, "features": features}


def print_cost_model(row: dict[str, Any]) -> None:
    model = row.get("cost_model")
    if not model:
        return
    print()
    print(
        f"cost model of one turn: {row['runtime']}/{row['chat']} ({row.get('engine')})/"
        f"{row['path']}, under cProfile (p50 {row['p50_ms']:.2f} ms profiled; read "
        "proportions)"
    )
    total = sum(model["statements"].values())
    print(f"  statements per turn: {total:.1f}")
    for shape, count in model["statements"].items():
        print(f"    {count:5.2f}  {shape}")
    print("  Python time by phase (cumulative ms per turn, profiled):")
    for name, ms in model["phases"].items():
        print(f"    {ms:7.3f}  {name}")
    print("  what each feature adds (profiled ms, statements per turn):")
    for name, cost in model["features"].items():
        print(f"    {cost['ms']:7.3f} ms {cost['statements']:5.2f} stmt  {name}")
