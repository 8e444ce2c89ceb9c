"""Helpers shared by the bench scripts.

- figures: `percentile` (nearest rank), `peak_rss_mb` of this process, `proc_memory_mb` of
  another process (VmRSS and VmHWM, the RSS high-water mark, from /proc/<pid>/status),
  `proc_cpu_seconds` (its CPU time, from /proc/<pid>/stat), `print_table`;
- `raise_open_files_limit`: for this process and, by inheritance, the Brain it starts;
- `Deployment`: a throwaway deployment for one Brain — a temporary VANCETOPE_VAR_DIR on the
  embedded default, or a throwaway PostgreSQL database `vt_bench_<pid>_<name>` (and a Redis
  channel prefix and task queue of the same name), bootstrapped, with its API token; all of it
  is deleted afterwards and nothing else is touched;
- `BenchBrain`: tests/e2e/brain.py's `Brain` (a real `manage.py brain` OS process) that also
  times how long it takes to answer /healthz, reads its memory and CPU time, and sums up the
  warnings in its log;
- `PySpy`: records a process with py-spy while a block runs;
- docs/protocol.md client helpers over real websockets (`open_socket`, `create_chat_session`,
  `is_reply_event`) and `EventOrder`, which checks that a socket gets its session's events once
  and in order.

The bench scripts run as `python bench/<script>.py`, so this module is imported as `common`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.e2e.brain import Brain, CeleryWorker, bootstrap, brain_env, free_port  # noqa: E402

# The bench's chats: the scripted provider (no script: "echo: <last user message>", zero
# latency) and the ford chat recipe.
CHAT_RECIPE = "ford"
FINGERPRINT = {"machineId": "bench-machine", "workingDir": "/srv/bench"}
# Variables that would change what the Brain under test runs (another LLM, a script).
LLM_VARIABLES = (
    "VANCETOPE_LLM",
    "VANCETOPE_LLM_MODEL",
    "VANCETOPE_LLM_SCRIPT",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)
# The per-user rate limits a bench sets (Deployment), and the limit they get: high enough to
# refuse nothing a bench sends, so the count is kept on every message and its cost is in the
# figures, in the default's window (vancetope/settings.py: 120/10 seconds).
PER_USER_LIMITS = ("VANCETOPE_RATE_CHAT", "VANCETOPE_RATE_PROCESS_CREATE")
COUNTING_LIMIT = "100000/10 seconds"


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """--help shows the module docstring as written and the options' defaults."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False):
            return action.help
        return super()._get_help_string(action)


class BenchFailure(RuntimeError):
    """A correctness check failed: the bench prints it and exits 1."""


# === figures ======================================================================================


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def peak_rss_mb() -> float:
    """Peak RSS of this process."""
    # ru_maxrss is in KiB on Linux, in bytes on macOS.
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def proc_memory_mb(pid: int) -> dict[str, float]:
    """{"rss": VmRSS, "peak": VmHWM} of a running process, in MiB (Linux /proc)."""
    fields = {"VmRSS:": "rss", "VmHWM:": "peak"}
    found: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            parts = line.split()
            if parts and parts[0] in fields:
                found[fields[parts[0]]] = int(parts[1]) / 1024  # kB
    return found


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU time a running process has used so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name (field 2) may hold spaces; the fields after it are fixed.
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def print_log_warnings(warnings: Sequence[str], keep: int = 3) -> None:
    """One line about the Brain's log warnings (see BenchBrain.log_warnings)."""
    if not warnings:
        print("Brain log: no warnings or errors")
        return
    print("Brain log warnings/errors (count × message):")
    for line in warnings[:keep]:
        print(f"  {line}")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A plain table: the first column left-aligned, the others right-aligned."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]

    def line(row: Sequence[str]) -> str:
        return " ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )

    print(line(headers))
    print("-" * len(line(headers)))
    for row in cells:
        print(line(row))


