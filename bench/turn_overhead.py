"""Turn overhead of the Brain: N chat turns (the default chat and ford) with the zero-latency
scripted provider.

Two paths are timed, one turn at a time, wall clock around the real operation:

  service    `send_chat(session_id, text)`, then poll the database until that message's assistant
             reply is stored (ConversationMessage at the expected index) and the chat process
             is back to IDLE.
  websocket  `chat` frame through `vancetope.asgi.application` (origin check, bearer-token auth,
             BrainConsumer) from a lean in-process client (InProcessSocket); timed until the
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

`--observability both` runs every row with traces and metrics off (VANCETOPE_METRICS false, no
OTLP endpoint) and on (spans exported over OTLP/HTTP to a sink in this process that answers
every export at once and counts its spans, counters in a PROMETHEUS_MULTIPROC_DIR), alternating,
`--rounds` times each, and prints the two median p50s side by side against the budget (on
within 10 % of off). An `on` row counts only if it exported a span and counted a turn for every
turn it ran; `on` or `off` runs one of them (default: the Brain's defaults).

`--journal both` does the same with the turn's journal off and on (VANCETOPE_TURN_JOURNAL:
processes/lane/journal.py, which writes each LLM answer with its message), and prints what the
journal costs a turn's p50 in this run; the default chat's budgets are judged on every row.

    .venv/bin/python bench/turn_overhead.py [--turns 500] [--warmup 20] [--observability both]
    .venv/bin/python bench/turn_overhead.py --runtime embedded --path websocket --journal both

See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from common import (
    Deployment,
    StatementCounter,
    available_runtimes,
    is_reply_event,
    peak_rss_mb,
    percentile,
    proc_cpu_seconds,
    proc_memory_mb,
)
from peers import (
    LANGGRAPH_TURNS,
    PEERS_VARIABLE,
    LangGraphTurns,
    langgraph_turns,
    missing_reason,
    peers_dir,
)
from turn_costs import cost_model, print_cost_model
from turn_report import print_budgets, print_overhead, print_peer, print_table
from turn_stages import Stamps, print_timeline

ROOT = Path(__file__).resolve().parent.parent
RUNTIMES = ("embedded", "postgres+redis")
PATHS = ("service", "websocket")
# The chats measured: the default chat recipe (what session-create gives when it names none:
# arthur, a tool loop) and the ford recipe (a bare chat).
CHATS = ("default", "ford")
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


def recipe_of(chat: str) -> str | None:
    """The session-create's recipe for a chat: none for the default chat recipe."""
    return None if chat == "default" else chat


def expected_engine(chat: str) -> str:
    from django.conf import settings

    return settings.VANCETOPE_SESSION_DEFAULT_CHAT_ENGINE if chat == "default" else chat


def bench_service(user: Any, project: Any, args: argparse.Namespace) -> list[float]:
    from processes.actions.sessions import create_session
    from processes.actions.steer import send_chat
    from processes.models import ConversationMessage, ThinkProcess
    from processes.states import Status
    from sessions_app.services import FingerprintData

    session = create_session(
        user,
        client_type="cli",
        project_id=project.public_id,
        fingerprint=FingerprintData(machine_id="bench-machine", working_dir=str(ROOT)),
        recipe=recipe_of(args.chat),
    )
    process_id = session.chat_process_id
    assert process_id is not None
    process = ThinkProcess.objects.get(pk=process_id)
    engine = expected_engine(args.chat)
    if process.think_engine != engine or process.status != Status.IDLE:
        raise TurnFailed(
            f"chat process is {process.think_engine}/{process.status}, not {engine}/IDLE"
        )
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
        reply_index = index + 1  # the user message is stored, then the assistant reply
        start = time.perf_counter()
        deadline = start + args.turn_timeout
        # As the consumer sends it: with the user, so the message counts against their limit.
        send_chat(session.pk, turn_text(turn), user=user)
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


