"""Turn overhead of the Brain: N ford chat turns with the zero-latency scripted provider.

Two paths are timed, one turn at a time, wall clock around the real operation:

  service    `send_chat(session_id, text)`, then poll the database until that message's assistant
             reply is stored (ConversationMessage at the expected index) and the chat process
             is back to IDLE.
  websocket  `chat` frame through `vancetope.asgi.application` (origin check, bearer-token auth,
             BrainConsumer) with channels' WebsocketCommunicator, in-process; timed until the
             `chat-message` event with role "assistant" for that message arrives.

Each (runtime, path) pair runs in its own child process, because Django reads its settings
once per process and so that each peak RSS belongs to one path only:

  embedded        SQLite in a temporary VANCETOPE_VAR_DIR, in-memory channel layer,
                  in-process worker
  postgres+redis  PostgreSQL (a throwaway database on the server of DATABASE_URL, dropped at
                  the end) + Redis channel layer and broker (a unique prefix and task queue,
                  their keys deleted at the end); lanes run on a separate `celery worker` OS
                  process (threads pool), as in the distributed runtime

The postgres+redis runtime runs only when DATABASE_URL and REDIS_URL are both set.

    .venv/bin/python bench/turn_overhead.py [--turns 500] [--warmup 20]

See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import (
    Deployment,
    available_runtimes,
    is_reply_event,
    peak_rss_mb,
    percentile,
    proc_memory_mb,
)

ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = ("embedded", "postgres+redis")
PATHS = ("service", "websocket")
# Bounds the frames read while waiting for one turn's reply (about 10 events per turn).
MAX_FRAMES_PER_TURN = 10_000


def turn_text(index: int) -> str:
    return f"hello from benchmark turn {index}"


def expected_reply(index: int) -> str:
    # The scripted provider without a script echoes the last user message.
    return f"echo: {turn_text(index)}"


# === child: one runtime, one path =================================================================


class TurnFailed(RuntimeError):
    pass


def _setup_django() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")
    import django

    django.setup()


def _make_tenancy() -> tuple[Any, Any, str]:
    """A tenant, project, member user and API token, as tests/conftest.py's Tenancy does."""
    from django.contrib.auth import get_user_model

    from recipes_app.services import sync_bundled_recipes
    from vancetope.tenancy.models import (
        ApiToken,
        Project,
        ProjectMembership,
        Role,
        Tenant,
        TenantMembership,
    )

    sync_bundled_recipes()
    tenant = Tenant.objects.create(slug="bench", name="Bench tenant")
    project = Project.objects.create(tenant=tenant, slug="bench", name="Bench project")
    user = get_user_model().objects.create_user("bench-user", password="bench-pw")
    TenantMembership.objects.create(user=user, tenant=tenant, role=Role.ADMIN)
    ProjectMembership.objects.create(user=user, project=project)
    _, token = ApiToken.issue(user, name="bench")
    return user, project, token


