"""What `turn_overhead.py` prints: its table, the peer beside it, the budgets, the cost model."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
from typing import Any

from peers import LangGraphTurns, load_average

# The default chat's budgets (embedded, over the WebSocket): p50 at most this many ms, and at
# least this many times faster than LangGraph's in-process turn measured in the same run.
BUDGET_P50_MS = 5.0
BUDGET_PEER_RATIO = 5.0
# Storage per turn of one session over the run, in bytes, and "flat": late/early at most this.
BUDGET_BYTES_PER_TURN = 20_000
BUDGET_FLAT = 1.5


def label(row: dict[str, Any]) -> str:
    mode = row.get("observability")
    return row["path"] if mode in (None, "default") else f"{row['path']}/{mode}"


def print_table(
    results: list[dict[str, Any]], args: argparse.Namespace, peer: LangGraphTurns | None
) -> None:
    print()
    print(
        f"chat turns, scripted provider (zero latency): {args.turns} timed turns after "
        f"{args.warmup} warm-up turns, one at a time, one session per row; the per-user "
        "message limit counts every turn (high enough to refuse none)"
    )
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    print()
    header = (
        f"{'runtime':<14} {'chat':<16} {'path':<10} {'turns':>5} {'turns/s':>8} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'mean ms':>7} {'max ms':>7} {'early':>6} {'late':>6} "
        f"{'CPU ms':>6} {'B/turn':>7} {'peer x':>6} {'RSS setup':>9} {'peak RSS':>9} "
        f"{'setup s':>7}"
    )
    print(header)
    print("-" * len(header))
    for row in results:
        chat = f"{row['chat']} ({row.get('engine', '?')})"
        if "error" in row:
            print(f"{row['runtime']:<14} {chat:<16} {label(row):<10} FAILED ({row['error']})")
            continue
        ratio = f"{peer.p50_ms / row['p50_ms']:>6.1f}" if peer is not None else f"{'-':>6}"
        print(
            f"{row['runtime']:<14} {chat:<16} {label(row):<10} {row['turns']:>5} "
            f"{row['turns'] / row['total_seconds']:>8.1f} {row['p50_ms']:>7.2f} "
            f"{row['p99_ms']:>7.2f} {row['mean_ms']:>7.2f} {row['max_ms']:>7.2f} "
            f"{row['early_ms']:>6.2f} {row['late_ms']:>6.2f} {row['cpu_ms_per_turn']:>6.2f} "
            f"{row['bytes_per_turn']:>7.0f} "
            f"{ratio} {row['rss_setup_mb']:>6.1f} MB {row['rss_peak_mb']:>6.1f} MB "
            f"{row['setup_seconds']:>7.1f}"
        )
    print()
    seen: set[str] = set()
    for row in results:
        if "error" in row or row["runtime"] in seen:
            continue
        seen.add(row["runtime"])
        print(
            f"{row['runtime']}: database {row['database']}, channel layer "
            f"{row['channel_layer']}, worker {row['worker']}, LLM {row['llm']}"
        )
    for row in results:
        if "worker_rss_peak_mb" in row:
            print(
                f"{row['runtime']}/{row['chat']}/{row['path']}: lanes ran on a separate "
                f"`celery worker` (threads pool), peak RSS {row['worker_rss_peak_mb']:.1f} MB"
            )
    print(
        "turns/s = timed turns / sum of their wall-clock times; early/late = mean ms of the "
        "first/last tenth of the timed turns; CPU ms = the child's CPU time (all threads) per "
        "turn, warm-up included;\nB/turn = bytes the database grew by per turn "
        "of the session (warm-up included; SQLite: pages in use after a checkpoint, PostgreSQL: "
        "pg_database_size);\npeer x = LangGraph's in-process p50 (same run) / the row's p50; "
        "RSS setup = ru_maxrss after django.setup + migrate + fixtures, peak RSS = ru_maxrss "
        f"after the run; service path polls every {args.poll_ms:g} ms"
    )


def print_peer(runs: list[LangGraphTurns], reason: str | None) -> LangGraphTurns | None:
    """The peer's runs (before and after the Brain's rows) and their mean, or why none ran."""
    print()
    if not runs:
        print(f"LangGraph in-process: left out ({reason})")
        return None
    for when, run in zip(("before", "after"), runs, strict=False):
        print(f"LangGraph in-process, {when} the Brain's rows: {run.output.splitlines()[0]}")
    mean = LangGraphTurns(
        statistics.fmean(run.p50_ms for run in runs),
        statistics.fmean(run.p99_ms for run in runs),
        statistics.fmean(run.turns_per_second for run in runs),
        statistics.fmean(run.bytes_per_turn for run in runs),
        "",
    )
    print(
        f"LangGraph in-process SqliteSaver: p50 {mean.p50_ms:.2f} ms (mean of {len(runs)}), "
        f"its checkpoint file {mean.bytes_per_turn / 1000:.1f} kB per turn"
    )
    return mean


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def print_budgets(results: list[dict[str, Any]], peer: LangGraphTurns | None) -> bool:
    """The default chat's budgets on the embedded runtime over the WebSocket; True if all met
    (a budget without its row, or without the peer, is not judged)."""
    print()
    print(f"budgets ({load_average()}):")
    met = True
    judged = False
    for row in results:
        if "error" in row or row["chat"] != "default" or row["runtime"] != "embedded":
            continue
        if row["path"] != "websocket" or label(row) != "websocket":
            continue
        fast = row["p50_ms"] <= BUDGET_P50_MS
        print(f"  default chat p50 <= {BUDGET_P50_MS:g} ms: {verdict(fast)} ({row['p50_ms']:.2f})")
        met = met and fast
        if peer is not None:
            ratio = peer.p50_ms / row["p50_ms"]
            ahead = ratio >= BUDGET_PEER_RATIO
            print(
                f"  >= {BUDGET_PEER_RATIO:g}x LangGraph in-process: {verdict(ahead)} ({ratio:.1f}x)"
            )
            met = met and ahead
        flat = row["late_ms"] <= BUDGET_FLAT * row["early_ms"]
        print(
            f"  flat with history (late <= {BUDGET_FLAT:g} x early): {verdict(flat)} "
            f"({row['early_ms']:.2f} -> {row['late_ms']:.2f} ms)"
        )
        small = row["bytes_per_turn"] <= BUDGET_BYTES_PER_TURN
        print(
            f"  storage <= {BUDGET_BYTES_PER_TURN / 1000:g} kB per turn: {verdict(small)} "
            f"({row['bytes_per_turn'] / 1000:.1f} kB"
            + (f"; LangGraph {peer.bytes_per_turn / 1000:.1f} kB)" if peer else ")")
        )
        met = met and flat and small
        judged = True
    if not judged:
        print("  (judged on the default chat's embedded WebSocket row, which this run has not)")
    return met


# Traces and metrics on may cost at most this much more than off, at the p50 of a turn.
BUDGET = 0.10


def print_overhead(results: list[dict[str, Any]], args: argparse.Namespace) -> tuple[bool, bool]:
    """p50 with traces and metrics off and on, per (runtime, path), from the same run, against
    the budget. An `on` row must have exported a span and counted a turn per turn it ran, or
    its pair is not measured. (every pair measured, every pair within the budget)"""
    print()
    print(
        f"traces + metrics, p50 of a turn off vs on: the median over {args.rounds} alternating "
        f"rounds of each, in this run; budget: on within {BUDGET:.0%} of off"
    )
    rows: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for row in results:
        if "error" not in row:
            key = (row["runtime"], row["chat"], row["path"], row["observability"])
            rows.setdefault(key, []).append(row)
    measured, within = True, True
    for runtime, chat, path, mode in list(rows):
        if mode != "off":
            continue
        on_rows = rows.get((runtime, chat, path, "on"), [])
        if not on_rows:
            measured = False
            print(f"  {runtime:<14} {chat:<8} {path:<10} no `on` row finished: NOT MEASURED")
            continue
        off = statistics.median(row["p50_ms"] for row in rows[runtime, chat, path, "off"])
        on = statistics.median(row["p50_ms"] for row in on_rows)
        timed = args.warmup + args.turns
        spans = min(row["spans_exported"] for row in on_rows)
        turns = min(row["turns_counted"] for row in on_rows)
        traced = spans >= timed and turns >= timed
        met = on <= off * (1 + BUDGET)
        measured, within = measured and traced, within and met
        verdict = ("met" if met else "NOT met") if traced else "NOT MEASURED"
        print(
            f"  {runtime:<14} {chat:<8} {path:<10} off {off:7.2f} ms   on {on:7.2f} ms   "
            f"{(on - off) / off * 100:+6.1f} %   {verdict}"
        )
        best_off = min(row["p50_ms"] for row in rows[runtime, chat, path, "off"])
        best_on = min(row["p50_ms"] for row in on_rows)
        best_change = (best_on - best_off) / best_off * 100
        print(
            f"  {'':<34} the least disturbed round of each (the lowest p50): off "
            f"{best_off:.2f} ms, on {best_on:.2f} ms, {best_change:+.1f} %"
        )
        off_rows = rows[runtime, chat, path, "off"]
        cpu_off = statistics.median(row["cpu_ms_per_turn"] for row in off_rows)
        cpu_on = statistics.median(row["cpu_ms_per_turn"] for row in on_rows)
        print(
            f"  {'':<34} CPU per turn (the Brain's and its worker's) off {cpu_off:.2f} ms, on "
            f"{cpu_on:.2f} ms, {(cpu_on - cpu_off) / cpu_off * 100:+.1f} %"
        )
        print(
            f"  {'':<34} each `on` row exported >= {spans} spans and counted >= {turns} "
            f"turns for its {timed} turns" + ("" if traced else ": tracing or metrics were off")
        )
    return measured, within