def raise_open_files_limit(wanted: int) -> int:
    """Raise this process's soft RLIMIT_NOFILE to `wanted` (at most the hard limit) and return
    the new soft limit. Children started afterwards (the Brain) inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def proc_open_files_limit(pid: int) -> int | None:
    """The soft "Max open files" of a running process."""
    with open(f"/proc/{pid}/limits") as limits:
        for line in limits:
            if line.startswith("Max open files"):
                value = line.split()[3]
                return int(value) if value.isdigit() else None
    return None


# === a throwaway deployment =======================================================================

RUNTIMES = ("embedded", "postgres", "postgres+redis")


def runtime_description(runtime: str, worker: str = "inprocess") -> str:
    return {
        "embedded": "SQLite, in-memory channel layer, in-process worker",
        "postgres": "PostgreSQL, in-memory channel layer, in-process worker",
        "postgres+redis": f"PostgreSQL, Redis channel layer, {worker} worker",
    }[runtime]


def with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path="/" + name).geturl()


class Deployment:
    """Where one Brain keeps its state, created for one bench run and deleted afterwards.

    runtime "embedded": SQLite in a temporary VANCETOPE_VAR_DIR, in-memory channel layer,
    in-process worker (the default with no variables set). "postgres": a throwaway database
    `vt_bench_<pid>_<name>` on the server of $DATABASE_URL, otherwise embedded. "postgres+redis":
    also $REDIS_URL with the channel prefix and task queue `vt_bench_<pid>_<name>`; lanes run on
    the in-process worker (VANCETOPE_WORKER=inprocess) unless `worker="celery"`, where the caller
    starts a Celery worker (`celery_worker()`).

    Entering bootstraps it (`manage.py bootstrap`: migrate, user `local`, project
    proj_default, an API token); `token` is that token.
    """

    def __init__(self, runtime: str, name: str, *, worker: str = "inprocess") -> None:
        if runtime not in RUNTIMES:
            raise ValueError(f"unknown runtime {runtime!r}")
        self.runtime = runtime
        self.worker = worker if runtime == "postgres+redis" else "inprocess"
        self.tag = f"vt_bench_{os.getpid()}_{name}".replace("-", "_").replace("+", "_")
        self.var_dir = Path(tempfile.mkdtemp(prefix=f"{self.tag}_"))
        self.database_url: str | None = None
        self.redis_url: str | None = None
        self.token = ""
        self._database_created = False
        extra = {"VANCETOPE_LLM": "scripted", "DEBUG": "0", "LOG_LEVEL": "WARNING"}
        # A bench is one user sending far more than a person may (vancetope/ratelimit.py):
        # the per-user limits count but refuse nothing, unless the environment names them.
        for limit in PER_USER_LIMITS:
            extra[limit] = os.environ.get(limit, COUNTING_LIMIT)
        if runtime != "embedded":
            self.database_url = with_database(_required("DATABASE_URL"), self.tag)
            extra["DATABASE_URL"] = self.database_url
        if runtime == "postgres+redis":
            self.redis_url = _required("REDIS_URL")
            extra.update(
                REDIS_URL=self.redis_url,
                VANCETOPE_CHANNEL_PREFIX=self.tag,
                VANCETOPE_TASK_QUEUE=self.tag,
                VANCETOPE_WORKER=self.worker,
            )
        env = brain_env(self.var_dir)
        for name_ in LLM_VARIABLES:
            env.pop(name_, None)
        env.update(extra)
        self.env = env

    @property
    def description(self) -> str:
        return runtime_description(self.runtime, self.worker)

    def __enter__(self) -> Deployment:
        try:
            if self.database_url is not None:
                import psycopg

                with psycopg.connect(_required("DATABASE_URL"), autocommit=True) as admin:
                    admin.execute(f'CREATE DATABASE "{self.tag}"')
                self._database_created = True
            self.token = bootstrap(self.env)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        shutil.rmtree(self.var_dir, ignore_errors=True)
        if self._database_created:
            import psycopg

            with psycopg.connect(_required("DATABASE_URL"), autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{self.tag}" WITH (FORCE)')
            self._database_created = False
        if self.redis_url is not None:
            import redis

            client = redis.Redis.from_url(self.redis_url)
            try:
                # Channel-layer keys start with the prefix; kombu names its queue and binding
                # keys after the queue.
                keys = list(client.scan_iter(match=f"*{self.tag}*", count=1000))
                if keys:
                    client.delete(*keys)
            finally:
                client.close()

    def celery_worker(self) -> CeleryWorker:
        """A real Celery worker on this deployment's queue (runtime postgres+redis)."""
        return CeleryWorker(self.env, self.tag)

    def connect_database(self) -> Any:
        """A DB-API connection to this deployment's database (for polling and checks)."""
        if self.database_url is not None:
            import psycopg

            return psycopg.connect(self.database_url, autocommit=True)
        import sqlite3

        return sqlite3.connect(self.var_dir / "brain.sqlite3", timeout=30, isolation_level=None)