def bench_service(user: Any, project: Any, args: argparse.Namespace) -> list[float]:
    from processes.actions.steer import send_chat
    from processes.models import ConversationMessage, ThinkProcess
    from processes.states import Status
    from sessions_app.services import FingerprintData, create_session

    session = create_session(
        user,
        client_type="cli",
        project_id=project.public_id,
        fingerprint=FingerprintData(machine_id="bench-machine", working_dir=str(ROOT)),
        recipe="ford",
    )
    process_id = session.chat_process_id
    assert process_id is not None
    process = ThinkProcess.objects.get(pk=process_id)
    if process.think_engine != "ford" or process.status != Status.IDLE:
        raise TurnFailed(f"chat process is {process.think_engine}/{process.status}, not ford/IDLE")
    index = process.conversation_length

    def reply_of(reply_index: int) -> tuple[str, str] | None:
        """The stored reply once the turn is over (chat process back to IDLE); one query, so
        the poll takes as little of the GIL from the lane thread as possible."""
        return (
            ConversationMessage.objects.filter(
                process_id=process_id, index=reply_index, process__status=Status.IDLE
            )
            .values_list("role", "content")
            .first()
        )

    def failure(turn: int) -> TurnFailed:
        status, error = ThinkProcess.objects.values_list("status", "last_error").get(pk=process_id)
        return TurnFailed(
            f"turn {turn}: no reply within {args.turn_timeout}s (process {status}: {error})"
        )

    poll_seconds = args.poll_ms / 1000
    samples: list[float] = []
    for turn in range(args.warmup + args.turns):
        reply_index = index + 1  # ford stores the user message, then the assistant reply
        start = time.perf_counter()
        deadline = start + args.turn_timeout
        send_chat(session.pk, turn_text(turn))
        while (row := reply_of(reply_index)) is None:
            if time.perf_counter() > deadline:
                raise failure(turn)
            time.sleep(poll_seconds)
        elapsed = time.perf_counter() - start
        if row != ("assistant", expected_reply(turn)):
            raise TurnFailed(f"turn {turn}: unexpected reply {row!r}")
        index += 2
        if turn >= args.warmup:
            samples.append(elapsed)
    return samples


async def _receive_until(
    communicator: Any, wanted: Callable[[dict[str, Any]], bool], deadline: float, what: str
) -> dict[str, Any]:
    for _ in range(MAX_FRAMES_PER_TURN):
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            break
        try:
            frame = await communicator.receive_json_from(timeout=remaining)
        except TimeoutError:
            break
        if frame.get("type") == "error":
            raise TurnFailed(f"{what}: error frame {frame}")
        if wanted(frame):
            return frame
    raise TurnFailed(f"{what}: nothing within the timeout")


