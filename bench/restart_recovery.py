"""Restart recovery: start a real Brain on a database holding N persisted processes.

A setup child (Django, bulk_create) fills a bootstrapped database with N ford processes in
sessions of `--per-session` processes each, every session in one of these states, as a Brain
that died would have left them:

  idle               IDLE, nothing pending                         → stays IDLE
  idle-pending       IDLE with pending messages (a lost wake-up)   → drained, IDLE
  running-dead-pid   RUNNING, leased by a dead pid on this host,   → IDLE
                     lease not yet expired
  running-expired    RUNNING, leased by another host, lease expired → IDLE
  running-pending    RUNNING (either lease) with pending messages  → IDLE, then drained
  suspended          SUSPENDED (session suspended at shutdown)     → stays SUSPENDED
  suspended-pending  SUSPENDED with pending messages               → stays SUSPENDED, pending

Every process has `--history` earlier conversation messages. Then `manage.py brain` starts (the
scripted provider: "echo: <message>", zero latency), and the bench measures, from the start of
the Brain's OS process, when /healthz first answers 200 and when every process is back to its
right status with every recoverable pending message answered (the database is polled every
`--poll-ms`). Afterwards every process, pending message and conversation is checked against
the plan. Budget: all recovered within 10 s.

Runtimes: embedded (SQLite) always; postgres (a throwaway database on the server of
DATABASE_URL, dropped afterwards; in-process worker, in-memory channel layer) when DATABASE_URL
is set. Before the run the same Brain is started once on the empty (bootstrapped) database: its
time to /healthz is the fixed cost of a start.

    .venv/bin/python bench/restart_recovery.py [--processes 10000]

See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    BenchBrain,
    BenchFailure,
    Deployment,
    HelpFormatter,
    PySpy,
    available_runtimes,
    print_log_warnings,
    print_table,
)

BUDGET_SECONDS = 10.0
# (category, share of the sessions, status after the restart, its pending messages drained)
CATEGORIES = (
    ("idle", 0.50, "IDLE", False),
    ("idle-pending", 0.05, "IDLE", True),
    ("running-dead-pid", 0.10, "IDLE", False),
    ("running-expired", 0.10, "IDLE", False),
    ("running-pending", 0.05, "IDLE", True),
    ("suspended", 0.15, "SUSPENDED", False),
    ("suspended-pending", 0.05, "SUSPENDED", False),
)
END_STATUS = {name: status for name, _, status, _ in CATEGORIES}
DRAINED = {name for name, _, _, drained in CATEGORIES if drained}
GOAL_PREFIX = "bench-recovery:"


def pending_text(process_id: int, seq: int) -> str:
    return f"pending {seq} of process {process_id}"


def history(count: int) -> list[tuple[str, str]]:
    messages = []
    for turn in range(math.ceil(count / 2)):
        messages += [("user", f"earlier {turn}"), ("assistant", f"echo: earlier {turn}")]
    return messages[:count]


# === setup child: fill the database ===============================================================


def session_categories(sessions: int) -> list[str]:
    """Each session's category: the shares of CATEGORIES, interleaved over the sessions (each
    next session goes to the category furthest behind its share)."""
    counts = {name: math.floor(share * sessions) for name, share, _, _ in CATEGORIES}
    counts["idle"] += sessions - sum(counts.values())
    taken = dict.fromkeys(counts, 0)
    chosen = []
    for done in range(1, sessions + 1):
        name = max(counts, key=lambda n: counts[n] * done / sessions - taken[n])
        taken[name] += 1
        chosen.append(name)
    return chosen


def setup_child(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")
    import django

    django.setup()
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from engines.registry import get_engine
    from processes.lane.lease import HOSTNAME
    from processes.models import ConversationMessage, PendingKind, PendingMessage, ThinkProcess
    from recipes_app.services import resolve_recipe
    from sessions_app.models import Session, SessionStatus, SuspendCause
    from vancetope.tenancy.models import Project

    started = time.perf_counter()
    user = get_user_model().objects.get(username="local")
    project = Project.objects.get(slug="default")
    recipe = resolve_recipe(project, recipe="ford", engine=None)
    engine = get_engine(recipe.engine)
    assert engine is not None
    now = timezone.now()
    sessions_count = math.ceil(args.processes / args.per_session)
    categories = session_categories(sessions_count)
    earlier = history(args.history)
    dead_owner = f"{HOSTNAME}:{args.dead_pid}:1:bench"
    other_owner = "bench-other-host:4242:1:bench"

    with transaction.atomic():
        sessions = Session.objects.bulk_create(
            Session(
                owner=user,
                project=project,
                client_type="cli",
                status=SessionStatus.SUSPENDED if name.startswith("suspended") else "OPEN",
                suspend_cause=SuspendCause.SHUTDOWN if name.startswith("suspended") else "",
                machine_id="bench-machine",
                working_dir="/srv/bench",
                last_activity_at=now,
            )
            for name in categories
        )
        processes = []
        for index in range(args.processes):
            session_index = index // args.per_session
            name = categories[session_index]
            running = name.startswith("running")
            # running-pending alternates between the two kinds of dead lease.
            expired = name == "running-expired" or (name == "running-pending" and index % 2)
            pending = args.pending if name.endswith("-pending") else 0
            processes.append(
                ThinkProcess(
                    session=sessions[session_index],
                    think_engine=engine.name,
                    engine_version=engine.version,
                    goal=GOAL_PREFIX + name,
                    recipe_name=recipe.name,
                    recipe_snapshot=recipe.snapshot(),
                    engine_params=dict(recipe.params),
                    status="RUNNING" if running else END_STATUS[name],
                    lease_owner=(other_owner if expired else dead_owner) if running else "",
                    lease_expires_at=(
                        now + timedelta(seconds=-60 if expired else 30) if running else None
                    ),
                    lease_fence=3 if running else 2,
                    next_pending_seq=1 + pending,
                    conversation_length=len(earlier),
                    created_at=now,
                    updated_at=now,
                )
            )
        processes = ThinkProcess.objects.bulk_create(processes, batch_size=2000)
        for session_index, session in enumerate(sessions):
            session.chat_process = processes[session_index * args.per_session]
        Session.objects.bulk_update(sessions, ["chat_process"], batch_size=2000)
        ConversationMessage.objects.bulk_create(
            (
                ConversationMessage(process=process, index=i, role=role, content=content)
                for process in processes
                for i, (role, content) in enumerate(earlier)
            ),
            batch_size=5000,
        )
        PendingMessage.objects.bulk_create(
            (
                PendingMessage(
                    process=process,
                    seq=seq,
                    kind=PendingKind.USER,
                    payload={"text": pending_text(process.pk, seq)},
                    created_at=now,
                )
                for process in processes
                for seq in range(1, process.next_pending_seq)
            ),
            batch_size=5000,
        )
    Path(args.plan_file).write_text(json.dumps({"setup_seconds": time.perf_counter() - started}))


# === parent: plan, poll, check ====================================================================


def make_plan(args: argparse.Namespace) -> dict[str, Any]:
    """What the database must hold after the restart (the setup child builds the same)."""
    categories = session_categories(math.ceil(args.processes / args.per_session))
    per_category = dict.fromkeys(END_STATUS, 0)
    for index in range(args.processes):
        per_category[categories[index // args.per_session]] += 1
    pending_processes = sum(n for name, n in per_category.items() if name.endswith("-pending"))
    drained = sum(per_category[name] for name in DRAINED)
    return {
        "per_category": per_category,
        "unconsumed": (pending_processes - drained) * args.pending,
        "messages": args.processes * args.history + drained * args.pending * 2,
        "turns": drained * args.pending,
        "running": sum(n for name, n in per_category.items() if name.startswith("running")),
    }


POLL_SQL = (
    "SELECT (SELECT COUNT(*) FROM processes_thinkprocess WHERE status = 'RUNNING'), "
    "(SELECT COUNT(*) FROM processes_pendingmessage WHERE NOT consumed), "
    "(SELECT COUNT(*) FROM processes_conversationmessage), "
    "(SELECT COUNT(*) FROM processes_processtransition WHERE call = 'recover')"
)


class RecoveryWatch(threading.Thread):
    """Polls the database until nothing is RUNNING, only the expected messages are still
    pending and every expected reply is stored; `done_at` is that moment (perf_counter).
    `leases_at`: when every dead lease was recovered (one `recover` transition each)."""

    def __init__(self, deployment: Deployment, plan: dict[str, Any], poll: float, timeout: float):
        super().__init__(name="recovery-watch", daemon=True)
        self.deployment = deployment
        self.target = (0, plan["unconsumed"], plan["messages"])
        self.running = plan["running"]
        self.leases_at: float | None = None
        self.poll = poll
        self.timeout = timeout
        self.done_at: float | None = None
        self.last: tuple[int, int, int] | None = None
        self.polls = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        connection = self.deployment.connect_database()
        try:
            deadline = time.perf_counter() + self.timeout
            while not self.stop_event.is_set() and time.perf_counter() < deadline:
                cursor = connection.cursor()
                cursor.execute(POLL_SQL)
                row = cursor.fetchone()
                cursor.close()
                self.polls += 1
                self.last = (int(row[0]), int(row[1]), int(row[2]))
                if self.leases_at is None and int(row[3]) >= self.running:
                    self.leases_at = time.perf_counter()
                if self.last == self.target:
                    self.done_at = time.perf_counter()
                    return
                time.sleep(self.poll)
        finally:
            connection.close()


def check_database(deployment: Deployment, args: argparse.Namespace) -> list[str]:
    """Every process, pending message and conversation against the plan."""
    connection = deployment.connect_database()
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT id, goal, status, lease_owner FROM processes_thinkprocess")
        processes = {int(pk): (goal, status, owner) for pk, goal, status, owner in cursor}
        cursor.execute(
            "SELECT process_id, seq, consumed, payload FROM processes_pendingmessage "
            "ORDER BY process_id, seq"
        )
        pending: dict[int, list[tuple[int, bool, str]]] = {}
        for pk, seq, consumed, payload in cursor:
            data = json.loads(payload) if isinstance(payload, str) else payload
            pending.setdefault(int(pk), []).append((int(seq), bool(consumed), data["text"]))
        cursor.execute(
            "SELECT process_id, role, content FROM processes_conversationmessage ORDER BY "
            'process_id, "index"'
        )
        conversations: dict[int, list[tuple[str, str]]] = {}
        for pk, role, content in cursor:
            conversations.setdefault(int(pk), []).append((role, content))
        cursor.close()
    finally:
        connection.close()

    problems: dict[str, list[str]] = {}
    earlier = history(args.history)
    if len(processes) != args.processes:
        problems["count"] = [f"{len(processes)} processes, not {args.processes}"]
    for pk, (goal, status, owner) in processes.items():
        name = goal.removeprefix(GOAL_PREFIX)
        expected_status = END_STATUS.get(name)
        found = []
        if status != expected_status:
            found.append(f"tp_{pk} ({name}) is {status}, not {expected_status}")
        if owner:
            found.append(f"tp_{pk} ({name}) is still leased by {owner}")
        messages = pending.get(pk, [])
        wanted_pending = [(seq, pending_text(pk, seq)) for seq in range(1, len(messages) + 1)]
        if [(seq, text) for seq, _, text in messages] != wanted_pending or (
            name.endswith("-pending") != bool(messages)
        ):
            found.append(f"tp_{pk} ({name}): pending messages changed")
        drained = name in DRAINED
        if any(consumed != drained for _, consumed, _ in messages):
            found.append(f"tp_{pk} ({name}): pending messages {'not ' if drained else ''}consumed")
        conversation = list(earlier)
        if drained:
            for _, _, text in messages:
                conversation += [("user", text), ("assistant", f"echo: {text}")]
        if conversations.get(pk, []) != conversation:
            found.append(
                f"tp_{pk} ({name}): {len(conversations.get(pk, []))} conversation messages, "
                f"expected {len(conversation)} (each pending message once, in order, + reply)"
            )
        for problem in found:
            problems.setdefault(name, []).append(problem)
    return [f"{len(found)} problems in {name}, e.g. {found[0]}" for name, found in problems.items()]


def dead_pid() -> int:
    """The pid of a process that has just ended (and is not running any more)."""
    child = subprocess.Popen(["true"])
    child.wait()
    with contextlib.suppress(ProcessLookupError):
        os.kill(child.pid, 0)
        raise BenchFailure(f"pid {child.pid} was reused at once; run again")
    return child.pid


def fill_database(deployment: Deployment, args: argparse.Namespace) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        plan_file = Path(scratch) / "setup.json"
        command = [
            sys.executable, str(Path(__file__).resolve()), "--setup-child",
            "--processes", str(args.processes), "--per-session", str(args.per_session),
            "--pending", str(args.pending), "--history", str(args.history),
            "--dead-pid", str(dead_pid()), "--plan-file", str(plan_file),
        ]  # fmt: skip
        env = {**deployment.env, "DJANGO_SETTINGS_MODULE": "vancetope.settings"}
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0 or not plan_file.exists():
            raise BenchFailure(f"setup failed:\n{done.stderr[-2000:]}")
        return float(json.loads(plan_file.read_text())["setup_seconds"])


def run_runtime(runtime: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"  running {runtime} …", file=sys.stderr, flush=True)
    row: dict[str, Any] = {"runtime": runtime}
    with Deployment(runtime, "restart") as deployment:
        row["description"] = deployment.description
        if not args.no_baseline:
            empty = BenchBrain(deployment)
            if empty.stop() != 0:
                raise BenchFailure(f"the Brain on the empty database failed:\n{empty.log_tail()}")
            row["baseline"] = empty.healthy_after
            (deployment.var_dir / "brain.log").unlink()
        row["setup"] = fill_database(deployment, args)
        plan = make_plan(args)
        row["plan"] = plan
        watch = RecoveryWatch(deployment, plan, args.poll_ms / 1000, args.timeout)
        with contextlib.ExitStack() as profiling:

            def started(brain: BenchBrain) -> None:
                profiling.enter_context(PySpy(brain.pid, args.py_spy))

            watch.start()
            try:
                brain = BenchBrain(deployment, health_timeout=args.timeout, on_start=started)
                try:
                    watch.join(max(0.0, args.timeout - (time.perf_counter() - brain.started)))
                    row["memory"] = brain.memory_mb()
                finally:
                    profiling.close()
                    code = brain.stop()
            finally:
                watch.stop_event.set()
                watch.join()
        row["healthz"] = brain.healthy_after
        row["recovered"] = None if watch.done_at is None else watch.done_at - brain.started
        row["leases"] = None if watch.leases_at is None else watch.leases_at - brain.started
        row["banner"] = brain.banner_line("recovered")
        row["log_warnings"] = brain.log_warnings()
        problems = []
        if watch.done_at is None:
            problems.append(
                f"not recovered within {args.timeout:g} s: (running, unconsumed, messages) = "
                f"{watch.last}, expected {watch.target}"
            )
        problems += check_database(deployment, args)
        if code != 0:
            problems.append(f"the Brain exited with {code}:\n{brain.log_tail(12)}")
        row["problems"] = problems
    return row


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> bool:
    print()
    plan = rows[0]["plan"] if rows and "plan" in rows[0] else make_plan(args)
    mix = ", ".join(f"{name} {count}" for name, count in plan["per_category"].items())
    print(
        f"restart with {args.processes} persisted ford processes in sessions of "
        f"{args.per_session}, {args.history} earlier messages each, {args.pending} pending "
        f"message(s) per *-pending process"
    )
    print(f"processes: {mix}")
    print(
        f"expected: {plan['running']} RUNNING → IDLE, {plan['turns']} pending messages answered, "
        f"{plan['unconsumed']} stay pending (suspended)"
    )
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    print()
    table = []
    met = True
    for row in rows:
        if "error" in row:
            table.append([row["runtime"], "FAILED", row["error"][:60], "", "", "", "", ""])
            continue
        recovered = row["recovered"]
        met = met and recovered is not None and recovered <= args.budget
        table.append(
            [
                row["runtime"],
                f"{row['baseline']:.2f}" if "baseline" in row else "-",
                f"{row['setup']:.1f}",
                f"{row['healthz']:.2f}",
                f"{row['leases']:.2f}" if row["leases"] is not None else "timeout",
                f"{recovered:.2f}" if recovered is not None else "timeout",
                f"{row['memory']['rss']:.1f} MB",
                f"{row['memory']['peak']:.1f} MB",
            ]
        )
    print_table(
        ["runtime", "empty→healthz s", "setup s", "healthz s", "leases s", "recovered s",
         "RSS end", "peak RSS"],
        table,
    )  # fmt: skip
    print()
    for row in rows:
        if "error" not in row:
            print(f"{row['runtime']}: {row['description']}; Brain: {row['banner']}")
            print_log_warnings(row["log_warnings"])
    print(
        "times from the start of the `manage.py brain` OS process: empty→healthz = on the "
        "bootstrapped empty database; healthz = until /healthz first answers 200 (polled every "
        "10 ms); leases = until every dead lease is recovered (a `recover` transition each);\n"
        "recovered = until nothing is RUNNING and exactly the expected pending messages "
        f"and conversation messages remain (database polled every {args.poll_ms:g} ms); setup "
        "s = bulk_create of the processes;\nRSS end = Brain VmRSS when recovered, peak RSS = "
        "VmHWM of the Brain"
    )
    ok = [row for row in rows if "error" not in row]
    if ok:
        print(f"budget: all recovered within {args.budget:g} s: {'met' if met else 'NOT met'}")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--processes", type=int, default=10_000, help="persisted processes")
    parser.add_argument("--per-session", type=int, default=10, help="processes per session")
    parser.add_argument(
        "--pending", type=int, default=1, help="pending messages of each *-pending process"
    )
    parser.add_argument(
        "--history", type=int, default=2, help="earlier conversation messages per process"
    )
    parser.add_argument(
        "--runtime",
        choices=("embedded", "postgres"),
        help="only this runtime (default: embedded, and postgres when DATABASE_URL is set)",
    )
    parser.add_argument(
        "--timeout", type=float, default=180.0, help="seconds the recovery may take at most"
    )
    parser.add_argument(
        "--poll-ms", type=float, default=20.0, help="database poll interval while recovering"
    )
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the start on the empty database"
    )
    parser.add_argument(
        "--budget", type=float, default=BUDGET_SECONDS, help="seconds to recover everything in"
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when the budget is not met, too"
    )
    parser.add_argument(
        "--py-spy",
        metavar="PATH",
        help="record the Brain with py-spy from its start until recovered (.txt: raw collapsed "
        "stacks, .json: speedscope, else SVG); one runtime only",
    )
    parser.add_argument("--setup-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dead-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--plan-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.processes < 1 or args.per_session < 1 or args.pending < 1 or args.history < 0:
        parser.error("--processes, --per-session, --pending must be >= 1, --history >= 0")
    if args.setup_child:
        setup_child(args)
        return 0
    wanted = [args.runtime] if args.runtime else ["embedded", "postgres"]
    runtimes, skipped = available_runtimes(*wanted)
    if args.runtime and skipped:
        parser.error(skipped[0])
    if args.py_spy and len(runtimes) > 1:
        parser.error("--py-spy needs --runtime")
    rows = []
    for runtime in runtimes:
        try:
            rows.append(run_runtime(runtime, args))
        except BenchFailure as exc:
            print(f"    {runtime} FAILED: {exc}", file=sys.stderr)
            rows.append({"runtime": runtime, "error": str(exc)})
    met = report(rows, args)
    for note in skipped:
        print(f"({note})")
    failed = False
    for row in rows:
        for problem in row.get("problems", []) + ([row["error"]] if "error" in row else []):
            print(f"FAILED ({row['runtime']}): {problem}", file=sys.stderr)
            failed = True
    if failed:
        return 1
    return 0 if met or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
