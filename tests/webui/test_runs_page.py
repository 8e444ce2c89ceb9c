"""The web UI's run-log page: the user's runs on a timeline with why each stopped, filters,
and their notifications, marked read from the page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sessions_app.models import ClientType
from tests.support.tenancy import Tenancy
from triggers.models import Notification, RunLog, RunStatus, TriggerType
from triggers.notifications import notify

pytestmark = pytest.mark.django_db


def logged_in(tenancy: Tenancy) -> Client:
    client = Client()
    client.force_login(tenancy.user)
    return client


def a_run(tenancy: Tenancy, status: str, minutes_ago: int, **fields) -> RunLog:
    started = timezone.now() - timedelta(minutes=minutes_ago)
    return RunLog.objects.create(
        owner=tenancy.user,
        project=tenancy.project,
        client_type=ClientType.WORKFLOW,
        trigger_type=TriggerType.WORKFLOW,
        status=status,
        started_at=started,
        finished_at=started + timedelta(minutes=1) if status != RunStatus.RUNNING else None,
        **fields,
    )


def test_the_runs_page_puts_each_run_on_the_timeline_with_why_it_stopped(alice, bob):
    # given a finished run of alice's, a blocked one and a run of bob's
    done = a_run(alice, RunStatus.COMPLETED, 10, process_public_id="tp_5", tasks_executed=2)
    blocked = a_run(
        alice,
        RunStatus.BLOCKED,
        5,
        blocked_reasons=[{"taskId": "n2", "reason": "waiting for input: which <b>moons</b>?"}],
    )
    theirs = a_run(bob, RunStatus.FAILED, 1)
    # when alice opens the page
    response = logged_in(alice).get(reverse("webui:runs"))
    # then both of her runs are on the timeline, newest first, and bob's is not
    assert response.status_code == 200
    page = response.content.decode()
    assert page.index(f'data-run="{blocked.public_id}"') < page.index(
        f'data-run="{done.public_id}"'
    )
    assert f'data-run="{theirs.public_id}"' not in page
    # the first run starts at the left of the line and lasts a sixth of it (10 to 4 minutes
    # ago); the blocked one says why, escaped
    assert 'style="margin-left: 0.00%; width: 16.67%"' in page
    assert "waiting for input: which &lt;b&gt;moons&lt;/b&gt;?" in page
    assert 'href="/processes/tp_5"' in page
    assert "2 tasks done</span>" in page


def test_the_runs_page_filters_by_status_and_names_a_bad_filter(alice):
    a_run(alice, RunStatus.COMPLETED, 10)
    blocked = a_run(alice, RunStatus.BLOCKED, 5)
    client = logged_in(alice)
    filtered = client.get(reverse("webui:runs"), {"status": "blocked"}).content.decode()
    assert filtered.count('class="run-row"') == 1
    assert f'data-run="{blocked.public_id}"' in filtered
    refused = client.get(reverse("webui:runs"), {"status": "nope"})
    assert refused.status_code == 400
    assert "status: must be one of running, completed" in refused.content.decode()


def test_notifications_are_listed_and_marked_read_from_the_runs_page(alice):
    # given a notification of alice's
    notification = notify(alice.user, alice.project, "Workflow 'x' is blocked", "warning")
    client = logged_in(alice)
    page = client.get(reverse("webui:runs")).content.decode()
    assert f'data-notification="{notification.public_id}"' in page
    assert "Mark read" in page
    # when she marks it read
    client.post(reverse("webui:notification-read", args=[notification.public_id]))
    # then it is read, and the page no longer offers it
    assert Notification.objects.get(pk=notification.pk).read_at is not None
    assert "Mark read" not in client.get(reverse("webui:runs")).content.decode()


def test_the_runs_page_counts_unread_notifications_and_marks_all_read(alice, bob):
    # given two unread notifications of alice's and one of bob's
    for text in ("one", "two"):
        notify(alice.user, alice.project, text, "info")
    theirs = notify(bob.user, bob.project, "theirs", "info")
    client = logged_in(alice)
    page = client.get(reverse("webui:runs")).content.decode()
    assert 'data-unread="2"' in page
    # when she marks all read
    after = client.post(reverse("webui:notifications-read-all"), follow=True).content.decode()
    # then none of hers is unread, the page says so, and bob's is untouched
    assert 'data-unread="0"' in after
    assert "Marked 2 read." in after
    assert not Notification.objects.filter(user=alice.user, read_at__isnull=True).exists()
    assert Notification.objects.get(pk=theirs.pk).read_at is None


def test_a_runs_page_draws_its_transitions_and_its_processes_on_a_timeline(alice):
    # given a run that blocked and then went on to complete, of alice's process
    from processes.models import ProcessTransition
    from tests.support.tenancy import open_session
    from tests.support.waiting import wait_until
    from triggers.models import RunTransition

    session = open_session(alice)
    # its chat process's own start is settled and forgotten: the lane drawn is the one below
    wait_until(
        lambda: ProcessTransition.objects.filter(
            process_id=session.chat_process_id, to_status="IDLE"
        ).exists()
    )
    ProcessTransition.objects.filter(process_id=session.chat_process_id).delete()
    started = timezone.now() - timedelta(minutes=10)
    run = a_run(
        alice,
        RunStatus.COMPLETED,
        10,
        process=session.chat_process,
        process_public_id=f"tp_{session.chat_process_id}",
    )
    run.finished_at = started + timedelta(minutes=10)
    run.save()
    for minute, (old, new) in enumerate(
        [("", "running"), ("running", "blocked"), ("blocked", "running"), ("running", "completed")]
    ):
        moved = started + timedelta(minutes=minute * 2 + (2 if new == "completed" else 0))
        RunTransition.objects.create(run=run, from_status=old, to_status=new, at=moved)
    ProcessTransition.objects.create(
        process_id=session.chat_process_id,
        call="turn",
        from_status="IDLE",
        to_status="RUNNING",
        at=started + timedelta(minutes=1),
    )
    # when alice opens the run's page
    response = logged_in(alice).get(reverse("webui:run", args=[run.public_id]))
    # then the run's lane has a bar per span (running 0-2, blocked 2-4, running 4-8 minutes of
    # the ten), and her process's lane its RUNNING span from minute 1 to the end
    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-lane="' + run.public_id + '"' in page
    assert 'data-status="running" style="left: 0.00%; width: 20.00%"' in page
    assert 'data-status="blocked" style="left: 20.00%; width: 20.00%"' in page
    assert 'data-status="running" style="left: 40.00%; width: 40.00%"' in page
    assert f'data-lane="tp_{session.chat_process_id}"' in page
    assert 'data-status="RUNNING" style="left: 10.00%; width: 90.00%"' in page
    assert "blocked → running" in page
    # and a run that does not exist is a 404
    assert logged_in(alice).get(reverse("webui:run", args=["run_99999"])).status_code == 404


def test_another_users_run_page_is_a_404(alice, bob):
    run = a_run(alice, RunStatus.COMPLETED, 5)
    assert logged_in(bob).get(reverse("webui:run", args=[run.public_id])).status_code == 404
