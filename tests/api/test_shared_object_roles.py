"""The roles matrix of a project's shared objects (README "Roles"): members
read and run webhooks, workflows, documents and project memory (its knowledge graph too);
only admins of the project (or its tenant) create, change, rotate or delete them; a refusal
is a 403 (404 for who does not see the project) and changes nothing. Cron jobs belong to
their owner: only admins of the project create, change or delete one.

Before the fix a plain member rotated the admin's webhook secret, changed and deleted
webhooks, replaced and deleted shared workflows and documents.
"""

from __future__ import annotations

from typing import Any

import pytest

from processes.actions.create import create_process
from processes.actions.sessions import create_session
from processes.models import ThinkProcess
from recipes_app.models import RecipeScope, Strategy
from sessions_app.services import FingerprintData
from tests.support.roles import (
    MEMBER,
    OTHER_PROJECT_ADMIN,
    OUTSIDER,
    PROJECT_ADMIN,
    ROLES,
    TENANT_ADMIN,
    Caller,
    caller,
)
from tests.support.tenancy import Tenancy
from triggers.models import CronJob, Webhook, Workflow
from vancetope.errors import BadRequest
from vancetope.memory.models import Document, KnowledgeEdge, MemoryItem

pytestmark = pytest.mark.django_db(transaction=True)

UNBLOCK = {"type": "unblock_tasks", "match": {"blockedByExternal": "jira:${event.issue.key}"}}
WORKFLOW = {
    "name": "review",
    "goal": "Review ${input.topic}",
    "inputs": ["topic"],
    "tasks": [{"kind": "AGGREGATE", "title": "Report", "goal": "write the review"}],
}
# What each role gets for a write: allowed, or the status of the refusal.
WRITES = {
    TENANT_ADMIN: 0,
    PROJECT_ADMIN: 0,
    OTHER_PROJECT_ADMIN: 404,
    MEMBER: 403,
    OUTSIDER: 404,
}
# And for a read or a run of a shared object.
READS = {**WRITES, MEMBER: 0}


def expect(status: int, code: int, allowed: set[int]) -> None:
    assert (status in allowed) if code == 0 else status == code, status


def webhook_of(alice: Tenancy) -> dict[str, Any]:
    made = alice.api().post(
        "/api/webhooks",
        {"name": "jira", "mode": "secret", "action": UNBLOCK, "projectId": alice.project_id},
        format="json",
    )
    assert made.status_code == 201, made.json()
    return made.json()


def webhook_state() -> list[tuple[str, dict[str, Any], str]]:
    return [(row.name, row.filter, row.secret) for row in Webhook.objects.order_by("pk")]


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_create_change_rotate_and_delete_webhooks(
    role: str, alice: Tenancy, bob: Tenancy
) -> None:
    # given the tenant admin's webhook, and a caller in `role`
    hook = webhook_of(alice)
    who = caller(role, alice, bob)
    before = webhook_state()
    url = f"/api/webhooks/{hook['id']}"
    # when they read it, and try every write
    read = who.api.get(url)
    writes = [
        who.api.post(
            "/api/webhooks",
            {"name": "mine", "mode": "secret", "action": UNBLOCK, "projectId": alice.project_id},
            format="json",
        ),
        who.api.patch(url, {"filter": {"issue.status": "Done"}}, format="json"),
        who.api.post(f"{url}/rotate-secret"),
    ]
    deleted = who.api.delete(url)
    # then reads follow READS, writes follow WRITES, and a refusal changed nothing
    expect(read.status_code, READS[role], {200})
    for answer in writes:
        expect(answer.status_code, WRITES[role], {200, 201})
    expect(deleted.status_code, WRITES[role], {204})
    if WRITES[role]:
        assert webhook_state() == before
    else:
        assert not Webhook.objects.filter(name="jira").exists()


