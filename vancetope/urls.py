from __future__ import annotations

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from engines.api import ThinkEngineList
from inbox.api import InboxViewSet
from processes.api import ProcessViewSet
from processes.service_api import ServiceRuns
from recipes_app.api import RecipeViewSet
from sessions_app.api import SessionViewSet
from spaces.api import SpaceViewSet
from triggers.api import NotificationViewSet, RunViewSet, WorkflowViewSet
from triggers.cron.api import CronJobViewSet
from triggers.webhooks.api import WebhookViewSet
from vancetope.api import api_not_found
from vancetope.config.api import SettingViewSet
from vancetope.health import Healthz
from vancetope.memory.api import DocumentViewSet, MemoryViewSet
from vancetope.memory.knowledge_api import KnowledgeEdgeViewSet, KnowledgeNodeViewSet
from vancetope.metrics_endpoint import metrics_view
from vancetope.tools.api import ToolHealthViewSet

router = SimpleRouter(trailing_slash=False)
router.register("recipes", RecipeViewSet, basename="recipe")
router.register("sessions", SessionViewSet, basename="session")
router.register("processes", ProcessViewSet, basename="process")
router.register("tool-health", ToolHealthViewSet, basename="tool-health")
router.register("inbox", InboxViewSet, basename="inbox")
router.register("spaces", SpaceViewSet, basename="spaces")
router.register("workflows", WorkflowViewSet, basename="workflow")
router.register("runs", RunViewSet, basename="run")
router.register("notifications", NotificationViewSet, basename="notification")
router.register("cron-jobs", CronJobViewSet, basename="cron-job")
router.register("webhooks", WebhookViewSet, basename="webhook")
router.register("settings", SettingViewSet, basename="setting")
router.register("memory", MemoryViewSet, basename="memory")
router.register("documents", DocumentViewSet, basename="document")
router.register("knowledge/edges", KnowledgeEdgeViewSet, basename="knowledge-edge")
router.register("knowledge/nodes", KnowledgeNodeViewSet, basename="knowledge-node")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", Healthz.as_view(), name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("api/think-engines", ThinkEngineList.as_view(), name="think-engines"),
    path("api/services/<str:service>/runs", ServiceRuns.as_view(), name="service-runs"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/", include(router.urls)),
    # Every other path under /api/ (also with a trailing slash): a JSON 404, not HTML.
    re_path(r"^api(?:/.*)?$", api_not_found),
    path("", include("webui.urls")),
]
