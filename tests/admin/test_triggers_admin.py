"""Workflows, run logs and notifications in the admin: a workflow's YAML is checked on save,
run logs are listed by status and searched by process."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app.models import ClientType
from triggers.models import RunLog, RunStatus, TriggerType, Workflow
from triggers.notifications import notify

pytestmark = pytest.mark.django_db

GOOD = "name: moons\ngoal: Count ${input.planet}\ninputs: [planet]\ntasks:\n" + (
    "  - {kind: WORKER, title: Count, goal: count them}\n"
)


def test_a_workflow_saved_in_the_admin_is_checked_and_stored_from_its_yaml(operator, alice):
    add = reverse("admin:triggers_workflow_add")
    # when an operator saves a body that names an unknown task kind
    refused = operator.post(
        add, {"project": alice.project.pk, "source": GOOD.replace("WORKER", "X")}
    )
    # then the form says which field, and nothing is stored
    assert refused.status_code == 200
    assert "tasks[0].kind" in refused.content.decode()
    assert not Workflow.objects.exists()
    # when the body is good, it is stored with its checked body
    saved = operator.post(add, {"project": alice.project.pk, "source": GOOD})
    assert saved.status_code == 302
    workflow = Workflow.objects.get()
    assert (workflow.name, workflow.body["engine"], workflow.body["inputs"]) == (
        "moons",
        "marvin",
        ["planet"],
    )


def test_run_logs_are_filtered_by_status_and_searched_by_process(operator, alice):
    # given a blocked and a completed run
    for status, process in ((RunStatus.BLOCKED, "tp_7"), (RunStatus.COMPLETED, "tp_8")):
        RunLog.objects.create(
            owner=alice.user,
            project=alice.project,
            client_type=ClientType.WORKFLOW,
            trigger_type=TriggerType.WORKFLOW,
            status=status,
            process_public_id=process,
        )
    changelist = reverse("admin:triggers_runlog_changelist")
    # then each filter finds its own
    blocked = operator.get(changelist, {"status__exact": "blocked"})
    assert [run.process_public_id for run in blocked.context["cl"].result_list] == ["tp_7"]
    found = operator.get(changelist, {"q": "tp_8"})
    assert [run.status for run in found.context["cl"].result_list] == ["completed"]


def test_notifications_are_listed_in_the_admin(operator, alice):
    notify(alice.user, alice.project, "Workflow blocked", "warning")
    response = operator.get(reverse("admin:triggers_notification_changelist"), {"q": "blocked"})
    assert [n.level for n in response.context["cl"].result_list] == ["warning"]
