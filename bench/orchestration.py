"""What the Brain adds to each node of a marvin tree, and what parallel workers save, beside
LangGraph's fan-out in the same run.

Three measurements, one after another on this machine:

1. **Brain time per worker node**: one marvin process on the embedded default (SQLite, the
   in-process worker) in the bench's own OS process, with a scripted LLM at zero latency: its
   `plan` returns `--workers` WORKER tasks (50) and an AGGREGATE, every worker (recipe
   `marvin-worker`, a frankie) answers its goal by calling `report_result` with its structured
   result in its `act` step (one LLM call), and `aggregate` answers `report`. The tree's wall time
   (marvin's create to CLOSED) divided by the workers is the Brain's time per worker node: the
   spawn, the child's start in its own lane and its LLM step, its report, marvin's wake and
   its turn on the report. Also its CPU time per node (all threads of the process). At
   marvin's default `maxParallel` (4), and at 1 for comparison. Budget: <= 8 ms a node.
2. **The same tree with an LLM that sleeps 200 ms a call** (every plan, act and
   aggregate call), at `maxParallel` 8 and at 1: the wall times and their ratio. Budget: the
   tree at 8 takes at most 1/5 of its time at 1. The in-process worker runs
   VANCETOPE_INPROCESS_WORKER_THREADS=10 lanes here (marvin's and eight workers'); its default
   (4) would run four workers at a time whatever maxParallel says.
3. **LangGraph's fan-out** (`langgraph/bench_fanout.py` of the peers' folder, `--peers DIR` or
   VANCETOPE_BENCH_PEERS: plan -> N `Send` workers, each a subgraph -> aggregate, SqliteSaver)
   in a venv of its own that the bench makes in the temporary directory (vt-bench-peers/,
   once; pip: `langgraph langgraph-checkpoint-sqlite`), so its time per worker node is
   measured in the same run.

    .venv/bin/python bench/orchestration.py [--workers 50] [--runs 3] [--peers DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from common import StatementCounter
from peers import LANGGRAPH_FANOUT, PEERS_VARIABLE, langgraph_fanout_node_ms, missing_reason

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUDGET_NODE_MS = 8.0
BUDGET_PARALLEL_RATIO = 1 / 5
SLOW_CALL_SECONDS = 0.2
LANE_THREADS = 10


def script_for(workers: int) -> list[dict[str, Any]]:
    """Rules for two trees: `a wide tree` (zero latency) and `a slow tree` (every call sleeps
    SLOW_CALL_SECONDS). Rules without `times` answer every run."""
    slow = {"delay": SLOW_CALL_SECONDS}
    rules: list[dict[str, Any]] = []
    for goal, prefix, extra in (("a slow tree", "slow task", slow), ("a wide tree", "task", {})):
        tasks = [
            {"kind": "WORKER", "title": f"{prefix} {n}", "goal": f"do {prefix} {n}"}
            for n in range(workers)
        ]
        tasks.append({"kind": "AGGREGATE", "title": "Report"})
        rules += [
            {
                "engine": "marvin",
                "step": "plan",
                "match": f"^Plan: {goal}",
                "tool_calls": [{"name": "plan_tasks", "arguments": {"tasks": tasks}}],
                **extra,
            },
            {
                # The worker reports in its act step (report_result is offered there), as a
                # model that has the answer does: one LLM call per worker. No `report` rule:
                # a worker that did not report in act would fail its node, and the run.
                "engine": "frankie",
                "step": "act",
                "match": f"do {prefix} ",
                "tool_calls": [
                    {
                        "name": "report_result",
                        "arguments": {
                            "summary": "done",
                            "findings": [],
                            "sources": [],
                            "confidence": 1,
                        },
                    }
                ],
                **extra,
            },
            {
                "engine": "marvin",
                "step": "aggregate",
                "match": f"report for: {goal}",
                "reply": "report",
                **extra,
            },
        ]
    return rules


def run_tree(goal: str, workers: int, max_parallel: int, counter: StatementCounter) -> dict:
    from processes.actions.create import create_process
    from processes.actions.sessions import create_session
    from processes.models import ThinkProcess
    from processes.states import CloseReason, Status
    from sessions_app.services import FingerprintData

    user, project = make_tenancy()
    session = create_session(
        user,
        client_type="cli",
        project_id=project.public_id,
        fingerprint=FingerprintData(machine_id="bench"),
    )
    statements_before = counter.count
    counter.shapes.clear()
    cpu_before = time.process_time()
    started = time.perf_counter()
    process = create_process(
        session,
        goal=goal,
        engine="marvin",
        params={"maxNodes": workers + 10, "maxParallel": max_parallel},
    )
    deadline = time.monotonic() + 120 + workers * 2
    # A light poll (its status only), so that the measuring costs the Brain little.
    status = ThinkProcess.objects.filter(pk=process.pk).values_list("status", flat=True)
    while status.first() != Status.CLOSED:
        if time.monotonic() > deadline:
            raise SystemExit(f"marvin did not finish: {status.first()}")
        time.sleep(0.01)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_before
    row = ThinkProcess.objects.get(pk=process.pk)
    statements = counter.count - statements_before
    if row.close_reason != CloseReason.DONE or row.engine_state.get("report") != "report":
        raise SystemExit(f"marvin ended {row.close_reason}: {row.last_error}")
    nodes = [n for n in row.engine_state["taskTree"]["nodes"] if n["kind"] == "WORKER"]
    if len(nodes) != workers or any(n["status"] != "DONE" for n in nodes):
        raise SystemExit("not every worker node is DONE")
    if ThinkProcess.objects.filter(parent_id=process.pk).count() != workers:
        raise SystemExit("not one worker process per worker node")
    return {
        "wall_s": wall,
        "node_ms": wall / workers * 1000,
        "cpu_node_ms": cpu / workers * 1000,
        "statements_per_node": statements / workers,
    }


def make_tenancy() -> tuple[Any, Any]:
    from django.contrib.auth import get_user_model

    from recipes_app.services import sync_bundled_recipes
    from vancetope.tenancy.models import Project, ProjectMembership, Tenant

    sync_bundled_recipes()
    count = Tenant.objects.count()
    tenant = Tenant.objects.create(slug=f"bench-{count}", name="Bench tenant")
    project = Project.objects.create(tenant=tenant, slug=f"bench-{count}", name="Bench")
    user = get_user_model().objects.create_user(f"bench-{count}", password="bench-pw")
    ProjectMembership.objects.create(user=user, project=project)
    return user, project


def langgraph(peers: Path, workers: int, rounds: int) -> float | None:
    """LangGraph's ms per worker node from its fan-out bench, in the peers' venv."""
    reason = missing_reason(peers, LANGGRAPH_FANOUT)
    if reason is not None:
        print(f"LangGraph: {reason}; its figure is left out")
        return None
    node_ms, out = langgraph_fanout_node_ms(peers, workers, rounds)
    print(out)
    return node_ms


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=50, help="WORKER nodes in the tree")
    parser.add_argument("--runs", type=int, default=3, help="zero-latency trees per setting")
    parser.add_argument(
        "--peers",
        default=os.environ.get(PEERS_VARIABLE, ""),
        help="the folder holding langgraph/bench_fanout.py",
    )
    parser.add_argument("--no-peer", action="store_true", help="leave LangGraph out")
    parser.add_argument("--no-slow", action="store_true", help="leave the 200 ms trees out")
    parser.add_argument(
        "--statements", action="store_true", help="print the statements per node by shape"
    )
    args = parser.parse_args()

    var_dir = tempfile.mkdtemp(prefix="vt_bench_orchestration_")
    script = Path(var_dir) / "script.yaml"
    script.write_text(yaml.safe_dump(script_for(args.workers)))
    for name in ("DATABASE_URL", "REDIS_URL", "VANCETOPE_LLM", "VANCETOPE_LLM_MODEL"):
        os.environ.pop(name, None)
    os.environ.update(
        VANCETOPE_VAR_DIR=var_dir,
        VANCETOPE_LLM_SCRIPT=str(script),
        VANCETOPE_INPROCESS_WORKER_THREADS=str(LANE_THREADS),
        DJANGO_SETTINGS_MODULE="vancetope.settings",
        LOG_LEVEL="WARNING",
    )
    import django

    django.setup()
    counter = StatementCounter()
    counter.install()
    from django.core.management import call_command

    from processes.lane.worker import shutdown_worker

    call_command("migrate", interactive=False, verbosity=0)
    # The peer runs before and after the Brain's trees: the machine's load moves both.
    peers: list[float] = []
    if args.no_peer or not args.peers:
        print("LangGraph left out (--no-peer, or no --peers DIR)")
    elif (before := langgraph(Path(args.peers), args.workers, 5)) is not None:
        peers.append(before)
    zero: dict[int, list[dict[str, Any]]] = {4: [], 1: []}
    slow: dict[int, dict[str, Any]] = {}
    try:
        for _ in range(args.runs):
            for parallel in zero:
                zero[parallel].append(run_tree("a wide tree", args.workers, parallel, counter))
        if not args.no_slow:
            for parallel in (8, 1):
                slow[parallel] = run_tree("a slow tree", args.workers, parallel, counter)
    finally:
        shutdown_worker(wait=True)

    print(f"marvin tree: 1 PLAN + {args.workers} WORKER + 1 AGGREGATE, embedded default")
    print(f"{'maxParallel':>11} {'run':>3} {'wall s':>7} {'ms/node':>8} {'cpu ms/node':>11} "
          f"{'stmts/node':>10}")  # fmt: skip
    for parallel, runs in zero.items():
        for n, r in enumerate(runs, 1):
            print(
                f"{parallel:>11} {n:>3} {r['wall_s']:7.2f} {r['node_ms']:8.2f} "
                f"{r['cpu_node_ms']:11.2f} {r['statements_per_node']:10.1f}"
            )
    if args.statements:
        for shape, count in counter.shapes.most_common(25):
            print(f"  {count / args.workers:6.2f}/node  {shape}")
    node_ms = statistics.median(r["node_ms"] for r in zero[4])
    fast = node_ms <= BUDGET_NODE_MS
    if peers and (after := langgraph(Path(args.peers), args.workers, 5)) is not None:
        peers.append(after)
    line = f"Brain time per worker node (maxParallel 4, median of {args.runs}): {node_ms:.2f} ms"
    if peers:
        peer = statistics.fmean(peers)
        shown = " and ".join(f"{ms:.2f}" for ms in peers)
        line += f"; LangGraph {shown} ms before and after it ({node_ms / peer:.1f}x their mean)"
    print(line)
    print(f"budget per worker node <= {BUDGET_NODE_MS:g} ms: {verdict(fast)} ({node_ms:.2f})")
    met = fast
    if slow:
        ratio = slow[8]["wall_s"] / slow[1]["wall_s"]
        print(
            f"LLM {SLOW_CALL_SECONDS * 1000:.0f} ms a call: tree wall at maxParallel 8 "
            f"{slow[8]['wall_s']:.2f} s, at 1 {slow[1]['wall_s']:.2f} s, ratio {ratio:.3f}"
        )
        within = ratio <= BUDGET_PARALLEL_RATIO
        print(f"budget 8 against 1 <= 1/5: {verdict(within)} ({ratio:.3f})")
        met = met and within
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
