"""GET /healthz: liveness of the database, the channel layer and the broker (or the
in-process worker), for probes; needs no token. Project wiring: it asks the lane's worker
whether it is stopping, which the REST helpers in vancetope/api.py (used by kernels' views)
must not."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user
from django.db import connection
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from vancetope.api import Body
from vancetope.tenancy.authentication import ApiTokenAuthentication


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


class Check(Body):
    ok: bool
    # What answered (the database vendor, the layer's class, the broker); if it failed,
    # `failed`, and why (which may name internal hosts and ports) only to staff.
    detail: str
    ms: float


class Checks(Body):
    database: Check
    channelLayer: Check
    broker: Check


class Health(Body):
    ok: bool
    checks: Checks


class JsonOnly(BaseContentNegotiation):
    """Every client gets JSON, whatever its Accept header says (a probe sends anything)."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, str(renderer.media_type)

    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        return next(iter(parsers), None)


def _is_staff(request: Request) -> bool:
    """A staff user by login cookie or API token; a probe's missing or wrong token is simply
    not staff (never a 401: the probe still gets its answer)."""
    # The login cookie's user (this view has no DRF authenticators: DRF's user is anonymous).
    user = get_user(request._request)
    if user.is_authenticated:
        return bool(user.is_staff)
    try:
        found = ApiTokenAuthentication().authenticate(request)
    except Exception:
        return False
    return bool(found and found[0].is_staff)


class Healthz(APIView):
    """/healthz: liveness, for probes; needs no token."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonOnly

    @extend_schema(
        operation_id="healthz",
        responses={
            200: Health,
            503: OpenApiResponse(Health, description="a check failed; `checks` says which"),
        },
    )
    def get(self, request: Request) -> Response:
        """Liveness of the database, the channel layer and the task broker; why a check
        failed is told to staff only (logged in, or by token)."""
        staff = _is_staff(request)
        checks: dict[str, Check] = {}
        for name, check in (
            ("database", _check_database),
            ("channelLayer", _check_channel_layer),
            ("broker", _check_broker),
        ):
            started = time.perf_counter()
            try:
                ok, detail = True, check()
            except Exception as exc:
                ok, detail = False, f"failed: {type(exc).__name__}: {exc}" if staff else "failed"
            ms = round((time.perf_counter() - started) * 1000, 2)
            checks[name] = Check(ok=ok, detail=detail, ms=ms)
        health = Health(ok=all(check.ok for check in checks.values()), checks=Checks(**checks))
        return Response(health.model_dump(mode="json"), status=200 if health.ok else 503)