class InProcessSocket:
    """A WebSocket client of an ASGI application in this process: the ASGI websocket events
    in and out through two queues, as asgiref's ApplicationCommunicator passes them, and no
    more. Not channels' WebsocketCommunicator: that test tool patches
    `channels.db.close_old_connections` with `unittest.mock` around every frame in and out
    (about seven a turn) and arms a timer for each frame read: 8 % of a default chat turn's
    instructions (bench/turn_instructions.py) that the client, not the Brain, spent
    (BrainConsumer never takes that path)."""

    def __init__(self, application: Any, path: str, headers: list[tuple[bytes, bytes]]) -> None:
        self.application = application
        self.scope = {
            "type": "websocket",
            "path": path,
            "query_string": b"",
            "headers": headers,
            "subprotocols": [],
        }
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def connect(self, deadline: float) -> bool:
        self.task = asyncio.create_task(
            self.application(self.scope, self.inbox.get, self.outbox.put)
        )
        self.inbox.put_nowait({"type": "websocket.connect"})
        accepted = await self._next(deadline)
        return accepted is not None and accepted["type"] == "websocket.accept"

    def send_json(self, data: dict[str, Any]) -> None:
        self.inbox.put_nowait({"type": "websocket.receive", "text": json.dumps(data)})

    async def receive_json(self, deadline: float) -> dict[str, Any] | None:
        """The next frame, or None when the deadline passed first."""
        sent = await self._next(deadline)
        if sent is None:
            return None
        if sent["type"] != "websocket.send" or "text" not in sent:
            raise TurnFailed(f"the socket sent {sent!r}, not a text frame")
        frame: dict[str, Any] = json.loads(sent["text"])
        return frame

    async def _next(self, deadline: float) -> dict[str, Any] | None:
        if not self.outbox.empty():  # a batch's later frames: no timer
            return self.outbox.get_nowait()
        assert self.task is not None
        if self.task.done():
            self.task.result()  # the application's own error
            raise TurnFailed("the socket's application ended")
        try:
            async with asyncio.timeout(max(deadline - time.perf_counter(), 0)):
                return await self.outbox.get()
        except TimeoutError:
            if self.task.done():
                self.task.result()
            return None

    async def disconnect(self, deadline: float) -> None:
        self.inbox.put_nowait({"type": "websocket.disconnect", "code": 1000})
        if self.task is not None:
            async with asyncio.timeout(max(deadline - time.perf_counter(), 0)):
                await self.task


async def _receive_until(
    socket: InProcessSocket, wanted: Callable[[dict[str, Any]], bool], deadline: float, what: str
) -> dict[str, Any]:
    for _ in range(MAX_FRAMES_PER_TURN):
        frame = await socket.receive_json(deadline)
        if frame is None:
            break
        if frame.get("type") == "error":
            raise TurnFailed(f"{what}: error frame {frame}")
        if wanted(frame):
            return frame
    raise TurnFailed(f"{what}: nothing within the timeout")


async def _engine_of(public_id: str) -> str:
    from channels.db import database_sync_to_async

    from processes.models import ThinkProcess

    pk = int(public_id.removeprefix("tp_"))
    return await database_sync_to_async(
        lambda: ThinkProcess.objects.values_list("think_engine", flat=True).get(pk=pk)
    )()


async def bench_websocket(project: Any, token: str, args: argparse.Namespace) -> list[float]:
    from vancetope.asgi import application

    socket = InProcessSocket(
        application, "/ws/brain/", headers=[(b"authorization", f"Bearer {token}".encode())]
    )
    if not await socket.connect(time.perf_counter() + args.turn_timeout):
        raise TurnFailed("WebSocket connect refused")
    samples: list[float] = []
    try:
        data = {
            "clientType": "cli",
            "projectId": project.public_id,
            "fingerprint": {"machineId": "bench-machine", "workingDir": str(ROOT)},
        }
        if recipe_of(args.chat) is not None:
            data["recipe"] = recipe_of(args.chat)
        socket.send_json({"type": "session-create", "id": "create", "data": data})
        created = await _receive_until(
            socket,
            lambda frame: frame.get("replyTo") == "create",
            time.perf_counter() + args.turn_timeout,
            "session-create",
        )
        process_id = created["data"]["chatProcessId"]
        engine = await _engine_of(process_id)
        if engine != expected_engine(args.chat):
            raise TurnFailed(f"chat process runs {engine}, not {expected_engine(args.chat)}")

        def is_reply(frame: dict[str, Any]) -> bool:
            return is_reply_event(frame, process_id)

        for turn in range(args.warmup + args.turns):
            start = time.perf_counter()
            socket.send_json({"type": "chat", "id": f"c{turn}", "data": {"text": turn_text(turn)}})
            frame = await _receive_until(
                socket, is_reply, start + args.turn_timeout, f"turn {turn}"
            )
            elapsed = time.perf_counter() - start
            if frame["data"]["text"] != expected_reply(turn):
                raise TurnFailed(f"turn {turn}: unexpected reply {frame['data']['text']!r}")
            if turn >= args.warmup:
                samples.append(elapsed)
    except BaseException:
        # Leave with the original error, not with one from closing a broken socket.
        with contextlib.suppress(Exception):
            await socket.disconnect(time.perf_counter() + args.turn_timeout)
        raise
    await socket.disconnect(time.perf_counter() + args.turn_timeout)
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


