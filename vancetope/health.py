"""GET /healthz: liveness of the database, the channel layer and the broker (or the
in-process worker). Project wiring: it asks the lane's worker whether it is stopping."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return connection.vendor


def _check_channel_layer() -> str:
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("no channel layer configured")

    async def round_trip() -> None:
        channel = await layer.new_channel("healthz.")
        await layer.send(channel, {"type": "healthz.ping"})
        await asyncio.wait_for(layer.receive(channel), timeout=2)

    async_to_sync(round_trip)()
    return type(layer).__name__


def _check_broker() -> str:
    if settings.VANCETOPE_WORKER == "inprocess":
        from processes.lane.worker import is_stopping

        if is_stopping():
            raise RuntimeError("in-process worker is shutting down")
        return "in-process"
    import redis

    redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2).ping()
    return "redis"


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness of the database, the channel layer and the task broker."""
    checks: dict[str, dict[str, Any]] = {}
    for name, check in (
        ("database", _check_database),
        ("channelLayer", _check_channel_layer),
        ("broker", _check_broker),
    ):
        started = time.perf_counter()
        try:
            detail = check()
            checks[name] = {"ok": True, "detail": detail}
        except Exception as exc:
            checks[name] = {"ok": False, "detail": f"{type(exc).__name__}: {exc}"}
        checks[name]["ms"] = round((time.perf_counter() - started) * 1000, 2)
    ok = all(check["ok"] for check in checks.values())
    return JsonResponse({"ok": ok, "checks": checks}, status=200 if ok else 503)