@pytest.mark.parametrize("role", ROLES)
def test_members_run_workflows_and_only_admins_write_them(
    role: str, alice: Tenancy, bob: Tenancy
) -> None:
    # given the tenant admin's workflow
    made = alice.api().post("/api/workflows", WORKFLOW, format="json")
    assert made.status_code == 201, made.json()
    url = f"/api/workflows/{made.json()['id']}"
    who = caller(role, alice, bob)
    # when they read, run, create, replace and delete
    read = who.api.get(url)
    run = who.api.post(f"{url}/run", {"input": {"topic": "tides"}}, format="json")
    created = who.api.post(
        "/api/workflows", {**WORKFLOW, "name": "mine", "projectId": alice.project_id}, "json"
    )
    replaced = who.api.put(url, {**WORKFLOW, "goal": "Replaced ${input.topic}"}, format="json")
    deleted = who.api.delete(url)
    # then
    expect(read.status_code, READS[role], {200})
    expect(run.status_code, READS[role], {201})
    expect(created.status_code, WRITES[role], {201})
    expect(replaced.status_code, WRITES[role], {200})
    expect(deleted.status_code, WRITES[role], {204})
    if WRITES[role]:
        assert list(Workflow.objects.values_list("name", "body__goal")) == [
            ("review", "Review ${input.topic}")
        ]


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_upload_and_delete_documents_members_read_them(
    role: str, alice: Tenancy, bob: Tenancy
) -> None:
    # given the tenant admin's document
    body = {"project": alice.project_id, "title": "Handbook", "content": "Deploys on Monday."}
    made = alice.api().post("/api/documents", body, format="json")
    assert made.status_code == 201, made.json()
    url = f"/api/documents/{made.json()['id']}"
    who = caller(role, alice, bob)
    # when
    read = who.api.get(url)
    uploaded = who.api.post("/api/documents", {**body, "title": "Mine"}, format="json")
    deleted = who.api.delete(url)
    # then
    expect(read.status_code, READS[role], {200})
    expect(uploaded.status_code, WRITES[role], {201})
    expect(deleted.status_code, WRITES[role], {204})
    if WRITES[role]:
        assert list(Document.objects.values_list("title", flat=True)) == ["Handbook"]


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_write_project_memory_members_read_it(
    role: str, alice: Tenancy, bob: Tenancy
) -> None:
    # given a project memory item the tenant admin wrote
    body = {"scope": "project", "scopeId": alice.project_id, "key": "deploys", "content": "Mon"}
    made = alice.api().post("/api/memory", body, format="json")
    assert made.status_code == 201, made.json()
    url = f"/api/memory/{made.json()['id']}"
    who = caller(role, alice, bob)
    # when
    read = who.api.get(url)
    written = who.api.post("/api/memory", {**body, "key": "mine"}, format="json")
    changed = who.api.patch(url, {"content": "Tue"}, format="json")
    removed = who.api.delete(url)
    # then
    expect(read.status_code, READS[role], {200})
    expect(written.status_code, WRITES[role], {201})
    expect(changed.status_code, WRITES[role], {200})
    expect(removed.status_code, WRITES[role], {200, 204})
    if WRITES[role]:
        valid = MemoryItem.objects.filter(valid_to__isnull=True)
        assert list(valid.values_list("key", "content")) == [("deploys", "Mon")]


@pytest.mark.parametrize("role", ROLES)
def test_only_admins_link_and_invalidate_project_knowledge_members_read_it(
    role: str, alice: Tenancy, bob: Tenancy
) -> None:
    # given two project memory items, a document, and an edge the tenant admin drew between
    # an item and the document's chunk
    api = alice.api()
    items = [
        api.post(
            "/api/memory",
            {"scope": "project", "scopeId": alice.project_id, "key": key, "content": text},
            format="json",
        ).json()["id"]
        for key, text in (("deploys", "Deploys on Monday."), ("freeze", "No deploys in May."))
    ]
    document = api.post(
        "/api/documents",
        {"project": alice.project_id, "title": "Handbook", "content": "Deploys on Monday."},
        format="json",
    ).json()["id"]
    made = api.post(
        "/api/knowledge/edges",
        {"type": "supports", "fromId": f"{document}:0", "toId": items[0]},
        format="json",
    )
    assert made.status_code == 201, made.json()
    url = f"/api/knowledge/edges/{made.json()['id']}"
    who = caller(role, alice, bob)
    # when
    read = who.api.get(url)
    linked = who.api.post(
        "/api/knowledge/edges",
        {"type": "contradicts", "fromId": items[0], "toId": items[1]},
        format="json",
    )
    invalidated = who.api.post(f"{url}/invalidate", {"reason": "wrong"}, format="json")
    # then
    expect(read.status_code, READS[role], {200})
    expect(linked.status_code, WRITES[role], {201})
    expect(invalidated.status_code, WRITES[role], {200})
    if WRITES[role]:
        edges = KnowledgeEdge.objects.values_list("type", "valid_to")
        assert list(edges) == [("supports", None)]


