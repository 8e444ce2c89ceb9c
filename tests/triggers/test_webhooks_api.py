"""Webhook configurations over REST: the secret shown once, 400s naming the field, another
tenant's webhook a 404, PATCH and DELETE; and in the admin, secrets never shown but once."""

from __future__ import annotations

import pytest

from tests.triggers.helpers import create_workflow
from tests.triggers.webhook_helpers import create_webhook
from triggers.models import Webhook

UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "jira:${event.issue.key}"}}


@pytest.mark.django_db
def test_create_list_get_patch_delete(alice):
    made = create_webhook(alice, {"name": "jira", "mode": "secret", "action": UNBLOCK})
    assert made["secret"]
    assert made["url"] == f"/api/webhooks/{made['id']}"
    assert made["projectId"] == alice.project_id
    api = alice.api()
    listed = api.get("/api/webhooks").json()
    assert [row["id"] for row in listed["results"]] == [made["id"]]
    assert "secret" not in listed["results"][0]
    changed = api.patch(
        f"/api/webhooks/{made['id']}", {"filter": {"issue.status": "Done"}}, format="json"
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json()["filter"] == {"issue.status": "Done"}
    assert "secret" not in changed.json()
    assert api.delete(f"/api/webhooks/{made['id']}").status_code == 204
    assert not Webhook.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"mode": "secret", "action": UNBLOCK}, "name"),
        ({"name": "x", "mode": "hmac", "action": UNBLOCK}, "mode"),
        ({"name": "x", "mode": "secret"}, "action"),
        ({"name": "x", "mode": "secret", "action": {"type": "fly"}}, "action.type"),
        ({"name": "x", "mode": "secret", "action": {"type": "unblock_tasks"}}, "action.match"),
        (
            {"name": "x", "mode": "secret", "action": UNBLOCK, "filter": ["a"]},
            "filter",
        ),
        ({"name": "x", "mode": "secret", "action": UNBLOCK, "colour": 1}, "colour"),
        (
            {"name": "x", "mode": "secret", "action": {"type": "run_workflow"}},
            "action.workflowId",
        ),
        (
            {
                "name": "x",
                "mode": "secret",
                "action": {**UNBLOCK, "match": {"blockedByExternal": " "}},
            },
            "action.match.blockedByExternal",
        ),
        (
            {"name": "x", "mode": "secret", "action": {**UNBLOCK, "colour": 1}},
            "action.colour",
        ),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(alice, body, field):
    response = alice.api().post("/api/webhooks", body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["message"].startswith(f"{field}: ")
    assert response.json()["field"] == field


@pytest.mark.django_db
def test_run_workflow_inputs_are_checked_against_the_workflow(alice):
    workflow_id = create_workflow(alice)
    action = {"type": "run_workflow", "workflowId": workflow_id, "input": {}}
    response = alice.api().post(
        "/api/webhooks", {"name": "w", "mode": "secret", "action": action}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("action.input.topic: missing")


@pytest.mark.django_db
def test_another_tenants_webhook_and_workflow_are_404(alice, bob):
    made = create_webhook(alice, {"name": "jira", "mode": "secret", "action": UNBLOCK})
    api = bob.api()
    assert api.get(f"/api/webhooks/{made['id']}").status_code == 404
    patch = api.patch(f"/api/webhooks/{made['id']}", {"name": "mine"}, format="json")
    assert patch.status_code == 404
    assert api.delete(f"/api/webhooks/{made['id']}").status_code == 404
    assert api.post(f"/api/webhooks/{made['id']}/rotate-secret").status_code == 404
    assert api.get("/api/webhooks").json()["results"] == []
    workflow_id = create_workflow(alice)
    action = {"type": "run_workflow", "workflowId": workflow_id, "input": {"topic": "t"}}
    response = api.post(
        "/api/webhooks", {"name": "w", "mode": "secret", "action": action}, format="json"
    )
    assert response.status_code == 404


@pytest.mark.django_db
def test_the_mode_cannot_change(alice):
    made = create_webhook(alice, {"name": "jira", "mode": "secret", "action": UNBLOCK})
    response = alice.api().patch(
        f"/api/webhooks/{made['id']}", {"mode": "signature"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("mode: ")


@pytest.mark.django_db
def test_the_admin_never_shows_a_secret_but_once_on_rotate(alice, operator):
    made = create_webhook(alice, {"name": "jira", "mode": "signature", "action": UNBLOCK})
    pk = made["id"][3:]
    page = operator.get(f"/admin/triggers/webhook/{pk}/change/")
    assert page.status_code == 200
    stored = Webhook.objects.get(pk=pk).secret
    assert made["secret"] not in page.content.decode()
    assert stored not in page.content.decode()
    rotated = operator.post(
        "/admin/triggers/webhook/",
        {"action": "rotate_secret", "_selected_action": [pk]},
        follow=True,
    )
    assert rotated.status_code == 200
    text = rotated.content.decode()
    assert "shown this once: whsec_" in text
    assert operator.get("/admin/triggers/triggerevent/").status_code == 200
    assert operator.get("/admin/triggers/triggerevent/?outcome=refused").status_code == 200
