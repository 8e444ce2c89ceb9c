"""GET /metrics: the Prometheus text format, for a staff user's API token (or login), or for
anyone with VANCETOPE_METRICS_PUBLIC. Project wiring, like /healthz: it reads the apps'
tables for what the database knows (two grouped statements per scrape), beside the counters
of vancetope/observability/metrics.py.

With PROMETHEUS_MULTIPROC_DIR set, the counters are those of every OS process that wrote to
that directory (the Brain and its Celery workers), added up by prometheus-client.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from django.conf import settings
from django.contrib.auth import get_user
from django.db.models import Count, F, Sum
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector
from rest_framework.request import Request

from inbox.models import InboxItem, InboxStatus
from processes.models import ThinkProcess
from processes.states import Status
from vancetope.observability import metrics
from vancetope.tenancy.authentication import ApiTokenAuthentication


class DatabaseCollector(Collector):
    """Read at scrape time: processes and their waiting messages by status, open inbox items
    by kind."""

    def collect(self) -> Iterator[Metric]:
        processes = GaugeMetricFamily(
            "vancetope_processes", "Think processes, by status", labels=["status"]
        )
        pending = GaugeMetricFamily(
            "vancetope_pending_messages",
            "Messages waiting for a turn, by the status of their process (CLOSED left out)",
            labels=["status"],
        )
        rows = (
            ThinkProcess.objects.order_by()
            .values_list("status")
            .annotate(n=Count("id"), queued=Sum(F("next_pending_seq") - 1 - F("consumed_count")))
        )
        found: dict[str, tuple[int, int]] = {
            status: (int(count), int(queued or 0)) for status, count, queued in rows
        }
        for status in Status.values:
            count, queued = found.get(status, (0, 0))
            processes.add_metric([status], float(count))
            if status != Status.CLOSED:
                pending.add_metric([status], float(queued))
        yield processes
        yield pending
        inbox = GaugeMetricFamily(
            "vancetope_inbox_items_open", "Open inbox items, by kind", labels=["kind"]
        )
        kinds = (
            InboxItem.objects.filter(status=InboxStatus.OPEN)
            .order_by()
            .values_list("kind")
            .annotate(n=Count("id"))
        )
        for kind, count in kinds:
            inbox.add_metric([kind], float(count))
        yield inbox


_database = CollectorRegistry(auto_describe=False)
_database.register(DatabaseCollector())


def _counters() -> CollectorRegistry:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return registry
    return REGISTRY


def _refusal(request: HttpRequest) -> HttpResponse | None:
    """None for a staff user (login cookie or API token); else the 401 or 403 to answer."""
    user = get_user(request)
    if not user.is_authenticated:
        try:
            found = ApiTokenAuthentication().authenticate(Request(request))
        except Exception:
            found = None
        user = found[0] if found else user
    if user.is_authenticated and user.is_staff:
        return None
    if user.is_authenticated:
        body = {"code": 403, "error": "forbidden", "message": "/metrics is for staff users"}
        return JsonResponse(body, status=403)
    body = {"code": 401, "error": "unauthenticated", "message": "a staff user's token is needed"}
    response = JsonResponse(body, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not metrics.enabled():
        raise Http404("metrics are off (VANCETOPE_METRICS)")
    if not settings.VANCETOPE_METRICS_PUBLIC:
        refused = _refusal(request)
        if refused is not None:
            return refused
    text = generate_latest(_counters()) + generate_latest(_database)
    return HttpResponse(text, content_type=CONTENT_TYPE_LATEST)
