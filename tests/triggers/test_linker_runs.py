"""The brain linker as a system client (issue 14 item 5, "Done when"): a cron job's
`brain_linker` action runs the linker in a system session of client type brain_linker, with a
run log; an uncertain contradiction becomes an APPROVAL whose answer settles it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from inbox.models import InboxItem, InboxKind, InboxStatus
from sessions_app.models import ClientType, Session, SessionStatus
from tests.support.linker import SIX, contradiction_script, verdict, write
from tests.support.memory import embedded
from tests.support.openai_stub import OpenAIStubServer, StubReply
from tests.support.tenancy import Tenancy
from triggers.cron import jobs as cron
from triggers.cron.fire import fire
from triggers.models import CronJob, FiringOutcome, Notification, RunLog, RunStatus
from vancetope.llm.factory import reset_provider_cache
from vancetope.memory.models import EdgeType, KnowledgeEdge, MemoryItem

pytestmark = pytest.mark.django_db(transaction=True)


def linker_job(tenancy: Tenancy, max_llm_calls: int | None = 10, **action: Any) -> CronJob:
    body = {
        "projectId": tenancy.project_id,
        "schedule": "30 2 * * *",
        "action": {
            "type": "brain_linker",
            "strategies": ["contradiction_scan"],
            "constraints": {"maxLlmCalls": max_llm_calls},
            **action,
        },
    }
    return cron.create_job(tenancy.user, body)


def run_now(tenancy: Tenancy, job: CronJob) -> RunLog:
    """`POST /api/cron-jobs/{id}/run`, and the run it made (finished: the linker runs in the
    firing)."""
    response = tenancy.api().post(f"/api/cron-jobs/{job.public_id}/run", format="json")
    assert response.status_code == 201, response.json()
    run_id = response.json()["firing"]["runId"]
    return RunLog.objects.get(pk=int(run_id.removeprefix("run_")))


def six_items(tenancy: Tenancy) -> list[MemoryItem]:
    items = [write(tenancy, text) for text in SIX]
    embedded()
    return items


def test_a_cron_job_runs_the_linker_end_to_end_with_its_run_log(alice, script):
    # given six items of alice's project, two of which contradict each other
    script(contradiction_script(confidence=0.95))
    items = six_items(alice)
    job = linker_job(alice, max_llm_calls=4)
    # when the job is run now over REST
    run = run_now(alice, job)
    # then the run log is a brain_linker run triggered by cron, finished
    assert (run.client_type, run.trigger_type, run.cron_id) == (
        "brain_linker",
        "cron",
        job.public_id,
    )
    assert run.status == RunStatus.COMPLETED
    assert 1 <= run.llm_calls <= 4
    assert run.tokens_used > 0
    assert run.tasks_executed == run.llm_calls
    assert run.owner == alice.user
    assert "1 contradicts" in run.transitions.get(to_status="completed").detail
    # in a system session of its own, closed again
    session = Session.objects.get(pk=run.session_id)
    assert session.client_type == ClientType.BRAIN_LINKER
    assert session.system
    assert session.status == SessionStatus.CLOSED
    # and the contradicts edge was written, the older item invalidated, nothing else
    edge = KnowledgeEdge.objects.get()
    assert (edge.type, edge.from_item_id, edge.to_item_id) == (
        EdgeType.CONTRADICTS,
        items[-1].pk,
        items[0].pk,
    )
    assert edge.created_by_id == run.public_id
    assert MemoryItem.objects.get(pk=items[0].pk).valid_to is not None
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 5
    # the run log reads the same over REST
    shown = alice.api().get(f"/api/runs/{run.public_id}").json()
    assert shown["clientType"] == "brain_linker"
    assert shown["trigger"]["type"] == "cron"
    assert shown["status"] == "completed"
    assert shown["llmCalls"] == run.llm_calls
    job.refresh_from_db()
    assert job.last_run_id == run.pk


def uncertain_contradiction(alice: Tenancy, script: Any) -> tuple[InboxItem, list[MemoryItem]]:
    script(contradiction_script(confidence=0.55))
    items = six_items(alice)
    run = run_now(alice, linker_job(alice))
    assert run.status == RunStatus.COMPLETED
    item = InboxItem.objects.get()
    return item, items


def test_a_low_confidence_contradiction_becomes_an_open_approval_and_invalidates_nothing(
    alice, script
):
    item, items = uncertain_contradiction(alice, script)
    postgres, mysql = items[0], items[-1]
    # an OPEN approval of the job's owner, showing both items, the reasoning, the confidence
    assert (item.kind, item.status, item.user_id) == (InboxKind.APPROVAL, "OPEN", alice.user.pk)
    assert item.origin_process_id is None
    run = RunLog.objects.get()
    assert item.origin_public_id == run.public_id
    # over REST it names its run, and no process
    shown = alice.api().get(f"/api/inbox/{item.public_id}").json()
    assert (shown["originProcessId"], shown["originRunId"]) == (None, run.public_id)
    assert postgres.content in item.body
    assert mysql.content in item.body
    assert "One engine cannot be both." in item.body
    assert "0.55" in item.body
    assert mysql.public_id in item.title
    assert postgres.public_id in item.title
    # with a notification to the owner naming it, counted by the run
    note = Notification.objects.get(user=alice.user)
    assert item.public_id in note.text
    assert note.run_id == run.pk
    assert run.notifications_sent == 1
    # nothing invalidated; the edge is there
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 6
    assert KnowledgeEdge.objects.get().valid_to is None
    # and the inbox lists it for alice over REST
    listed = alice.api().get("/api/inbox?kind=APPROVAL&status=OPEN").json()
    assert [row["id"] for row in listed["results"]] == [item.public_id]


def test_approving_the_approval_invalidates_the_older_item_and_keeps_the_edge(alice, script):
    item, items = uncertain_contradiction(alice, script)
    response = alice.api().post(
        f"/api/inbox/{item.public_id}/answer", {"answer": {"decision": "approve"}}, format="json"
    )
    assert response.status_code == 200, response.json()
    older = MemoryItem.objects.get(pk=items[0].pk)
    edge = KnowledgeEdge.objects.get()
    assert older.valid_to is not None
    assert older.invalidated_reason.startswith(f"contradicted by {items[-1].public_id}")
    assert older.invalidated_reason.endswith("approved by user-alice")
    assert edge.valid_to is None
    item.refresh_from_db()
    assert item.status == InboxStatus.ANSWERED
    assert item.origin_delivered is True
    assert item.origin_note == f"{items[0].public_id} invalidated; {edge.public_id} stays"


def test_rejecting_the_approval_invalidates_the_edge_and_keeps_both_items(alice, script):
    item, items = uncertain_contradiction(alice, script)
    response = alice.api().post(
        f"/api/inbox/{item.public_id}/answer", {"answer": {"decision": "reject"}}, format="json"
    )
    assert response.status_code == 200, response.json()
    edge = KnowledgeEdge.objects.get()
    assert edge.valid_to is not None
    assert edge.invalidated_reason == "rejected by user-alice"
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 6
    # a second answer is a 409 and changes nothing
    again = alice.api().post(
        f"/api/inbox/{item.public_id}/answer", {"answer": {"decision": "approve"}}, format="json"
    )
    assert again.status_code == 409
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 6


def test_max_llm_calls_1_with_more_pairs_is_completed_partial(alice, script):
    script([{"engine": "brain_linker", "reply": verdict("unrelated", 0.9)}])
    write(alice, "The production database runs on PostgreSQL 16.")
    write(alice, "Deploys to production happen every Tuesday afternoon.")
    write(alice, "The production database runs on MySQL 8.")
    write(alice, "Production deploys happen on Tuesday afternoons.")
    embedded()
    run = run_now(alice, linker_job(alice, max_llm_calls=1))
    assert run.status == RunStatus.COMPLETED_PARTIAL
    assert run.llm_calls == 1
    assert "stopped at maxLlmCalls" in run.transitions.get(to_status="completed_partial").detail


def test_a_provider_failure_fails_the_run_with_the_error_and_nothing_crashes(alice, script):
    script([{"engine": "brain_linker", "error": "provider down"}])
    six_items(alice)
    job = linker_job(alice)
    firing = fire(job.pk)
    assert firing is not None
    run = RunLog.objects.get()
    assert run.status == RunStatus.FAILED
    assert "the LLM call failed: provider down" in run.error
    assert run.llm_calls >= 1
    assert firing.outcome == FiringOutcome.FAILED
    assert "provider down" in firing.reason
    # the owner hears of it, and the run's session is closed
    assert "failed" in Notification.objects.get(user=alice.user).text
    assert Session.objects.get(pk=run.session_id).status == SessionStatus.CLOSED
    assert not KnowledgeEdge.objects.exists()


def test_a_later_run_looks_only_at_items_written_since_the_last_completed_run(alice, script):
    script(contradiction_script(confidence=0.95))
    six_items(alice)
    job = linker_job(alice)
    first = run_now(alice, job)
    assert first.llm_calls == 1
    # nothing new since: the second run finds no recent item, so no pair at all
    second = run_now(alice, job)
    assert (second.status, second.llm_calls) == (RunStatus.COMPLETED, 0)
    assert "0 pairs considered" in second.transitions.get(to_status="completed").detail
    # an item written after it is recent for the third, which pairs it with its neighbour
    newest = write(alice, "The production database runs on MariaDB 11.")
    embedded()
    third = run_now(alice, job)
    assert third.llm_calls >= 1
    assert KnowledgeEdge.objects.filter(from_item=newest).count() == 0  # unrelated, per script


@pytest.mark.parametrize(
    ("strategies", "message"),
    [
        (["guess"], "action.strategies: unknown strategy 'guess'"),
        ([""], "action.strategies.0: String should have at least 1 character"),
    ],
)
def test_an_unknown_strategy_is_a_400_naming_the_field(alice, strategies, message):
    body = {
        "projectId": alice.project_id,
        "schedule": "30 2 * * *",
        "action": {"type": "brain_linker", "strategies": strategies},
    }
    response = alice.api().post("/api/cron-jobs", body, format="json")
    assert response.status_code == 400
    assert response.json()["message"].startswith(message)
    assert not CronJob.objects.exists()


def test_no_strategies_named_runs_both(alice):
    job = linker_job(alice, strategies=[])
    assert job.action["strategies"] == ["contradiction_scan", "support_scan"]


def test_a_run_through_the_real_openai_client_against_the_local_stub(alice, settings):
    with OpenAIStubServer() as stub:
        settings.VANCETOPE_LLM = "openai"
        settings.OPENAI_BASE_URL = stub.base_url
        settings.OPENAI_API_KEY = "sk-test"
        reset_provider_cache()
        items = six_items(alice)
        stub.queue(
            StubReply(
                text="```json\n"
                + json.dumps(
                    {"reasoning": "Two engines.", "verdict": "contradicts", "confidence": 0.9}
                )
                + "\n```"
            )
        )
        run = run_now(alice, linker_job(alice))
        asked = [r for r in stub.recorded if r.path == "/v1/chat/completions"]
    reset_provider_cache()
    assert run.status == RunStatus.COMPLETED
    assert run.llm_calls == len(asked) == 1
    messages = asked[0].body["messages"]
    assert messages[0]["role"] == "system"
    assert '{"reasoning":' in messages[0]["content"]
    assert "PostgreSQL 16" in messages[1]["content"]
    assert "MySQL 8" in messages[1]["content"]
    edge = KnowledgeEdge.objects.get()
    assert (edge.type, edge.reasoning, edge.confidence) == ("contradicts", "Two engines.", 0.9)
    assert MemoryItem.objects.get(pk=items[0].pk).valid_to is not None


def test_an_operator_rejects_it_in_the_admin_through_the_same_service(alice, script, operator):
    item, items = uncertain_contradiction(alice, script)
    changelist = reverse("admin:inbox_inboxitem_changelist")
    listing = operator.get(changelist).content.decode()
    assert f"{item.origin_public_id} (no process: a system client&#x27;s)" in listing
    response = operator.post(
        changelist, {"action": "reject_items", "_selected_action": [item.pk]}, follow=True
    )
    assert response.status_code == 200
    assert KnowledgeEdge.objects.get().invalidated_reason == "rejected by root"
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == len(items)
