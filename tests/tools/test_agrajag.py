"""agrajag: ambiguous failures are coalesced into one diagnosis run that writes ToolHealth."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from processes.actions.create import create_process
from processes.actions.sessions import create_session
from processes.capabilities.tools import toolbox_for
from processes.models import ThinkProcess
from processes.queries import visible_processes
from processes.states import CloseReason, Status
from sessions_app.services import FingerprintData
from tests.support.tools import project_recipe
from tests.support.waiting import closed_process, wait_until
from vancetope.tools.errors import ToolFailure
from vancetope.tools.models import (
    DiagnosisStatus,
    HealthStatus,
    Safety,
    ToolDiagnosis,
    ToolHealth,
)

pytestmark = pytest.mark.django_db(transaction=True)


def explode(toolbox, arguments):
    raise ToolFailure("the widget exploded")


@pytest.fixture
def flaky_world(alice, llm, temporary_server_tools):
    temporary_server_tools("flaky_lookup", explode, safety=Safety.SAFE_PROBE)
    project_recipe(alice, "frankie-flaky", allowed_tools_add=["flaky_lookup"])
    llm(
        [
            {
                "match": "look it up",
                "times": 1,
                "tool_calls": [
                    {"name": "flaky_lookup", "arguments": {}},
                    {"name": "flaky_lookup", "arguments": {}},
                ],
            },
            # agrajag takes its time, so every failure meanwhile joins the open diagnosis
            {"match": "system: Agrajag", "reply": "I cannot tell.", "delay": 0.5},
        ]
    )
    return create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1"),
    )


def test_ambiguous_failures_lead_to_one_agrajag_run_and_a_tool_health_row(alice, flaky_world):
    # when a worker's tool fails ambiguously twice
    worker = create_process(flaky_world, goal="look it up", recipe="frankie-flaky")
    worker = closed_process(worker.pk)
    # then one diagnosis coalesces both failures, handled by one agrajag process
    diagnosis = ToolDiagnosis.objects.get()
    assert (diagnosis.tool, diagnosis.failures) == ("flaky_lookup", 2)
    agrajags = ThinkProcess.objects.filter(think_engine="agrajag")
    assert agrajags.count() == 1
    agrajag = agrajags.get()
    wait_until(lambda: ThinkProcess.objects.get(pk=agrajag.pk).status == Status.CLOSED)
    agrajag.refresh_from_db()
    assert agrajag.close_reason == CloseReason.DONE
    # in the project's system session of the _system user
    assert agrajag.session.system
    assert agrajag.session.owner.username == "_system"
    assert agrajag.session.project_id == alice.project.pk
    # it probed (the probe failed again) and wrote the tool's health
    health = ToolHealth.objects.get(tool="flaky_lookup")
    assert (health.status, health.classification) == (HealthStatus.DOWN, "unknown")
    assert "the widget exploded" in health.evidence
    assert health.checked_by_id == agrajag.pk
    assert ToolDiagnosis.objects.get().status == DiagnosisStatus.DONE
    # the user's process list does not show it
    assert agrajag not in visible_processes(alice.user)
    listed = [row["id"] for row in alice.api().get("/api/processes").json()["results"]]
    assert worker.public_id in listed
    assert agrajag.public_id not in listed
    # the health is visible over REST …
    body = alice.api().get("/api/tool-health").json()
    assert [(row["tool"], row["status"]) for row in body["results"]] == [("flaky_lookup", "DOWN")]
    # … and in the admin
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    admin = Client()
    admin.force_login(root)
    page = admin.get(reverse("admin:tools_toolhealth_changelist"))
    assert page.status_code == 200
    assert page.context["cl"].result_count == 1
    # and tool listings mark the tool as down
    schemas = toolbox_for(worker, [], lambda: None).schemas()
    assert schemas[0].description.startswith("[DOWN: unknown]")


def test_a_second_failure_after_the_verdict_opens_a_new_diagnosis(alice, flaky_world):
    create_process(flaky_world, goal="look it up", recipe="frankie-flaky")
    wait_until(lambda: ToolDiagnosis.objects.filter(status=DiagnosisStatus.DONE).exists())
    process = create_process(flaky_world, recipe="frankie-flaky", start=False)
    # when it fails again later
    toolbox_for(process, [], lambda: None).invoke("flaky_lookup", {})
    # then a new diagnosis (and agrajag run) starts
    assert ToolDiagnosis.objects.count() == 2
    assert ThinkProcess.objects.filter(think_engine="agrajag").count() == 2
    assert (
        ThinkProcess.objects.filter(session__system=True, think_engine="agrajag")
        .values("session")
        .distinct()
        .count()
        == 1
    )


def test_other_users_do_not_see_the_health_of_another_tenants_tools(alice, bob, flaky_world):
    create_process(flaky_world, goal="look it up", recipe="frankie-flaky")
    wait_until(lambda: ToolHealth.objects.exists())
    assert bob.api().get("/api/tool-health").json()["results"] == []


def test_agrajag_refuses_a_tool_that_is_not_a_probe_even_when_its_recipe_adds_it(
    alice, llm, temporary_server_tools
):
    # given a project agrajag recipe that adds a MUTATING tool, and an LLM that names it
    wiped: list[dict] = []

    def wipe(toolbox, arguments):
        wiped.append(arguments)
        return "wiped"

    temporary_server_tools("flaky_lookup", explode, safety=Safety.SAFE_PROBE)
    temporary_server_tools("wipe_disk", wipe, safety=Safety.MUTATING)
    project_recipe(alice, "frankie-flaky", allowed_tools_add=["flaky_lookup"])
    project_recipe(
        alice,
        "agrajag",
        engine="agrajag",
        category="service",
        roles=["tool-prober", "tool-health-writer"],
        allowed_tools_add=["wipe_disk"],
    )
    provider = llm(
        [
            {"match": "look it up", "times": 1, "tool_calls": [{"name": "flaky_lookup"}]},
            {
                "match": "system: Agrajag",
                "times": 1,
                "tool_calls": [{"name": "wipe_disk", "arguments": {"all": True}}],
            },
            {"match": "system: Agrajag", "reply": "I cannot tell."},
        ]
    )
    session = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1"),
    )
    # when a worker's tool fails ambiguously and agrajag diagnoses it
    create_process(session, goal="look it up", recipe="frankie-flaky")
    wait_until(lambda: ToolDiagnosis.objects.filter(status=DiagnosisStatus.DONE).exists())
    # then the MUTATING tool never ran, though it was named; it was never offered either
    assert wiped == []
    agrajag = closed_process(ThinkProcess.objects.get(think_engine="agrajag").pk)
    refusals = agrajag.conversation.filter(role="tool").values_list("content", flat=True)
    assert any("wipe_disk" in text and "not a probe" in text for text in refusals), list(refusals)
    assert all("wipe_disk" not in offered for offered in provider.offered)
