"""Staff requests for service runs at the same moment (POST /api/services/{service}/runs): each
is answered 202, as one run per subject, never a 500. On PostgreSQL two requests race for
real; on SQLite their writes take turns."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from processes.models import ThinkProcess
from sessions_app.models import Session
from tests.support.tenancy import Tenancy
from vancetope.tools.models import DiagnosisStatus, ServiceSession, ToolDiagnosis

pytestmark = pytest.mark.django_db(transaction=True)

SLOW_AGRAJAG = [{"match": "system: Agrajag", "reply": "I cannot tell.", "delay": 0.5}]


def race(tenancy: Tenancy, bodies: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    """POST each body at once, from a thread each; their (status, answer)s."""
    start = threading.Barrier(len(bodies))
    answers: list[tuple[int, Any]] = [(0, None)] * len(bodies)

    def post(index: int) -> None:
        api = tenancy.api()
        start.wait()
        try:
            response = api.post("/api/services/agrajag/runs", bodies[index], format="json")
            answers[index] = (response.status_code, response.content[:500])
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers


@pytest.fixture
def staff(alice: Tenancy) -> Tenancy:
    get_user_model().objects.filter(pk=alice.user.pk).update(is_staff=True)
    alice.user.refresh_from_db()
    return alice


def test_first_requests_about_different_subjects_at_once_share_one_system_session(staff, llm):
    # given a project whose agrajag has no system session yet
    llm(SLOW_AGRAJAG)
    # when six requests about six tools come at once
    bodies = [{"projectId": staff.project_id, "subject": f"tool_{i}"} for i in range(6)]
    answers = race(staff, bodies)
    # then each opened a run, all six in the one system session of agrajag in the project
    assert [status for status, _ in answers] == [202] * 6, answers
    runs = ThinkProcess.objects.filter(think_engine="agrajag")
    assert runs.count() == 6
    [session] = set(runs.values_list("session", flat=True))
    assert ServiceSession.objects.get().session_id == session
    assert Session.objects.filter(client_type="service").count() == 1


def test_requests_about_one_subject_at_once_are_one_run(staff, llm):
    llm(SLOW_AGRAJAG)
    # when six requests about one tool come at once
    bodies = [{"projectId": staff.project_id, "subject": "read_status"}] * 6
    answers = race(staff, bodies)
    # then one opened the run and five joined it
    assert [status for status, _ in answers] == [202] * 6, answers
    assert sorted(json.loads(a)["coalesced"] for _, a in answers) == [False] + [True] * 5
    assert ToolDiagnosis.objects.get().failures == 6
    assert ThinkProcess.objects.filter(think_engine="agrajag").count() == 1


def test_a_request_joining_a_run_that_ends_meanwhile_opens_a_new_one(staff, llm, monkeypatch):
    # given an open run about a tool
    llm(SLOW_AGRAJAG)
    body = {"projectId": staff.project_id, "subject": "read_status"}
    api = staff.api()
    assert api.post("/api/services/agrajag/runs", body, format="json").status_code == 202
    first = ToolDiagnosis.objects.get()
    # when the run settles (agrajag writes its verdict) between the request joining it and
    # reading it back
    read = ToolDiagnosis.objects.get

    def settled_meanwhile(*args: Any, **kwargs: Any) -> ToolDiagnosis:
        monkeypatch.setattr(ToolDiagnosis.objects, "get", read)
        ToolDiagnosis.objects.filter(pk=first.pk).update(status=DiagnosisStatus.DONE)
        return read(*args, **kwargs)

    monkeypatch.setattr(ToolDiagnosis.objects, "get", settled_meanwhile)
    response = api.post("/api/services/agrajag/runs", body, format="json")
    # then it is no 500: the request opens a new run
    assert response.status_code == 202, response.content[:300]
    assert response.json()["coalesced"] is False
    assert ToolDiagnosis.objects.filter(status=DiagnosisStatus.QUEUED).count() == 1
