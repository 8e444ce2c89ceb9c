"""Run a real Brain (and, for the distributed runtime, a real Celery worker) as OS processes."""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from websockets.sync.client import ClientConnection, connect

ROOT = Path(__file__).resolve().parents[2]
# Variables of the test run that must not leak into a Brain started for a test.
RUNTIME_VARIABLES = ("DATABASE_URL", "REDIS_URL", "VANCETOPE_WORKER", "DJANGO_SETTINGS_MODULE")


def services_available(env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether `env` names the PostgreSQL and Redis a distributed Brain needs (.ci/run's
    PostgreSQL run sets both)."""
    return env.get("DATABASE_URL", "").startswith("postgres") and bool(env.get("REDIS_URL"))


# A test that runs Brains as OS processes on the run's PostgreSQL and Redis.
needs_services = pytest.mark.skipif(
    not services_available(os.environ),
    reason="needs PostgreSQL and Redis: set DATABASE_URL and REDIS_URL (.ci/run does)",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def brain_env(var_dir: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in RUNTIME_VARIABLES}
    env.update(VANCETOPE_VAR_DIR=str(var_dir), PYTHONUNBUFFERED="1", **extra)
    return env


@contextmanager
def scratch_database(name: str) -> Iterator[str]:
    """A throwaway PostgreSQL database on the DATABASE_URL server (its URL), dropped
    afterwards."""
    url = os.environ["DATABASE_URL"]
    database = f"vt_{name}_{uuid.uuid4().hex[:10]}"
    admin_url = url.rsplit("/", 1)[0] + "/postgres"
    template = _postgresql_template(url)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}" TEMPLATE "{template}"')
    try:
        yield url.rsplit("/", 1)[0] + f"/{database}"
    finally:
        _drop_database(admin_url, database)


@contextmanager
def run_services(name: str) -> Iterator[dict[str, str]]:
    """The variables of a Brain on the run's services: when the run has PostgreSQL and Redis,
    a scratch database of its own (dropped afterwards) and a task queue and channel prefix of
    its own; else none (the Brain runs embedded on its own SQLite file)."""
    url, redis = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not (url.startswith("postgres") and redis):
        yield {}
        return
    with scratch_database(name) as database_url:
        queue = f"vt-{name}-{uuid.uuid4().hex[:8]}"
        yield {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis,
            "VANCETOPE_TASK_QUEUE": queue,
            "VANCETOPE_CHANNEL_PREFIX": queue,
        }


def distributed_env(
    var_dir: Path, database_url: str, name: str, **extra: str
) -> tuple[dict[str, str], str]:
    """The environment of a distributed Brain and its Celery worker on `database_url` and the
    run's Redis, with a task queue and channel prefix of their own; (env, that queue)."""
    queue = f"vt-{name}-{uuid.uuid4().hex[:8]}"
    env = brain_env(
        var_dir,
        DATABASE_URL=database_url,
        REDIS_URL=os.environ["REDIS_URL"],
        VANCETOPE_TASK_QUEUE=queue,
        VANCETOPE_CHANNEL_PREFIX=queue,
        **extra,
    )
    return env, queue


# Migrating a new database costs a Brain's bootstrap about 9 s of CPU, and a run bootstraps some
# thirty Brains: each test run migrates one database per kind once and copies it for every
# Brain (a SQLite file by SQLite's backup, a PostgreSQL database as CREATE DATABASE's
# TEMPLATE). `manage.py bootstrap` still runs `migrate`, which finds nothing to do.
_templates: dict[str, str] = {}


def _migrate(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )


def _sqlite_template() -> str:
    """The path of this run's migrated SQLite database (made at the first call)."""
    if "sqlite" not in _templates:
        var_dir = Path(tempfile.mkdtemp(prefix="vt-template-"))
        _migrate(brain_env(var_dir))
        _templates["sqlite"] = str(var_dir / "brain.sqlite3")
    return _templates["sqlite"]


def _postgresql_template(url: str) -> str:
    """The name of this run's migrated PostgreSQL database on `url`'s server (made at the first
    call, dropped when the run ends)."""
    if "postgresql" not in _templates:
        name = f"vt_template_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        admin_url = url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        atexit.register(_drop_database, admin_url, name)
        env = brain_env(Path(tempfile.mkdtemp(prefix="vt-template-")))
        _migrate({**env, "DATABASE_URL": url.rsplit("/", 1)[0] + f"/{name}"})
        _templates["postgresql"] = name
    return _templates["postgresql"]


def _drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _copy_migrated_sqlite(env: dict[str, str]) -> None:
    """A Brain on the embedded default starts from a copy of the migrated template, unless its
    database exists already (a second bootstrap, a restart)."""
    if env.get("DATABASE_URL"):
        return
    target = Path(env["VANCETOPE_VAR_DIR"]) / "brain.sqlite3"
    if target.exists():
        return
    source = sqlite3.connect(_sqlite_template())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(mode=0o600)  # as the Brain makes its file: its owner's only
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()


def bootstrap(env: dict[str, str]) -> str:
    _copy_migrated_sqlite(env)
    token_file = Path(env["VANCETOPE_VAR_DIR"]) / "token"
    subprocess.run(
        [sys.executable, "manage.py", "bootstrap", "--token-file", str(token_file)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return token_file.read_text().strip()


def manage_shell(env: dict[str, str], code: str, timeout: float = 120) -> str:
    """Run `code` in `manage.py shell` as a separate OS process on the Brain's database (as
    an engine or an operator there would); what it printed."""
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def post_inbox_item(
    env: dict[str, str],
    process_id: str,
    kind: str,
    title: str,
    body: str = "",
    options: list[str] | None = None,
) -> str:
    """An inbox item posted by the process, as its engine would, from a separate OS process
    on the Brain's database (the Brain's sockets see its event with the next one); its id."""
    code = (
        "from inbox.services import post_item; from processes.models import ThinkProcess; "
        f"p = ThinkProcess.objects.select_related('session').get(pk={process_id[3:]}); "
        f"print(post_item(p, {kind!r}, {title!r}, {body!r}, {options!r}).public_id)"
    )
    return last_line(manage_shell(env, code))


class Service:
    """An OS process with its output in a log file, stopped with SIGTERM."""

    def __init__(self, name: str, args: list[str], env: dict[str, str]) -> None:
        self.env = env
        self.log_path = Path(env["VANCETOPE_VAR_DIR"]) / f"{name}.log"
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self._log, stderr=self._log)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 40) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
        return self.process.returncode


class CeleryWorker(Service):
    """A real `celery worker` OS process serving one queue."""

    def __init__(
        self, env: dict[str, str], queue: str, name: str = "worker", *, threads: int = 2
    ) -> None:
        celery = str(Path(sys.executable).with_name("celery"))
        args = [celery, "-A", "vancetope", "worker", "--pool", "threads",
                "--concurrency", str(threads),
                "--queues", queue, "--without-heartbeat", "--without-gossip", "--without-mingle",
                "--loglevel", "INFO"]  # fmt: skip
        super().__init__(name, args, env)

    def kill(self) -> None:
        """SIGKILL: the worker dies mid-whatever, as a crashed host would."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self._log.close()


class Brain(Service):
    def __init__(self, env: dict[str, str], port: int) -> None:
        self.port = port
        args = [sys.executable, "manage.py", "brain", "--port", str(port)]
        super().__init__("brain", args, env)
        self.wait_healthy()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_healthy(self, timeout: float = 90) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"Brain exited early:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    return dict(json.load(response))
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"Brain not healthy within {timeout}s:\n{self.log()}")

    def get(self, path: str, token: str) -> Any:
        request = urllib.request.Request(
            f"{self.url}{path}", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def post(self, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        """POST `body` as JSON; the status and the decoded answer (an error's too)."""
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=json.dumps(body if body is not None else {}).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    def socket(self, token: str) -> BrainSocket:
        ws = connect(
            f"ws://127.0.0.1:{self.port}/ws/brain/",
            additional_headers={"Authorization": f"Bearer {token}"},
            open_timeout=10,
        )
        # Entering marks the connection as managed (websockets ≥ 17.1); BrainSocket.close
        # closes it.
        return BrainSocket(ws.__enter__())


class BrainSocket:
    """A synchronous protocol (docs/protocol.md) client over a real WebSocket."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.counter = 0
        self.events: list[dict[str, Any]] = []

    def request(self, kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        self.counter += 1
        request_id = f"r{self.counter}"
        self.ws.send(json.dumps({"type": kind, "id": request_id, "data": data or {}}))
        while True:
            frame = json.loads(self.ws.recv(timeout=20))
            if frame.get("type") == "event":
                self.events.append(frame)
            elif frame.get("replyTo") == request_id:
                return dict(frame)

    def event(self, name: str, **match: Any) -> dict[str, Any]:
        for frame in self.events:
            if frame["event"] == name and match.items() <= frame["data"].items():
                return frame
        while True:
            frame = json.loads(self.ws.recv(timeout=20))
            if frame.get("type") == "event":
                self.events.append(frame)
                if frame["event"] == name and match.items() <= frame["data"].items():
                    return dict(frame)

    def close(self) -> None:
        self.ws.close()


def poll(check: Any, timeout: float) -> Any:
    """`check()` once it is truthy, asked every 0.1 s; the test fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"not reached within {timeout}s")
