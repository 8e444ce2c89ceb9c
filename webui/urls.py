"""The web UI: login, the dashboard (REST, no session), the inbox, the memory page (documents
and the knowledge graph, over REST) and the interactive mode (WebSocket)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from webui import runs, sessions, views

app_name = "webui"

urlpatterns = [
    path("", views.process_list, name="processes"),
    path("processes/<str:process_id>", views.process_detail_page, name="process"),
    path("processes/<str:process_id>/<str:call>", views.process_call, name="process-call"),
    path("interactive/", views.interactive, name="interactive"),
    path("sessions/", sessions.sessions_page, name="sessions"),
    path("inbox/", views.inbox_page, name="inbox"),
    path("memory/", views.memory_page, name="memory"),
    path("runs/", runs.runs_page, name="runs"),
    path("runs/<str:run_id>", runs.run_page, name="run"),
    path("notifications/read-all", runs.notifications_read_all, name="notifications-read-all"),
    path(
        "notifications/<str:notification_id>/read",
        runs.notification_read,
        name="notification-read",
    ),
    path("inbox/<str:item_id>/answer", views.inbox_answer, name="inbox-answer"),
    path("inbox/<str:item_id>/dismiss", views.inbox_dismiss, name="inbox-dismiss"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(
            template_name="webui/login.html",
            next_page=reverse_lazy("webui:processes"),
            redirect_authenticated_user=True,
        ),
        name="login",
    ),
    path(
        "accounts/logout/",
        auth_views.LogoutView.as_view(next_page=reverse_lazy("webui:login")),
        name="logout",
    ),
]
