"""/api/runs and /api/notifications: the caller's own rows, filtered and paginated; a bad
filter is a 400 naming it; another tenant's id is a 404."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import ClientType
from tests.support.tenancy import Tenancy
from triggers.models import RunLog, RunStatus, TriggerType
from triggers.notifications import notify

pytestmark = pytest.mark.django_db


def a_run(tenancy: Tenancy, status: str, process: str, trigger: str = TriggerType.WORKFLOW, **kw):
    return RunLog.objects.create(
        owner=tenancy.user,
        project=tenancy.project,
        client_type=kw.pop("client_type", ClientType.WORKFLOW),
        trigger_type=trigger,
        status=status,
        process_public_id=process,
        **kw,
    )


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def test_runs_are_filtered_by_process_client_type_trigger_status_and_since(alice):
    # given three of alice's runs
    old = a_run(alice, RunStatus.COMPLETED, "tp_1", started_at=timezone.now() - timedelta(days=2))
    blocked = a_run(alice, RunStatus.BLOCKED, "tp_2")
    by_cron = a_run(alice, RunStatus.FAILED, "tp_2", TriggerType.CRON, client_type="cron")
    api = alice.api()
    # when she filters, she gets the matching ones, newest first
    assert ids(api.get("/api/runs")) == [by_cron.public_id, blocked.public_id, old.public_id]
    assert ids(api.get("/api/runs?process=tp_2")) == [by_cron.public_id, blocked.public_id]
    assert ids(api.get("/api/runs?clientType=cron")) == [by_cron.public_id]
    assert ids(api.get("/api/runs?trigger=workflow")) == [blocked.public_id, old.public_id]
    assert ids(api.get("/api/runs?status=blocked")) == [blocked.public_id]
    since = (timezone.now() - timedelta(days=1)).isoformat()
    assert ids(api.get("/api/runs", {"since": since})) == [by_cron.public_id, blocked.public_id]
    # and a page at a time
    page = api.get("/api/runs?limit=1&offset=1").json()
    assert (page["count"], [row["id"] for row in page["results"]]) == (3, [blocked.public_id])


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=done", "status"),
        ("trigger=ftp", "trigger"),
        ("clientType=fax", "clientType"),
        ("process=12", "process"),
        ("since=yesterday", "since"),
    ],
)
def test_a_bad_run_filter_is_a_400_naming_it(alice, query, field):
    response = alice.api().get(f"/api/runs?{query}")
    assert response.status_code == 400
    assert response.json()["message"].startswith(f"{field}: ")


def test_another_tenants_run_is_a_404_and_never_listed(alice, bob):
    # given a run of alice's
    run = a_run(alice, RunStatus.COMPLETED, "tp_1")
    # then bob neither finds nor lists it
    assert bob.api().get(f"/api/runs/{run.public_id}").status_code == 404
    assert bob.api().get("/api/runs").json()["count"] == 0
    assert alice.api().get(f"/api/runs/{run.public_id}").json()["status"] == "completed"
    assert alice.api().get("/api/runs/run_x").status_code == 404


def test_notifications_are_listed_and_marked_read_and_another_tenants_is_a_404(alice, bob):
    # given two notifications of alice's
    first = notify(alice.user, alice.project, "one", "info")
    second = notify(alice.user, alice.project, "two", "warning", process_id="tp_9")
    api = alice.api()
    # when she marks the first read
    read = api.post(f"/api/notifications/{first.public_id}/read")
    # then it says so, and the unread filter leaves it out
    assert read.status_code == 200
    assert (read.json()["read"], read.json()["text"]) == (True, "one")
    assert ids(api.get("/api/notifications")) == [second.public_id, first.public_id]
    assert ids(api.get("/api/notifications?unread=true")) == [second.public_id]
    assert api.get("/api/notifications?unread=maybe").json()["message"].startswith("unread: ")
    # and bob can neither read nor list them
    assert bob.api().post(f"/api/notifications/{second.public_id}/read").status_code == 404
    assert bob.api().get("/api/notifications").json()["count"] == 0


def test_all_notifications_are_marked_read_at_once_and_only_the_callers(alice, bob):
    # given three unread notifications of alice's and one of bob's
    mine = [notify(alice.user, alice.project, f"n{i}", "info") for i in range(3)]
    theirs = notify(bob.user, bob.project, "theirs", "info")
    api = alice.api()
    api.post(f"/api/notifications/{mine[0].public_id}/read")
    # when she marks all read
    response = api.post("/api/notifications/read-all")
    # then the two that were unread are read now, and none is left unread
    assert response.status_code == 200, response.json()
    assert response.json() == {"marked": 2, "unread": 0}
    assert ids(api.get("/api/notifications?unread=true")) == []
    assert ids(api.get("/api/notifications?unread=false")) == [n.public_id for n in reversed(mine)]
    # bob's stays unread
    assert ids(bob.api().get("/api/notifications?unread=true")) == [theirs.public_id]
    # and without a login it is a 401
    from rest_framework.test import APIClient

    assert APIClient().post("/api/notifications/read-all").status_code == 401


def test_notifications_are_paginated_newest_first(alice):
    made = [notify(alice.user, alice.project, f"n{i}", "info") for i in range(5)]
    first = alice.api().get("/api/notifications?unread=true&limit=2")
    assert first.status_code == 200, first.json()
    page = first.json()
    assert page["count"] == 5
    assert [row["id"] for row in page["results"]] == [made[4].public_id, made[3].public_id]
    second = alice.api().get(page["next"]).json()
    assert [row["id"] for row in second["results"]] == [made[2].public_id, made[1].public_id]
