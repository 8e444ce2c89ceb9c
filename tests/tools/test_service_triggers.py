"""A service engine is spawned from every trigger: the checker (tests/tools/test_agrajag.py), the
system event queue and a staff member's REST request; a burst about the same subject is one
run."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from processes.actions.service_events import ServiceEvent, post_service_event
from processes.models import ThinkProcess
from processes.states import Status
from sessions_app.services import register_tools
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import closed_process, wait_until
from vancetope.tools.client_bridge import accept_tool_result
from vancetope.tools.health import write_tool_health
from vancetope.tools.models import (
    CallStatus,
    DiagnosisSource,
    DiagnosisStatus,
    HealthStatus,
    ToolCall,
    ToolDiagnosis,
    ToolHealth,
)

pytestmark = pytest.mark.django_db(transaction=True)

STATUS_TOOL = {"name": "read_status", "parameters": {"type": "object"}, "safety": "SAFE_PROBE"}
# agrajag takes its time, so every event meanwhile joins its open run.
SLOW_AGRAJAG = [{"match": "system: Agrajag", "reply": "I cannot tell.", "delay": 0.5}]


def agrajags() -> list[ThinkProcess]:
    return list(ThinkProcess.objects.filter(think_engine="agrajag").order_by("pk"))


def test_a_burst_of_system_events_about_one_tool_is_one_run(alice, llm):
    llm(SLOW_AGRAJAG)
    event = ServiceEvent(alice.project.pk, "agrajag", "read_status", "it flickers", None)
    # when five events about the same tool come at once
    queued = [post_service_event(event) for _ in range(5)]
    # then the first opened a run and the other four joined it
    assert [q.new for q in queued] == [True, False, False, False, False]
    [run] = agrajags()
    diagnosis = ToolDiagnosis.objects.get()
    assert (diagnosis.failures, diagnosis.source, diagnosis.process_id) == (5, "event", run.pk)
    assert run.session.client_type == "service"
    # and once that run is over, the next event opens a new one
    closed_process(run.pk)
    wait_until(lambda: ToolDiagnosis.objects.filter(status=DiagnosisStatus.DONE).exists())
    again = post_service_event(event)
    assert again.new
    assert len(agrajags()) == 2


def test_an_unknown_service_is_refused_naming_it(alice):
    from vancetope.errors import BadRequest

    with pytest.raises(BadRequest) as refused:
        post_service_event(ServiceEvent(alice.project.pk, "prak", "x", "", None))
    assert refused.value.field == "service"
    assert not ToolDiagnosis.objects.exists()


def test_a_down_tool_offered_again_by_a_client_is_probed_again_as_that_person(alice, llm):
    # given a tool agrajag found DOWN in alice's project
    llm([{"match": "system: Agrajag", "reply": "I cannot tell."}])
    write_tool_health(
        project_id=alice.project.pk,
        tool="read_status",
        status=HealthStatus.DOWN,
        classification="unknown",
        evidence="it failed",
    )
    terminal = open_session(alice)
    # when her client registers it again, twice in a row (a reconnect)
    register_tools(terminal, [STATUS_TOOL])
    register_tools(terminal, [STATUS_TOOL])
    # then one agrajag run, acting for alice, probes it on her client
    call = wait_until(
        lambda: ToolCall.objects.filter(tool="read_status", status=CallStatus.PENDING).first()
    )
    [run] = agrajags()
    assert call.session_id == terminal.pk
    diagnosis = ToolDiagnosis.objects.get()
    assert (diagnosis.source, diagnosis.failures) == (DiagnosisSource.EVENT, 2)
    assert diagnosis.originating_user_id == alice.user.pk
    assert diagnosis.last_error == f"the client of {terminal.public_id} offers read_status again"
    # and when her client answers, the tool is UP again
    accept_tool_result(terminal.pk, call.public_id, ok=True, result="green")
    closed_process(run.pk)
    health = ToolHealth.objects.get(tool="read_status")
    assert (health.status, health.checked_by_id) == (HealthStatus.UP, run.pk)


def test_registering_tools_that_are_not_down_posts_nothing(alice, llm):
    terminal = open_session(alice)
    register_tools(terminal, [STATUS_TOOL])
    assert not ToolDiagnosis.objects.exists()
    assert agrajags() == []


def staff(tenancy: Tenancy) -> Tenancy:
    get_user_model().objects.filter(pk=tenancy.user.pk).update(is_staff=True)
    tenancy.user.refresh_from_db()
    return tenancy


def test_staff_request_a_service_run_over_rest_and_a_second_joins_it(alice, llm):
    llm(SLOW_AGRAJAG)
    api = staff(alice).api()
    body = {"projectId": alice.project_id, "subject": "read_status", "detail": "users complain"}
    # when a staff member asks agrajag to look at a tool
    first = api.post("/api/services/agrajag/runs", body, format="json")
    # then a run starts, acting for them
    assert first.status_code == 202, first.json()
    answer = first.json()
    assert answer["coalesced"] is False
    assert (answer["service"], answer["subject"], answer["events"]) == ("agrajag", "read_status", 1)
    [run] = agrajags()
    assert answer["processId"] == run.public_id
    assert run.engine_params["originatingUserId"] == alice.user.pk
    diagnosis = ToolDiagnosis.objects.get()
    assert (diagnosis.source, diagnosis.last_error) == (DiagnosisSource.STAFF, "users complain")
    # and a second request while it runs joins it
    second = api.post("/api/services/agrajag/runs", body, format="json")
    assert second.status_code == 202
    assert second.json()["coalesced"] is True
    assert second.json()["processId"] == run.public_id
    assert second.json()["events"] == 2
    assert len(agrajags()) == 1
    closed_process(run.pk)
    assert ThinkProcess.objects.get(pk=run.pk).status == Status.CLOSED


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"subject": "read_status"}, "projectId"),
        ({"projectId": "proj_x"}, "subject"),
        ({"projectId": "proj_x", "subject": ""}, "subject"),
        ({"projectId": "proj_x", "subject": "t", "detail": 3}, "detail"),
        ({"projectId": "proj_x", "subject": "t", "when": "now"}, "when"),
    ],
)
def test_a_staff_request_with_bad_input_is_a_400_naming_the_field(alice, body, field):
    body = {**body, "projectId": alice.project_id} if body.get("projectId") else body
    response = staff(alice).api().post("/api/services/agrajag/runs", body, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json().get("fields", {}), response.json()
    assert not ToolDiagnosis.objects.exists()


def test_only_staff_may_request_a_service_run(alice, bob):
    body = {"projectId": alice.project_id, "subject": "read_status"}
    refused = alice.api().post("/api/services/agrajag/runs", body, format="json")
    assert refused.status_code == 403
    unknown_service = staff(alice).api().post("/api/services/prak/runs", body, format="json")
    assert unknown_service.status_code == 400
    assert "service" in unknown_service.json()["fields"]
    # a project the staff member does not see is a 404
    elsewhere = staff(bob).api().post("/api/services/agrajag/runs", body, format="json")
    assert elsewhere.status_code == 404
    assert not ToolDiagnosis.objects.exists()