def nightly(chat_id: int) -> dict[str, Any]:
    """A cron job's body: continue the chat `chat_id` every night."""
    return {
        "name": "nightly",
        "schedule": "0 3 * * *",
        "action": {"type": "process_continue", "processId": f"tp_{chat_id}"},
    }


def own_chat(who: Caller, alice: Tenancy) -> int:
    session = create_session(
        who.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="ford",
    )
    assert session.chat_process_id is not None
    return session.chat_process_id


@pytest.mark.parametrize("role", [TENANT_ADMIN, PROJECT_ADMIN, MEMBER])
def test_only_admins_of_the_project_create_cron_jobs_in_it(
    role: str, alice: Tenancy, bob: Tenancy
) -> None:
    # given a caller's own chat process in alice's project
    who = caller(role, alice, bob)
    chat_id = own_chat(who, alice)
    body = nightly(chat_id)
    # when they schedule it
    answer = who.api.post("/api/cron-jobs", body, format="json")
    # then admins may; a member is refused and nothing is scheduled
    expect(answer.status_code, WRITES[role], {201})
    assert CronJob.objects.count() == (0 if WRITES[role] else 1)
    assert ThinkProcess.objects.filter(pk=chat_id).exists()


def test_a_member_who_lost_admin_no_longer_changes_or_deletes_their_cron_job(
    alice: Tenancy, bob: Tenancy
) -> None:
    # given a project admin's cron job, then their role lowered to member
    who = caller(PROJECT_ADMIN, alice, bob)
    chat_id = own_chat(who, alice)
    body = nightly(chat_id)
    made = who.api.post("/api/cron-jobs", body, format="json")
    assert made.status_code == 201, made.json()
    who.user.project_memberships.update(role="member")
    url = f"/api/cron-jobs/{made.json()['id']}"
    # when they change and delete it
    changed = who.api.patch(url, {"schedule": "0 4 * * *"}, format="json")
    deleted = who.api.delete(url)
    # then both are refused and the job is as it was
    assert (changed.status_code, deleted.status_code) == (403, 403)
    assert list(CronJob.objects.values_list("name", flat=True)) == ["nightly"]


@pytest.mark.parametrize("role", [OTHER_PROJECT_ADMIN, OUTSIDER])
def test_who_does_not_see_the_project_cannot_schedule_its_processes(
    role: str, alice: Tenancy, bob: Tenancy
) -> None:
    # given the tenant admin's chat process in the project
    admin = caller(TENANT_ADMIN, alice, bob)
    chat_id = own_chat(admin, alice)
    who = caller(role, alice, bob)
    body = nightly(chat_id)
    # when an admin of another project, or a user of another tenant, schedules it
    answer = who.api.post("/api/cron-jobs", body, format="json")
    # then it is not found for them, and nothing is scheduled
    assert answer.status_code == 404, answer.json()
    assert not CronJob.objects.exists()


@pytest.mark.parametrize("role", ROLES)
def test_the_projects_strategies_run_for_its_members_only_and_no_one_writes_them_over_rest(
    role: str, alice: Tenancy, bob: Tenancy, recipes: None
) -> None:
    # given a vogon strategy of the project (operators write strategies in the admin)
    phases = [{"name": "triage", "goal": "sort the tickets", "recipe": "ford"}]
    Strategy.objects.create(
        name="triage",
        phases=phases,
        scope=RecipeScope.PROJECT,
        tenant=alice.tenant,
        project=alice.project,
    )
    who = caller(role, alice, bob)
    session = create_session(
        who.user,
        client_type="cli",
        project_id=who.project.public_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="ford",
    )
    # when they run it from their own session, and try to write strategies over REST
    try:
        process = create_process(
            session, goal="triage", engine="vogon", params={"strategy": "triage"}, start=False
        )
        ran = process.engine_params["strategy"]["phases"][0]["name"]
    except BadRequest as refused:
        ran = refused.field
    written = who.api.post("/api/strategies", {"name": "mine", "phases": phases}, format="json")
    # then the project's people run it, who does not see the project does not find it
    sees_project = READS[role] == 0
    assert ran == ("triage" if sees_project else "params.strategy")
    # and strategies have no REST face to write through
    assert written.status_code == 404
    assert list(Strategy.objects.filter(project__isnull=False).values_list("name", flat=True)) == [
        "triage"
    ]
