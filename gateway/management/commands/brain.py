"""`manage.py brain`: run the Brain — ASGI server for HTTP and WebSocket, and on the embedded
default also the worker and the scheduler, all in this one process."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from typing import Any

from channels.layers import get_channel_layer
from daphne.endpoints import build_endpoint_description_strings
from daphne.server import Server, twisted_loop
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from processes.actions.sessions import disconnect_dead_clients, disconnect_session
from processes.recovery import recover_processes
from recipes_app.services import sync_bundled_recipes
from recipes_app.strategies import sync_bundled_strategies
from sessions_app import socket_bindings
from sessions_app.events import stop_pusher
from sessions_app.models import SuspendCause
from sessions_app.socket_bindings import bound_sessions
from vancetope.infra.channel_layer import ThreadSafeInMemoryChannelLayer
from vancetope.infra.http_body import keep_bodies_whole
from vancetope.infra.websocket_close import close_with_a_code
from vancetope.llm.factory import describe_provider, get_provider
from vancetope.llm.local_model import LocalModelProblem
from vancetope.llm.script_rules import bundled_script_name
from vancetope.llm.scripted import ScriptedProvider
from vancetope.llm.warmup import warm_up_provider
from vancetope.tenancy.revocation import watch_revocations

log = logging.getLogger("vancetope.brain")


def server_frame_limit() -> int:
    """The largest WebSocket message the server reads: 16 times VANCETOPE_MAX_FRAME_BYTES (at
    least 16 MiB). Frames up to it that are over the setting get a 413 on an open socket; only
    a larger one makes the server close the connection (1009), without reading it all."""
    return max(16 * settings.VANCETOPE_MAX_FRAME_BYTES, 16 * 1024 * 1024)


def listen_problem(host: str, port: int) -> str:
    """Why the server could not listen on host:port ("" when it can). Checked before anything
    touches the database: a second Brain started on a busy port would otherwise migrate and
    run recovery on the live database of the one already serving it."""
    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind) as probe:
            # As Twisted's listener does, so a port left in TIME_WAIT counts as free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
            probe.listen()
    except OSError as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return ""


def demo_hint() -> list[str]:
    """The banner's word on the demo script: how to start it on the offline default, what to
    type once it runs."""
    provider = get_provider()
    if not isinstance(provider, ScriptedProvider):
        return []
    if provider.script_path is None:
        return [
            "  demo: VANCETOPE_LLM_SCRIPT=demo shows every engine without a model (docs/demo.md)"
        ]
    if bundled_script_name(provider.script_path) == "demo":
        return [
            "  demo: in a chat type `deep think`, `council` or `strategy`; `/space start` in "
            "vance chat (docs/demo.md)"
        ]
    return []


def _embedded_scheduler() -> type:
    from django_celery_beat.schedulers import DatabaseScheduler

    class EmbeddedScheduler(DatabaseScheduler):  # type: ignore[misc]
        """django-celery-beat's scheduler for the embedded Brain, which has no broker: an
        entry naming a task this Brain does not have is logged, not sent nowhere."""

        def send_task(self, name: str, *args: Any, **kwargs: Any) -> None:
            log.error("scheduled task %r is not a task of this Brain; not run", name)

    return EmbeddedScheduler


def _finish_leftover_tasks(timeout: float = 10.0) -> None:
    """Let the sockets' tasks that daphne's shutdown cancelled run to their end, then close
    the server's event loop. The reactor stops before a cancelled consumer has unwound, and a
    coroutine left suspended on the loop crashed the interpreter (SIGSEGV) when the garbage
    collector finalised it at exit. As asyncio.run ends its own loop."""
    leftover = [task for task in asyncio.all_tasks(twisted_loop) if not task.done()]
    for task in leftover:
        task.cancel()
    if leftover:
        finished = asyncio.wait(leftover, timeout=timeout)
        twisted_loop.run_until_complete(finished)
    twisted_loop.run_until_complete(twisted_loop.shutdown_asyncgens())
    twisted_loop.close()


class Command(BaseCommand):
    help = "Start the Brain (HTTP + WebSocket; embedded: worker and scheduler in-process)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, **options: Any) -> None:
        host, port = options["host"], options["port"]
        problem = listen_problem(host, port)
        if problem:
            raise CommandError(problem)
        try:
            # A provider that cannot work (an unknown name, a missing key) is a one-line
            # error now, not a traceback, nor silence until the first chat fails; so is a
            # local model that crashes its first completion (in a child process, not here).
            describe_provider()
            warm_up_provider(get_provider())
        except (ImproperlyConfigured, LocalModelProblem) as exc:
            raise CommandError(str(exc)) from exc
        call_command("migrate", interactive=False, verbosity=0)
        sync_bundled_recipes()
        sync_bundled_strategies()
        embedded = settings.VANCETOPE_WORKER == "inprocess"
        if isinstance(get_channel_layer(), ThreadSafeInMemoryChannelLayer):
            # Every socket of this Brain went with its last OS process: a session one held
            # gets the disconnect policy its shutdown would have applied (none after a crash).
            disconnect_dead_clients()
        beat = self._start_scheduler() if embedded else None
        self._banner(host, port, embedded)
        # Recovery runs beside the server: /healthz answers at once, and a Brain restarted on
        # many processes serves its clients while it brings them back.
        threading.Thread(target=self._recover, name="recovery", daemon=True).start()
        watching = threading.Event()
        # A revocation no model signal announced (a bulk update, SQL; on the embedded runtime
        # any change made in another OS process) closes this Brain's sockets all the same.
        threading.Thread(
            target=watch_revocations, args=(watching,), name="revocations", daemon=True
        ).start()

        from vancetope.asgi import application

        server = Server(
            application=application,
            endpoints=build_endpoint_description_strings(host=host, port=port),
            signal_handlers=True,
            action_logger=None,
            http_timeout=None,
            websocket_timeout=24 * 3600,
            websocket_handshake_timeout=10,
            # daphne's own limit (1 MiB) would drop the connection before the consumer sees
            # the frame; the server reads frames up to this size so the consumer can answer
            # one over VANCETOPE_MAX_FRAME_BYTES with a 413 and keep the socket.
            websocket_max_message_size=server_frame_limit(),
            websocket_max_frame_size=server_frame_limit(),
            # A closing socket applies its session's disconnect policy (suspend: every process
            # of the session). When a thousand sockets close at once those queue for the
            # worker threads; daphne must not kill them half-way.
            application_close_timeout=120,
        )
        close_with_a_code(server)
        keep_bodies_whole(server)
        # Before daphne's own trigger (it closes the sockets): their sessions are suspended
        # for SHUTDOWN, not DISCONNECT.
        from twisted.internet import reactor  # the one daphne.server installed

        triggers: Any = reactor
        triggers.addSystemEventTrigger("before", "shutdown", socket_bindings.server_stopping)
        try:
            server.run()
        finally:
            watching.set()
            self._shutdown(beat)
            _finish_leftover_tasks()
        if not server.listening_addresses:
            # Taken between the check above and the server's own listen.
            raise CommandError(f"cannot listen on {host}:{port}; see the log above")

    def _start_scheduler(self) -> Any:
        """Celery beat with the django-celery-beat schedule, as a thread of this process; the
        tasks it fires run here too (eagerly), since there is no broker to send them to."""
        from celery.beat import EmbeddedService

        from vancetope.celery import app

        app.conf.task_always_eager = True
        # The tasks modules are imported as a worker would at its start (autodiscovery):
        # beat runs a due entry eagerly only if its task is registered here, and would send
        # any other one to the in-memory broker, where nothing takes it (cron firings, sweeps).
        app.loader.import_default_modules()
        beat = EmbeddedService(app, thread=True, scheduler_cls=_embedded_scheduler())
        beat.daemon = True
        beat.start()
        return beat

    def _recover(self) -> None:
        started = time.monotonic()
        try:
            report = recover_processes()
        except Exception:
            log.exception("recovery at start failed; the lane sweeper will retry")
            return
        finally:
            connection.close()
        self.stdout.write(
            f"  recovered {report.recovered} running, closed {report.expired} stale, "
            f"woke {report.woken} with pending messages "
            f"({time.monotonic() - started:.2f} s)"
        )
        self.stdout.flush()

    def _banner(self, host: str, port: int, embedded: bool) -> None:
        runtime = "embedded (in-process worker and scheduler)" if embedded else "distributed"
        layer = str(settings.CHANNEL_LAYERS["default"]["BACKEND"]).rsplit(".", 1)[-1]
        lines = [
            f"Vancetope Brain on http://{host}:{port}/  (WebSocket ws://{host}:{port}/ws/brain/)",
            f"  runtime: {runtime}",
            f"  database: {connection.vendor} ({connection.settings_dict['NAME']})",
            f"  channel layer: {layer}",
            f"  {describe_provider()}",
            *demo_hint(),
            "  admin: /admin/  API docs: /api/docs/  health: /healthz",
        ]
        self.stdout.write("\n".join(lines))
        self.stdout.flush()

    def _shutdown(self, beat: Any) -> None:
        """Stop cleanly: running turns stop at their next boundary and release their leases;
        sessions bound here follow their on_disconnect policy."""
        from processes.lane.worker import shutdown_worker

        self.stdout.write("Brain stopping…")
        if beat is not None:
            beat.stop()
        # Suspending interrupts running turns at their next boundary, so do it before waiting
        # for the worker threads.
        for session_id in bound_sessions():
            try:
                disconnect_session(session_id, SuspendCause.SHUTDOWN)
            except Exception:
                log.exception("shutdown policy of sess_%s failed", session_id)
        stopper = threading.Thread(target=shutdown_worker, kwargs={"wait": True}, daemon=True)
        stopper.start()
        stopper.join(timeout=30)
        stop_pusher()
        self.stdout.write("Brain stopped.")