def stored_bytes() -> int:
    """What the database holds now, in bytes: SQLite's pages in use (after a checkpoint moved
    the write-ahead log into the file), PostgreSQL's database size."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor != "sqlite":
            cursor.execute("SELECT pg_database_size(current_database())")
            return int(cursor.fetchone()[0])
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        found = []
        for pragma in ("page_count", "freelist_count", "page_size"):
            cursor.execute(f"PRAGMA {pragma}")
            found.append(int(cursor.fetchone()[0]))
    pages, free, size = found
    return (pages - free) * size


def child_main(args: argparse.Namespace) -> None:
    setup_start = time.perf_counter()
    _setup_django()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from processes.lane.worker import shutdown_worker

    counter = StatementCounter() if args.profile else None
    if counter is not None:
        counter.install()
    call_command("migrate", interactive=False, verbosity=0)
    user, project, token = _make_tenancy()
    setup_seconds = time.perf_counter() - setup_start
    rss_before = peak_rss_mb()
    bytes_before = stored_bytes()

    profiles = ThreadProfiles() if args.profile else None
    stamps = Stamps() if args.stages and args.runtime == "embedded" else None
    if stamps is not None:
        stamps.install(InProcessSocket)
    if profiles is not None:
        assert counter is not None
        counter.reset()
        profiles.start()
    run_start = time.perf_counter()
    cpu_start = time.process_time()
    try:
        if args.path == "service":
            samples = bench_service(user, project, args)
        else:
            samples = asyncio.run(bench_websocket(project, token, args))
    finally:
        run_seconds = time.perf_counter() - run_start
        cpu_seconds = time.process_time() - cpu_start
        shutdown_worker(wait=True)
        if profiles is not None:
            profiles.stop(args.profile)
        if stamps is not None:
            stamps.uninstall()
    # Every turn of the session, the warm-up's too: what the database grew by per turn.
    bytes_per_turn = (stored_bytes() - bytes_before) / (args.warmup + args.turns)
    model = None
    if args.profile:
        assert counter is not None
        model = cost_model(args.profile, counter.shapes, args.warmup + args.turns)

    result = {
        "runtime": args.runtime,
        "chat": args.chat,
        "engine": expected_engine(args.chat),
        "path": args.path,
        "turns": len(samples),
        "warmup": args.warmup,
        "total_seconds": sum(samples),
        "run_seconds": run_seconds,
        # CPU time of this OS process (every thread: the lane's too) per turn, warm-up
        # included: what a neighbour's load on a shared machine changes far less than the
        # wall clock.
        "cpu_ms_per_turn": cpu_seconds * 1000 / (args.warmup + args.turns),
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
        "bytes_per_turn": bytes_per_turn,
        "cost_model": model,
        "stages": stamps.timeline(args.warmup) if stamps is not None else None,
        "database": f"{connection.vendor} {connection.settings_dict['NAME']}",
        "channel_layer": settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1],
        "worker": settings.VANCETOPE_WORKER,
        "llm": settings.VANCETOPE_LLM,
    }
    Path(args.result_file).write_text(json.dumps(result))


# === parent: one child per (runtime, path), then the table =======================================


class OtlpSink:
    """An OTLP/HTTP endpoint that answers every export 200 and counts the requests and the
    spans in them: the exporter's full cost (encoding, batching, the POST), without a
    collector, and proof that the `on` rows did trace."""

    def __init__(self) -> None:
        sink = self
        self.exports = 0
        self.spans = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                sink.exports += 1
                sink.spans += spans_in(body)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def spans_in(body: bytes) -> int:
    """How many spans one OTLP/HTTP export carries (protobuf, the exporter's default)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return sum(len(scope.spans) for spans in request.resource_spans for scope in spans.scope_spans)


def counted_turns(metrics_dir: Path) -> int:
    """The turns the row's Brain (and worker) counted in PROMETHEUS_MULTIPROC_DIR."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(metrics_dir))
    return int(
        sum(
            sample.value
            for metric in registry.collect()
            if metric.name == "vancetope_turns"
            for sample in metric.samples
            if sample.name == "vancetope_turns_total"
        )
    )


def observability_env(mode: str, sink: OtlpSink | None, scratch: Path) -> dict[str, str]:
    """The environment of a row with traces and metrics `on` or `off` ("" : as configured)."""
    if mode == "off":
        return {"VANCETOPE_METRICS": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
    if mode == "on":
        assert sink is not None
        metrics_dir = scratch / "prometheus"
        metrics_dir.mkdir()
        return {
            "VANCETOPE_METRICS": "true",
            "OTEL_EXPORTER_OTLP_ENDPOINT": sink.url,
            "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        }
    if mode.startswith("journal-"):
        return {"VANCETOPE_TURN_JOURNAL": "true" if mode == "journal-on" else "false"}
    return {}


def run_child(
    runtime: str,
    chat: str,
    path: str,
    args: argparse.Namespace,
    mode: str = "",
    sink: OtlpSink | None = None,
) -> dict[str, Any]:
    worker = "celery" if runtime == "postgres+redis" else "inprocess"
    deployment = Deployment(runtime, f"turns_{chat}_{path}", worker=worker)
    with deployment, tempfile.TemporaryDirectory() as scratch:
        deployment.env.update(observability_env(mode, sink, Path(scratch)))
        spans_before = sink.spans if sink is not None else 0
        celery = deployment.celery_worker() if worker == "celery" else None
        worker_cpu = proc_cpu_seconds(celery.process.pid) if celery is not None else 0.0
        try:
            result = _run_child(runtime, chat, path, args, deployment, Path(scratch))
        finally:
            if celery is not None:
                worker_memory = proc_memory_mb(celery.process.pid)
                worker_cpu = proc_cpu_seconds(celery.process.pid) - worker_cpu
                celery.stop()
                if "error" not in result:
                    result["worker_rss_peak_mb"] = worker_memory.get("peak", 0.0)
                    # The lanes' CPU: they run in the worker on this runtime.
                    result["cpu_ms_per_turn"] += worker_cpu * 1000 / (args.warmup + args.turns)
        result["observability"] = mode or "default"
        if mode == "on" and sink is not None:
            # The child flushes its last spans when it exits, so they are all in by now.
            result["spans_exported"] = sink.spans - spans_before
            result["turns_counted"] = counted_turns(Path(scratch) / "prometheus")
        return result


def _run_child(
    runtime: str,
    chat: str,
    path: str,
    args: argparse.Namespace,
    deployment: Deployment,
    scratch: Path,
    *,
    root: Path = ROOT,
    wrapper: Sequence[str] = (),
) -> dict[str, Any]:
    """Run one row's child: this checkout's, or the one at `root` (its own code and bench),
    under `wrapper` if given (turn_instructions.py runs it under valgrind)."""
    result_file = scratch / "result.json"
    command = [
        *wrapper,
        sys.executable,
        str(root / "bench" / "turn_overhead.py"),
        "--child",
        "--runtime",
        runtime,
        "--path",
        path,
        "--chat",
        chat,
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
    if args.stages:
        command.append("--stages")
    if args.profile is not None:
        kept = args.profile != "-"
        pstats_path = f"{args.profile}.{runtime}.{chat}.{path}.pstats" if kept else None
        command += ["--profile", pstats_path or str(scratch / "profile.pstats")]
    print(f"  running {runtime}/{chat}/{path} …", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(
            command,
            env={**deployment.env, "PYTHONPATH": str(root)},
            cwd=root,
            capture_output=True,
            text=True,
            timeout=args.child_timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"runtime": runtime, "chat": chat, "path": path, "error": f">{args.child_timeout}s"}
    if done.returncode != 0 or not result_file.exists():
        tail = (done.stderr or done.stdout or "(no output)").strip().splitlines()[-12:]
        print("\n".join(f"    {line}" for line in tail), file=sys.stderr)
        reason = tail[-1].strip()[:100] if tail else ""
        failed = f"exit {done.returncode}: {reason}"
        return {"runtime": runtime, "chat": chat, "path": path, "error": failed}
    result: dict[str, Any] = json.loads(result_file.read_text())
    return result


def parent_main(args: argparse.Namespace) -> int:
    runtimes, skipped = available_runtimes(*([args.runtime] if args.runtime else RUNTIMES))
    if args.runtime and skipped:
        print(skipped[0], file=sys.stderr)
        return 2
    paths = [args.path] if args.path else list(PATHS)
    chats = [args.chat] if args.chat else list(CHATS)
    # Off and on alternate, `--rounds` times each, so that a neighbour's load on a shared
    # machine falls on both alike.
    modes = {"both": ["off", "on"] * args.rounds, "on": ["on"], "off": ["off"]}.get(
        args.observability, [""]
    )
    if args.journal == "both":
        modes = ["journal-off", "journal-on"] * args.rounds
    sink = OtlpSink() if "on" in modes else None
    # The peer runs before and after the Brain's rows (the machine's load moves both).
    peers = peers_dir(args.peers)
    peer_reason = None if args.no_peer else missing_reason(peers, LANGGRAPH_TURNS)
    peer_runs: list[LangGraphTurns] = []
    if args.no_peer:
        peer_reason = "--no-peer"
    elif peer_reason is None:
        assert peers is not None
        print(f"  running LangGraph in-process ({args.turns} turns) …", file=sys.stderr)
        peer_runs.append(langgraph_turns(peers, args.turns))
    results = [
        run_child(runtime, chat, path, args, mode, sink)
        for runtime in runtimes
        for chat in chats
        for path in paths
        for mode in modes
    ]
    if peer_runs:
        assert peers is not None
        print(f"  running LangGraph in-process ({args.turns} turns) …", file=sys.stderr)
        peer_runs.append(langgraph_turns(peers, args.turns))
    peer = print_peer(peer_runs, peer_reason)
    print_table(results, args, peer)
    met = print_budgets(results, peer)
    for row in results:
        print_cost_model(row)
        print_timeline(row)
    measured, within = True, True
    if args.journal == "both":
        print_journal_cost(results, args)
    if args.observability == "both":
        measured, within = print_overhead(results, args)
        assert sink is not None
        print(f"(the OTLP sink took {sink.exports} exports, {sink.spans} spans)")
    for note in skipped:
        print(f"({note})")
    failed = any("error" in row for row in results) or not measured
    return 1 if failed or (args.strict and not (met and within)) else 0


def print_journal_cost(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The p50 of a turn with the journal off and on, per (runtime, chat, path): the median
    over the alternating rounds of each, in this run."""
    print()
    print(f"the turn's journal, p50 of a turn off vs on (median of {args.rounds} rounds each):")
    rows: dict[tuple[str, str, str, str], list[float]] = {}
    for row in results:
        if "error" not in row:
            key = (row["runtime"], row["chat"], row["path"], row["observability"])
            rows.setdefault(key, []).append(row["p50_ms"])
    for (runtime, chat, path, mode), p50s in rows.items():
        on = rows.get((runtime, chat, path, "journal-on"))
        if mode != "journal-off" or not on:
            continue
        off_ms, on_ms = statistics.median(p50s), statistics.median(on)
        print(
            f"  {runtime:<14} {chat:<8} {path:<10} off {off_ms:7.2f} ms   on {on_ms:7.2f} ms   "
            f"{(on_ms - off_ms) / off_ms * 100:+6.1f} %   ({on_ms - off_ms:+.3f} ms a turn)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500, help="timed turns per row")
    parser.add_argument("--warmup", type=int, default=20, help="untimed turns before them")
    parser.add_argument("--runtime", choices=RUNTIMES, help="only this runtime")
    parser.add_argument("--path", choices=PATHS, help="only this path")
    parser.add_argument("--chat", choices=CHATS, help="only this chat (default: both)")
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
        nargs="?",
        const="-",
        metavar="PREFIX",
        help="print each row's cost model from cProfile (all threads) and a count of its "
        "statements; with PREFIX, also keep the stats in PREFIX.<runtime>.<chat>.<path>.pstats",
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="print where each embedded row's turn spends its wall time: the median ms from "
        "the chat frame's send at which each stage begins and ends (bench/turn_stages.py)",
    )
    parser.add_argument(
        "--observability",
        choices=("both", "on", "off"),
        help="traces and metrics off, on, or both (each row twice, p50s side by side)",
    )
    parser.add_argument(
        "--journal",
        choices=("both",),
        help="each row with the turn's journal off and on, alternating, p50s side by side",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="with --observability both or --journal both: off/on pairs per row",
    )
    parser.add_argument(
        "--peers",
        default=os.environ.get(PEERS_VARIABLE, ""),
        help=f"the peers' folder (langgraph/bench_inproc.py; default ${PEERS_VARIABLE})",
    )
    parser.add_argument("--no-peer", action="store_true", help="leave LangGraph out")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a budget (the default chat's, or the overhead's) is not met",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.turns < 1 or args.warmup < 0 or args.poll_ms <= 0 or args.turn_timeout <= 0:
        parser.error("--turns must be >= 1, --warmup >= 0, --poll-ms and --turn-timeout > 0")
    if args.child:
        if not (args.runtime and args.path and args.chat and args.result_file):
            parser.error("--child needs --runtime, --chat, --path and --result-file")
        child_main(args)
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
