"""What the Brain adds to each node of a marvin tree (issue: orchestration engines, item 9).

One marvin process on the embedded default (SQLite, in-process worker), with the scripted
provider at zero latency: its `plan` step returns 1 + N tasks (N WORKER nodes, then an
AGGREGATE); every worker is a child process (recipe marvin-worker, a frankie) that answers its
goal with the echo and closes DONE. Nodes run one at a time, so the time from one WORKER's start
to the next one's is what the Brain spends per node: the parent's commit, the child's start in
its own lane and its turn, its report, the parent's wake and turn on the report, and the next
spawn. Statements are counted on every database connection of the process (all lanes).

Budget: per node p50 <= 15 ms, and flat as the tree grows (nodes 41-50 no slower than 2x nodes
1-10, by their means).

    .venv/bin/python bench/orchestration.py [--workers 50] [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BUDGET_P50_MS = 15.0
BUDGET_GROWTH = 2.0


class StatementCounter:
    """An execute wrapper on every connection Django opens: counts statements of all threads."""

    def __init__(self) -> None:
        self.count = 0
        self.shapes: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        verb = sql.split(None, 1)[0].upper()
        table = re.search(r'\b(?:UPDATE|INTO|FROM)\s+"?(\w+)', sql)
        with self._lock:
            self.count += 1
            self.shapes[verb if table is None else f"{verb} {table[1]}"] += 1
        return execute(sql, params, many, context)

    def install(self) -> None:
        from django.db.backends.signals import connection_created

        def wrap(sender: Any, connection: Any, **kwargs: Any) -> None:
            if self not in connection.execute_wrappers:
                connection.execute_wrappers.append(self)

        connection_created.connect(wrap, weak=False)


def script_for(workers: int) -> list[dict[str, Any]]:
    tasks = [
        {"kind": "WORKER", "title": f"task {n}", "goal": f"do task {n}"} for n in range(workers)
    ]
    tasks.append({"kind": "AGGREGATE", "title": "Report"})
    return [
        {
            "engine": "marvin",
            "step": "plan",
            "tool_calls": [{"name": "plan_tasks", "arguments": {"tasks": tasks}}],
        },
        {"engine": "marvin", "step": "aggregate", "reply": "report"},
    ]


def parse(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def run(workers: int, counter: StatementCounter) -> dict[str, Any]:
    from processes.actions.create import create_process
    from processes.models import ThinkProcess
    from processes.states import CloseReason, Status
    from sessions_app.services import FingerprintData, create_session

    user, project = make_tenancy()
    session = create_session(
        user,
        client_type="cli",
        project_id=project.public_id,
        fingerprint=FingerprintData(machine_id="bench"),
    )
    statements_before = counter.count
    counter.shapes.clear()
    started = time.perf_counter()
    process = create_process(
        session, goal="a wide tree", engine="marvin", params={"maxNodes": workers + 10}
    )
    deadline = time.monotonic() + 120 + workers
    while True:
        row = ThinkProcess.objects.get(pk=process.pk)
        if row.status == Status.CLOSED:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"marvin did not finish: {row.status}, {row.last_error}")
        time.sleep(0.005)
    wall = time.perf_counter() - started
    statements = counter.count - statements_before
    if row.close_reason != CloseReason.DONE or row.engine_state.get("report") != "report":
        raise SystemExit(f"marvin ended {row.close_reason}: {row.last_error}")
    nodes = [n for n in row.engine_state["taskTree"]["nodes"] if n["kind"] == "WORKER"]
    if len(nodes) != workers or any(n["status"] != "DONE" for n in nodes):
        raise SystemExit("not every worker node is DONE")
    starts = [parse(n["startedAt"]) for n in nodes] + [parse(nodes[-1]["finishedAt"])]
    per_node = [(b - a) * 1000 for a, b in zip(starts, starts[1:], strict=False)]
    tenth = max(1, workers // 5)
    return {
        "wall_s": wall,
        "p50": statistics.median(per_node),
        "p99": sorted(per_node)[min(len(per_node) - 1, int(len(per_node) * 0.99))],
        "first": statistics.fmean(per_node[:tenth]),
        "last": statistics.fmean(per_node[-tenth:]),
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


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=50, help="WORKER nodes in the tree")
    parser.add_argument("--runs", type=int, default=1, help="trees, one after another")
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
    results = []
    try:
        for _ in range(args.runs):
            # Every run's plan is the same script rule: the scripted provider counts per
            # Brain process, so a rule without `times` answers each run's plan.
            results.append(run(args.workers, counter))
    finally:
        shutdown_worker(wait=True)
    print(f"marvin tree: 1 PLAN + {args.workers} WORKER + 1 AGGREGATE, embedded default")
    print(
        f"{'run':>3} {'wall s':>7} {'node p50':>9} {'node p99':>9} {'first':>7} {'last':>7} "
        f"{'stmts/node':>10}"
    )
    for n, r in enumerate(results, 1):
        print(
            f"{n:>3} {r['wall_s']:7.2f} {r['p50']:8.2f}ms {r['p99']:8.2f}ms "
            f"{r['first']:6.2f}ms {r['last']:6.2f}ms {r['statements_per_node']:10.1f}"
        )
    p50 = statistics.median(r["p50"] for r in results)
    growth = statistics.median(r["last"] / r["first"] for r in results)
    if args.statements:
        total = args.workers  # the last run's statements
        for shape, count in counter.shapes.most_common(25):
            print(f"  {count / total:6.2f}/node  {shape}")
    fast, flat = p50 <= BUDGET_P50_MS, growth <= BUDGET_GROWTH
    print(f"budget per node p50 <= {BUDGET_P50_MS:g} ms: {verdict(fast)} ({p50:.2f})")
    print(f"budget nodes 41-50 / 1-10 <= {BUDGET_GROWTH:g}x: {verdict(flat)} ({growth:.2f}x)")
    met = fast and flat
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
