"""Cron: N cron jobs due in the same minute all run exactly once within the budget.

A setup child (Django) fills a bootstrapped database with N ford processes, each PAUSED with
one pending message, and N cron jobs through `triggers.cron.jobs.save_job` (each with its
django-celery-beat PeriodicTask), every one `process_continue {maxTasks: 1}` on its own process
and due at the same minute (the first whole minute at least `--lead` seconds after the setup).
Then the scheduler runs as users run it:

  embedded         `manage.py brain`: beat is a thread of the Brain, firings run in it
                   (SQLite, in-process worker)
  postgres+redis   two `celery beat` processes (DatabaseScheduler) and one `celery worker`
                   (threads pool) on a throwaway PostgreSQL database and Redis queue, when
                   DATABASE_URL and REDIS_URL are set

The bench polls the database from the due minute until every job has one finished run, and
checks afterwards that each job was claimed once (one CronFiring, outcome ran, one RunLog
completed), that each process ran exactly one turn and is PAUSED again, and, with two beats,
that the second beat's copies ran nothing. Budget: all N run within 60 s of the due minute.

    .venv/bin/python bench/cron.py [--jobs 1000]

See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    BenchBrain,
    BenchFailure,
    Deployment,
    HelpFormatter,
    available_runtimes,
    print_table,
)

from tests.e2e.brain import CeleryWorker, Service

BUDGET_SECONDS = 60.0


# === setup child (Django) =========================================================================


def setup_child(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from engines.registry import get_engine
    from processes.models import PendingKind, PendingMessage, ThinkProcess
    from recipes_app.services import resolve_recipe
    from sessions_app.models import Session
    from triggers.cron.jobs import save_job
    from triggers.models import CronJob
    from vancetope.tenancy.models import Project

    started = time.perf_counter()
    user = get_user_model().objects.get(username="local")
    project = Project.objects.get(slug="default")
    recipe = resolve_recipe(project, recipe="ford", engine=None)
    engine = get_engine(recipe.engine)
    assert engine is not None
    now = timezone.now()
    with transaction.atomic():
        session = Session.objects.create(
            owner=user, project=project, client_type="cli", machine_id="bench-machine"
        )
        processes = ThinkProcess.objects.bulk_create(
            (
                ThinkProcess(
                    session=session,
                    think_engine=engine.name,
                    engine_version=engine.version,
                    recipe_name=recipe.name,
                    recipe_snapshot=recipe.snapshot(),
                    engine_params=dict(recipe.params),
                    status="PAUSED",
                    next_pending_seq=2,
                    created_at=now,
                    updated_at=now,
                )
                for _ in range(args.jobs)
            ),
            batch_size=2000,
        )
        PendingMessage.objects.bulk_create(
            (
                PendingMessage(
                    process=process,
                    seq=1,
                    kind=PendingKind.USER,
                    payload={"text": f"nightly {process.pk}"},
                    created_at=now,
                )
                for process in processes
            ),
            batch_size=5000,
        )
    jobs_started = time.perf_counter()
    due = datetime.fromisoformat(args.due)
    schedule = f"{due.minute} {due.hour} * * *"
    for process in processes:
        action = {
            "type": "process_continue",
            "processId": process.public_id,
            "constraints": {
                "maxTasks": 1,
                "maxTokens": None,
                "stopOnApproval": True,
                "stopOnClientTool": True,
            },
        }
        job = CronJob(owner=user, project=project, schedule=schedule, action=action)
        save_job(job)
    Path(args.plan_file).write_text(
        json.dumps(
            {
                "setup_seconds": time.perf_counter() - started,
                "jobs_seconds": time.perf_counter() - jobs_started,
            }
        )
    )


# === parent =======================================================================================


def due_minute(lead: float) -> datetime:
    at = datetime.now(UTC) + timedelta(seconds=lead)
    return at.replace(second=0, microsecond=0) + timedelta(minutes=1)


def fill(deployment: Deployment, args: argparse.Namespace, due: datetime) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        plan_file = Path(scratch) / "setup.json"
        command = [
            sys.executable, str(Path(__file__).resolve()), "--setup-child", "--jobs",
            str(args.jobs), "--due", due.isoformat(), "--plan-file", str(plan_file),
        ]  # fmt: skip
        env = {**deployment.env, "DJANGO_SETTINGS_MODULE": "vancetope.settings"}
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0 or not plan_file.exists():
            raise BenchFailure(f"setup failed:\n{done.stderr[-3000:]}")
        return dict(json.loads(plan_file.read_text()))


COUNTS = (
    "SELECT (SELECT COUNT(*) FROM triggers_cronfiring),"
    " (SELECT COUNT(*) FROM triggers_runlog WHERE status <> 'running'),"
    " (SELECT COUNT(*) FROM triggers_runlog)"
)


def counts(connection: Any) -> tuple[int, int, int]:
    row = connection.execute(COUNTS).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def check(connection: Any, jobs: int) -> list[str]:
    problems = []
    firings, finished, runs = counts(connection)
    if (firings, finished, runs) != (jobs, jobs, jobs):
        problems.append(f"(firings, finished runs, runs) = {(firings, finished, runs)}, not {jobs}")
    per_job = connection.execute(
        "SELECT COUNT(*) FROM (SELECT job_id FROM triggers_cronfiring GROUP BY job_id"
        " HAVING COUNT(*) <> 1) AS twice"
    ).fetchone()[0]
    if per_job:
        problems.append(f"{per_job} jobs fired more than once")
    outcomes = dict(
        connection.execute(
            "SELECT outcome, COUNT(*) FROM triggers_cronfiring GROUP BY outcome"
        ).fetchall()
    )
    if outcomes != {"ran": jobs}:
        problems.append(f"firing outcomes {outcomes}")
    statuses = dict(
        connection.execute(
            "SELECT status, COUNT(*) FROM triggers_runlog GROUP BY status"
        ).fetchall()
    )
    if statuses != {"completed": jobs}:
        problems.append(f"run statuses {statuses}")
    processes = dict(
        connection.execute(
            "SELECT status || '/' || consumed_count, COUNT(*) FROM processes_thinkprocess"
            " WHERE recipe_name = 'ford' AND next_pending_seq = 2 GROUP BY status, consumed_count"
        ).fetchall()
    )
    if processes != {"PAUSED/1": jobs}:
        problems.append(f"processes (status/turns run): {processes}")
    return problems


def twice(connection: Any) -> int:
    """Jobs with more than one firing, or firings with more than one run."""
    jobs = connection.execute(
        "SELECT COUNT(*) FROM (SELECT job_id FROM triggers_cronfiring GROUP BY job_id"
        " HAVING COUNT(*) > 1) AS twice"
    ).fetchone()[0]
    runs = connection.execute(
        "SELECT COUNT(*) FROM (SELECT cron_id FROM triggers_runlog GROUP BY cron_id"
        " HAVING COUNT(*) > 1) AS twice"
    ).fetchone()[0]
    return int(jobs) + int(runs)


def watch(connection: Any, due: datetime, jobs: int, timeout: float) -> dict[str, float | None]:
    """From the due minute: when the first firing was claimed, and when all runs finished."""
    due_ts = due.timestamp()
    first = done = None
    while time.time() < due_ts + timeout:
        firings, finished, _ = counts(connection)
        if first is None and firings:
            first = time.time() - due_ts
        if finished >= jobs:
            done = time.time() - due_ts
            break
        time.sleep(0.25)
    return {"first": first, "done": done}


class CeleryBeat(Service):
    def __init__(self, env: dict[str, str], name: str) -> None:
        celery = str(Path(sys.executable).with_name("celery"))
        schedule = Path(env["VANCETOPE_VAR_DIR"]) / f"{name}-schedule"
        args = [celery, "-A", "vancetope", "beat", "--scheduler",
                "django_celery_beat.schedulers:DatabaseScheduler", "--schedule", str(schedule),
                "--loglevel", "WARNING"]  # fmt: skip
        super().__init__(name, args, env)


def run_runtime(runtime: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"  running {runtime} …", file=sys.stderr, flush=True)
    worker = "celery" if runtime == "postgres+redis" else "inprocess"
    row: dict[str, Any] = {"runtime": runtime}
    with Deployment(runtime, "cron", worker=worker) as deployment:
        row["description"] = deployment.description
        due = due_minute(args.lead)
        row.update(fill(deployment, args, due))
        if datetime.now(UTC) > due - timedelta(seconds=10):
            raise BenchFailure(f"setup took too long for the due minute {due}: raise --lead")
        services: list[Service] = []
        if runtime == "embedded":
            services.append(BenchBrain(deployment))
            row["schedulers"] = "1 (in the Brain)"
        else:
            services.append(CeleryWorker(deployment.env, deployment.tag, "worker"))
            services += [CeleryBeat(deployment.env, f"beat-{n}") for n in (1, 2)]
            row["schedulers"] = "2 celery beat"
        connection = deployment.connect_database()
        try:
            row.update(watch(connection, due, args.jobs, args.timeout))
            time.sleep(args.settle)  # a late duplicate would show up meanwhile
            row["problems"] = check(connection, args.jobs)
            row["twice"] = twice(connection)
        finally:
            connection.close()
            for service in services:
                service.stop()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--jobs", type=int, default=1000, help="cron jobs due in the same minute")
    parser.add_argument("--lead", type=float, default=60.0, help="seconds of setup before due")
    parser.add_argument("--timeout", type=float, default=180.0, help="give up after S seconds")
    parser.add_argument("--settle", type=float, default=5.0, help="wait for late duplicates")
    parser.add_argument("--runtime", choices=["embedded", "postgres+redis"], action="append")
    parser.add_argument("--setup-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--due", help=argparse.SUPPRESS)
    parser.add_argument("--plan-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup_child:
        setup_child(args)
        return 0
    runtimes, skipped = available_runtimes(*(args.runtime or ["embedded", "postgres+redis"]))
    rows = []
    for runtime in runtimes:
        try:
            rows.append(run_runtime(runtime, args))
        except BenchFailure as exc:
            rows.append({"runtime": runtime, "problems": [str(exc)], "done": None})
    print()
    print(f"{args.jobs} cron jobs due in the same minute, each process_continue (maxTasks 1) of")
    print("a PAUSED ford process with one pending message (scripted LLM: echo)")
    print()
    table = []
    met = True
    for row in rows:
        done = row.get("done")
        ok = done is not None and done <= BUDGET_SECONDS and not row["problems"]
        met = met and ok
        first = row.get("first")
        table.append(
            [
                row["runtime"],
                row.get("schedulers", "-"),
                f"{row['jobs_seconds']:.1f}" if "jobs_seconds" in row else "-",
                f"{first:.1f}" if first is not None else "-",
                f"{done:.1f}" if done is not None else "timeout",
                f"{args.jobs / done:.0f}" if done else "-",
                "-" if "twice" not in row else ("yes" if not row["twice"] else "NO"),
            ]
        )
    print_table(
        ["runtime", "schedulers", "save_job s", "first claim s", "all done s", "runs/s",
         "none twice"],
        table,
    )  # fmt: skip
    print()
    for row in rows:
        if "description" in row:
            print(f"{row['runtime']}: {row['description']}")
        for problem in row["problems"]:
            print(f"  problem: {problem}")
    for note in skipped:
        print(note)
    print(
        "times from the due minute: first claim = the first CronFiring row; all done = every "
        "job's run finished;\nsave_job s = storing the jobs and their PeriodicTasks in the setup; "
        "none twice = no job claimed twice and no firing with two runs (problems list the rest)"
    )
    print(f"budget: all {args.jobs} run within {BUDGET_SECONDS:g} s: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
