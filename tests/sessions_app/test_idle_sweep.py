"""The idle sweep and its django-celery-beat row."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps as django_apps
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from processes.actions.sessions import create_session, suspend_idle_sessions
from processes.models import ThinkProcess
from processes.states import Status
from processes.tasks import sweep_idle_sessions_task
from sessions_app.models import DisconnectPolicy, Session, SessionStatus
from sessions_app.services import FingerprintData

pytestmark = pytest.mark.django_db(transaction=True)


def idle_session(tenancy, on_idle: str, idle_for: int, timeout: int = 60) -> Session:
    session = create_session(
        tenancy.user,
        client_type="cli",
        project_id=tenancy.project_id,
        fingerprint=FingerprintData(machine_id="m"),
    )
    Session.objects.filter(pk=session.pk).update(
        on_idle=on_idle,
        idle_timeout=timeout,
        last_activity_at=timezone.now() - timedelta(seconds=idle_for),
    )
    return session


def test_idle_session_is_suspended_with_its_processes(alice):
    session = idle_session(alice, DisconnectPolicy.SUSPEND, idle_for=120)
    assert sweep_idle_sessions_task() == 1
    session.refresh_from_db()
    assert (session.status, session.suspend_cause) == (SessionStatus.SUSPENDED, "IDLE")
    assert ThinkProcess.objects.get(pk=session.chat_process_id).status == Status.SUSPENDED


def test_idle_session_with_on_idle_close_is_closed(alice):
    session = idle_session(alice, DisconnectPolicy.CLOSE, idle_for=120)
    assert suspend_idle_sessions() == 1
    session.refresh_from_db()
    assert session.status == SessionStatus.CLOSED
    chat = ThinkProcess.objects.get(pk=session.chat_process_id)
    assert (chat.status, chat.close_reason) == (Status.CLOSED, "STOPPED")


def test_active_and_keep_open_sessions_are_left_alone(alice):
    recent = idle_session(alice, DisconnectPolicy.SUSPEND, idle_for=10)
    keep = idle_session(alice, DisconnectPolicy.KEEP_OPEN, idle_for=10_000)
    assert suspend_idle_sessions() == 0
    for session in (recent, keep):
        session.refresh_from_db()
        assert session.status == SessionStatus.OPEN


def test_sweeps_are_periodic_tasks_editable_in_the_admin():
    # The rows come from a data migration; transactional tests flush them, so run its
    # function again (it is idempotent) on the current schema.
    migration = importlib.import_module("sessions_app.migrations.0003_periodic_sweeps")
    migration.create_sweeps(django_apps, None)
    migration.create_sweeps(django_apps, None)
    names = [name for name, _, _ in migration.SWEEPS]
    assert PeriodicTask.objects.filter(name__in=names).count() == 2
    tasks = dict(PeriodicTask.objects.values_list("task", "interval__every"))
    assert tasks["sessions_app.sweep_idle_sessions"] == 60
    assert tasks["processes.sweep_lanes"] == 10