async def bench_websocket(project: Any, token: str, args: argparse.Namespace) -> list[float]:
    from channels.testing import WebsocketCommunicator

    from vancetope.asgi import application

    communicator = WebsocketCommunicator(
        application, "/ws/brain/", headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    connected, _ = await communicator.connect(timeout=args.turn_timeout)
    if not connected:
        raise TurnFailed("WebSocket connect refused")
    samples: list[float] = []
    try:
        await communicator.send_json_to(
            {
                "type": "session-create",
                "id": "create",
                "data": {
                    "clientType": "cli",
                    "projectId": project.public_id,
                    "recipe": "ford",
                    "fingerprint": {"machineId": "bench-machine", "workingDir": str(ROOT)},
                },
            }
        )
        created = await _receive_until(
            communicator,
            lambda frame: frame.get("replyTo") == "create",
            time.perf_counter() + args.turn_timeout,
            "session-create",
        )
        process_id = created["data"]["chatProcessId"]

        def is_reply(frame: dict[str, Any]) -> bool:
            return is_reply_event(frame, process_id)

        for turn in range(args.warmup + args.turns):
            start = time.perf_counter()
            await communicator.send_json_to(
                {"type": "chat", "id": f"c{turn}", "data": {"text": turn_text(turn)}}
            )
            frame = await _receive_until(
                communicator, is_reply, start + args.turn_timeout, f"turn {turn}"
            )
            elapsed = time.perf_counter() - start
            if frame["data"]["text"] != expected_reply(turn):
                raise TurnFailed(f"turn {turn}: unexpected reply {frame['data']['text']!r}")
            if turn >= args.warmup:
                samples.append(elapsed)
    except BaseException:
        # Leave with the original error, not with one from closing a broken socket.
        with contextlib.suppress(Exception):
            await communicator.disconnect(timeout=args.turn_timeout)
        raise
    await communicator.disconnect(timeout=args.turn_timeout)
    return samples


class ThreadProfiles:
    """cProfile in the main thread and in every thread started while enabled (the lane worker
    and asgiref's executor threads), merged into one pstats file."""

    def __init__(self) -> None:
        import cProfile

        self._cprofile = cProfile
        self.main = cProfile.Profile()
        self.threads: list[Any] = []
        self._lock = threading.Lock()

    def _start_in_thread(self, *_: Any) -> None:
        profile = self._cprofile.Profile()
        with self._lock:
            self.threads.append(profile)
        profile.enable()

    def start(self) -> None:
        threading.setprofile(self._start_in_thread)
        self.main.enable()

    def stop(self, path: str) -> None:
        import pstats

        self.main.disable()
        threading.setprofile(None)  # type: ignore[arg-type]
        stats = pstats.Stats(self.main)
        for profile in self.threads:
            stats.add(profile)
        stats.dump_stats(path)


def child_main(args: argparse.Namespace) -> None:
    setup_start = time.perf_counter()
    _setup_django()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from processes.lane.worker import shutdown_worker

    call_command("migrate", interactive=False, verbosity=0)
    user, project, token = _make_tenancy()
    setup_seconds = time.perf_counter() - setup_start
    rss_before = peak_rss_mb()

    profiles = ThreadProfiles() if args.profile else None
    if profiles is not None:
        profiles.start()
    run_start = time.perf_counter()
    try:
        if args.path == "service":
            samples = bench_service(user, project, args)
        else:
            samples = asyncio.run(bench_websocket(project, token, args))
    finally:
        run_seconds = time.perf_counter() - run_start
        shutdown_worker(wait=True)
        if profiles is not None:
            profiles.stop(args.profile)

    result = {
        "runtime": args.runtime,
        "path": args.path,
        "turns": len(samples),
        "warmup": args.warmup,
        "total_seconds": sum(samples),
        "run_seconds": run_seconds,
        "setup_seconds": setup_seconds,
        "p50_ms": percentile(samples, 50) * 1000,
        "p99_ms": percentile(samples, 99) * 1000,
        "mean_ms": statistics.fmean(samples) * 1000,
        "max_ms": max(samples) * 1000,
        # Mean of the first and the last tenth of the timed turns: does a turn get slower as
        # the conversation grows?
        "early_ms": statistics.fmean(samples[: max(1, len(samples) // 10)]) * 1000,
        "late_ms": statistics.fmean(samples[-max(1, len(samples) // 10) :]) * 1000,
        "rss_setup_mb": rss_before,
        "rss_peak_mb": peak_rss_mb(),
        "database": f"{connection.vendor} {connection.settings_dict['NAME']}",
        "channel_layer": settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1],
        "worker": settings.VANCETOPE_WORKER,
        "llm": settings.VANCETOPE_LLM,
    }
    Path(args.result_file).write_text(json.dumps(result))


# === parent: one child per (runtime, path), then the table =======================================


def run_child(runtime: str, path: str, args: argparse.Namespace) -> dict[str, Any]:
    worker = "celery" if runtime == "postgres+redis" else "inprocess"
    deployment = Deployment(runtime, f"turns_{path}", worker=worker)
    with deployment, tempfile.TemporaryDirectory() as scratch:
        celery = deployment.celery_worker() if worker == "celery" else None
        try:
            result = _run_child(runtime, path, args, deployment, Path(scratch))
        finally:
            if celery is not None:
                worker_memory = proc_memory_mb(celery.process.pid)
                celery.stop()
                if "error" not in result:
                    result["worker_rss_peak_mb"] = worker_memory.get("peak", 0.0)
        return result


def _run_child(
    runtime: str, path: str, args: argparse.Namespace, deployment: Deployment, scratch: Path
) -> dict[str, Any]:
    result_file = scratch / "result.json"
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--runtime",
        runtime,
        "--path",
        path,
        "--turns",
        str(args.turns),
        "--warmup",
        str(args.warmup),
        "--turn-timeout",
        str(args.turn_timeout),
        "--poll-ms",
        str(args.poll_ms),
        "--result-file",
        str(result_file),
    ]
    if args.profile:
        command += ["--profile", f"{args.profile}.{runtime}.{path}.pstats"]
    print(f"  running {runtime}/{path} …", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(
            command,
            env={**deployment.env, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=args.child_timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"runtime": runtime, "path": path, "error": f">{args.child_timeout}s"}
    if done.returncode != 0 or not result_file.exists():
        tail = (done.stderr or done.stdout or "(no output)").strip().splitlines()[-12:]
        print("\n".join(f"    {line}" for line in tail), file=sys.stderr)
        reason = tail[-1].strip()[:100] if tail else ""
        return {"runtime": runtime, "path": path, "error": f"exit {done.returncode}: {reason}"}
    result: dict[str, Any] = json.loads(result_file.read_text())
    return result


def print_table(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print()
    print(
        f"ford chat turns, scripted provider (zero latency): {args.turns} timed turns after "
        f"{args.warmup} warm-up turns, one at a time, one session per row"
    )
    print(
        f"python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    print()
    header = (
        f"{'runtime':<14} {'path':<10} {'turns':>5} {'turns/s':>8} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'mean ms':>8} {'max ms':>8} {'early ms':>9} {'late ms':>8} "
        f"{'RSS setup':>10} {'peak RSS':>9} {'setup s':>8}"
    )
    print(header)
    print("-" * len(header))
    for row in results:
        if "error" in row:
            print(f"{row['runtime']:<14} {row['path']:<10} FAILED ({row['error']})")
            continue
        print(
            f"{row['runtime']:<14} {row['path']:<10} {row['turns']:>5} "
            f"{row['turns'] / row['total_seconds']:>8.1f} {row['p50_ms']:>8.2f} "
            f"{row['p99_ms']:>8.2f} {row['mean_ms']:>8.2f} {row['max_ms']:>8.2f} "
            f"{row['early_ms']:>9.2f} {row['late_ms']:>8.2f} "
            f"{row['rss_setup_mb']:>7.1f} MB {row['rss_peak_mb']:>6.1f} MB "
            f"{row['setup_seconds']:>8.1f}"
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
                f"{row['runtime']}/{row['path']}: lanes ran on a separate `celery worker` "
                f"(threads pool), peak RSS {row['worker_rss_peak_mb']:.1f} MB"
            )
    print(
        "turns/s = timed turns / sum of their wall-clock times; early/late ms = mean of the "
        "first/last tenth of the timed turns;\nRSS setup = ru_maxrss after django.setup + "
        "migrate + fixtures, peak RSS = ru_maxrss after the run; setup s = those setup steps; "
        f"service path polls every {args.poll_ms:g} ms"
    )


def parent_main(args: argparse.Namespace) -> int:
    runtimes, skipped = available_runtimes(*([args.runtime] if args.runtime else RUNTIMES))
    if args.runtime and skipped:
        print(skipped[0], file=sys.stderr)
        return 2
    paths = [args.path] if args.path else list(PATHS)
    results = [run_child(runtime, path, args) for runtime in runtimes for path in paths]
    print_table(results, args)
    for note in skipped:
        print(f"({note})")
    return 1 if any("error" in row for row in results) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500, help="timed turns per row")
    parser.add_argument("--warmup", type=int, default=20, help="untimed turns before them")
    parser.add_argument("--runtime", choices=RUNTIMES, help="only this runtime")
    parser.add_argument("--path", choices=PATHS, help="only this path")
    parser.add_argument(
        "--turn-timeout", type=float, default=10.0, help="seconds one turn may take"
    )
    parser.add_argument(
        "--poll-ms",
        type=float,
        default=2.0,
        help="service path: database poll interval while waiting for the reply",
    )
    parser.add_argument(
        "--child-timeout", type=float, default=150.0, help="seconds one child run may take"
    )
    parser.add_argument(
        "--profile",
        metavar="PREFIX",
        help="write cProfile stats (all threads) of each run to PREFIX.<runtime>.<path>.pstats",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.turns < 1 or args.warmup < 0 or args.poll_ms <= 0 or args.turn_timeout <= 0:
        parser.error("--turns must be >= 1, --warmup >= 0, --poll-ms and --turn-timeout > 0")
    if args.child:
        if not (args.runtime and args.path and args.result_file):
            parser.error("--child needs --runtime, --path and --result-file")
        child_main(args)
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