def _required(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise SystemExit(f"this runtime needs {name}")
    return value


def available_runtimes(*wanted: str) -> tuple[list[str], list[str]]:
    """Which of `wanted` can run here, and a note for each one skipped."""
    have_db = bool(os.environ.get("DATABASE_URL"))
    have_redis = bool(os.environ.get("REDIS_URL"))
    runnable, skipped = [], []
    for runtime in wanted:
        if runtime == "postgres" and not have_db:
            skipped.append("postgres skipped: set DATABASE_URL to include it")
        elif runtime == "postgres+redis" and not (have_db and have_redis):
            skipped.append("postgres+redis skipped: set DATABASE_URL and REDIS_URL to include it")
        else:
            runnable.append(runtime)
    return runnable, skipped


# === the Brain as an OS process ===================================================================


class BenchBrain(Brain):
    """`manage.py brain` in its own OS process (tests/e2e/brain.py), timed from the start of
    the process until /healthz first answers 200, polled every `poll_seconds`. `on_start` is
    called with the Brain as soon as its process exists, before it is healthy."""

    def __init__(
        self,
        deployment: Deployment,
        *,
        health_timeout: float = 120.0,
        poll_seconds: float = 0.01,
        on_start: Callable[[BenchBrain], None] | None = None,
    ) -> None:
        self._on_start = on_start
        self.health_timeout = health_timeout
        self.poll_seconds = poll_seconds
        self.healthy_after: float | None = None
        # The Brain's memory when /healthz first answered.
        self.memory_at_start: dict[str, float] = {}
        self.started = time.perf_counter()
        try:
            # Starts the process and waits for /healthz (our wait_healthy).
            super().__init__(deployment.env, free_port())
        except BaseException:
            if hasattr(self, "process"):
                self.stop()
            raise

    def wait_healthy(self, timeout: float | None = None) -> dict[str, Any]:
        if self._on_start is not None:
            on_start, self._on_start = self._on_start, None
            on_start(self)
        deadline = time.perf_counter() + (timeout or self.health_timeout)
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise BenchFailure(f"Brain exited early:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    health = dict(json.load(response))
                if self.healthy_after is None:
                    self.healthy_after = time.perf_counter() - self.started
                    self.memory_at_start = self.memory_mb()
                return health
            except OSError:
                time.sleep(self.poll_seconds)
        raise BenchFailure(f"Brain not healthy within {timeout}s:\n{self.log_tail()}")

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def memory_mb(self) -> dict[str, float]:
        """{"rss": current RSS, "peak": RSS high-water mark} of the Brain, in MiB."""
        return proc_memory_mb(self.pid)

    def cpu_seconds(self) -> float:
        """CPU time (user + system, all threads) the Brain has used so far."""
        return proc_cpu_seconds(self.pid)

    def open_files_limit(self) -> int | None:
        return proc_open_files_limit(self.pid)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def log_warnings(self) -> list[str]:
        """The WARNING/ERROR lines of the Brain's log, alike ones counted together (numbers
        and channel names left out): ["589 × WARNING vancetope.infra.channel_layer: …", …]."""
        counts: Counter[str] = Counter()
        for line in self.log().splitlines():
            found = re.search(r" (WARNING|ERROR|CRITICAL) \S+: .*", line)
            if found:
                text = re.sub(r"![A-Za-z0-9]+|\d+", "…", found.group(0).strip())
                counts[text[:160]] += 1
        return [f"{count} × {text}" for text, count in counts.most_common()]

    def banner_line(self, starts_with: str) -> str:
        for line in self.log().splitlines():
            if line.strip().startswith(starts_with):
                return line.strip()
        return ""


class PySpy:
    """`py-spy record` of one process (all threads, idle ones too) while the block runs.

    The output is py-spy's `raw` format (collapsed stacks, one line per stack with its sample
    count) when `path` ends in .txt, a speedscope profile when it ends in .json, otherwise an
    SVG flame graph."""

    def __init__(self, pid: int, path: str | None, rate: int = 100) -> None:
        self.pid = pid
        self.path = path
        # VT_BENCH_PY_SPY_RATE: samples per second (default 100); more samples, more overhead.
        self.rate = int(os.environ.get("VT_BENCH_PY_SPY_RATE", rate))
        # VT_BENCH_PY_SPY_FLAGS replaces "--threads --idle", e.g. "--threads --gil" to see
        # only what holds the GIL.
        self.flags = os.environ.get("VT_BENCH_PY_SPY_FLAGS", "--threads --idle").split()
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PySpy:
        if self.path:
            py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
            fmt = {".txt": "raw", ".json": "speedscope"}.get(Path(self.path).suffix, "flamegraph")
            self._process = subprocess.Popen(
                [py_spy, "record", "--pid", str(self.pid), "--rate", str(self.rate),
                 *self.flags, "--format", fmt, "--output", self.path],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )  # fmt: skip
        return self

    def __exit__(self, *_: object) -> None:
        if self._process is None:
            return
        self._process.send_signal(signal.SIGINT)
        try:
            stderr = self._process.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            self._process.kill()
            stderr = self._process.communicate()[1]
        if self._process.returncode != 0:
            message = stderr.decode(errors="replace").strip()[-300:]
            print(f"py-spy failed ({self._process.returncode}): {message}", file=sys.stderr)
        else:
            print(f"py-spy profile of pid {self.pid} written to {self.path}", file=sys.stderr)


# === the protocol over real websockets ===========================================================


def request_frame(kind: str, request_id: str, data: dict[str, Any]) -> str:
    return json.dumps({"type": kind, "id": request_id, "data": data})


async def open_socket(brain: Brain, token: str, **options: Any) -> Any:
    """A `websockets` asyncio client connection to the Brain's /ws/brain/, authenticated with
    the bearer token (as the vance CLI connects)."""
    from websockets.asyncio.client import connect

    return await connect(
        f"ws://127.0.0.1:{brain.port}/ws/brain/",
        additional_headers={"Authorization": f"Bearer {token}"},
        **{"open_timeout": 30, **options},
    )


async def create_chat_session(
    ws: Any,
    *,
    request_id: str = "create",
    wait_seconds: float = 60.0,
    recipe: str | None = CHAT_RECIPE,
) -> tuple[str, str]:
    """session-create (cli client, proj_default, recipe ford; `recipe` None: the default chat
    recipe) on an open socket; returns (session id, chat process id). Events that arrive
    before the reply are skipped."""
    import asyncio

    data = {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT}
    if recipe is not None:
        data["recipe"] = recipe
    await ws.send(request_frame("session-create", request_id, data))
    async with asyncio.timeout(wait_seconds):
        while True:
            frame = json.loads(await ws.recv())
            if frame.get("replyTo") != request_id:
                continue
            if frame.get("type") != "session-created":
                raise BenchFailure(f"session-create: {frame}")
            return str(frame["data"]["session"]["id"]), str(frame["data"]["chatProcessId"])


class EventOrder:
    """docs/protocol.md: a socket bound to a session gets the session's events in seq order, exactly
    once, without gaps (seq 1, 2, 3, … from session-create on). `see` every frame; `problems`
    lists what broke that (at most `keep` of them)."""

    def __init__(self, keep: int = 5) -> None:
        self.last = 0
        self.count = 0
        self.problems: list[str] = []
        self._keep = keep

    def see(self, frame: dict[str, Any]) -> None:
        if frame.get("type") != "event":
            return
        seq = int(frame["seq"])
        self.count += 1
        if seq != self.last + 1 and len(self.problems) < self._keep:
            what = "duplicate or out of order" if seq <= self.last else "gap"
            self.problems.append(f"event seq {seq} after {self.last} ({what})")
        self.last = max(self.last, seq)


def is_reply_event(frame: dict[str, Any], process_id: str) -> bool:
    """The `chat-message` event with role assistant of `process_id`."""
    data = frame.get("data") or {}
    return (
        frame.get("type") == "event"
        and frame.get("event") == "chat-message"
        and data.get("processId") == process_id
        and data.get("role") == "assistant"
    )


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

    def reset(self) -> None:
        """Count from zero (after the setup's statements)."""
        with self._lock:
            self.count = 0
            self.shapes.clear()
