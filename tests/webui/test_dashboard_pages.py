"""The dashboard grouped by tree and the interactive page's choice of chat, through Django's
test client: a top-level process is one row, every process under it folded beneath it with a
count by outcome and nested by parent; trees are paged; a status filter lists the trees with a
match, the matches as rows under their tree's; a page takes as many statements for many trees
as for one. A plain visit of the interactive page goes back into the person's latest web chat
that can go on (any of their browsers; in the project asked for, if one is)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from processes.actions.create import create_process
from processes.actions.lifecycle import stop_process
from processes.actions.sessions import (
    close_session,
    create_session,
    latest_web_chat,
    resume_session,
    suspend_session,
)
from processes.models import ThinkProcess
from sessions_app.models import Session, SessionStatus, SuspendCause
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy
from vancetope.errors import Conflict
from vancetope.tenancy.models import Project, ProjectMembership
from webui import dashboard

pytestmark = pytest.mark.django_db(transaction=True)


def web_session(tenancy: Tenancy, machine: str = "browser-a", project: str = "") -> Session:
    return create_session(
        tenancy.user,
        client_type="web",
        project_id=project or tenancy.project_id,
        fingerprint=FingerprintData(machine_id=machine),
    )


def hours_ago(session: Session, hours: int) -> None:
    Session.objects.filter(pk=session.pk).update(
        last_activity_at=timezone.now() - timedelta(hours=hours)
    )


def logged_in(tenancy: Tenancy) -> Client:
    client = Client()
    client.force_login(tenancy.user)
    return client


def worker(session: Session, parent: ThinkProcess, goal: str, outcome: str = "") -> ThinkProcess:
    """A ford under `parent`, not started; `outcome` a status, or DONE/FAILED (CLOSED so)."""
    made = create_process(session, goal=goal, engine="ford", parent=parent, start=False)
    if outcome in ("DONE", "FAILED"):
        ThinkProcess.objects.filter(pk=made.pk).update(status="CLOSED", close_reason=outcome)
    elif outcome:
        ThinkProcess.objects.filter(pk=made.pk).update(status=outcome)
    return ThinkProcess.objects.get(pk=made.pk)


def chat_of(session: Session) -> ThinkProcess:
    assert session.chat_process_id is not None
    return ThinkProcess.objects.get(pk=session.chat_process_id)


def ids(processes: list[ThinkProcess]) -> list[str]:
    return [process.public_id for process in processes]


def fold_of(html: str, root: str) -> str:
    """The <details> of one tree's fold, as rendered."""
    found = re.search(
        rf'<details class="tree-fold" data-root="{root}"[^>]*>.*?</details>', html, re.S
    )
    assert found, f"no fold for {root}"
    return found.group(0)


# --- the dashboard -------------------------------------------------------------------------------


def test_a_chat_and_its_workers_are_one_row_with_the_workers_folded_and_nested(alice, bob):
    # given a chat whose workers (one with a worker of its own) ran, and a process on its own
    session = web_session(alice)
    chat = chat_of(session)
    first = worker(session, chat, "count the moons", "DONE")
    nested = worker(session, first, "count the small moons", "RUNNING")
    second = worker(session, chat, "count the rings", "DONE")
    failed = worker(session, chat, "weigh Saturn", "FAILED")
    alone = create_process(session, goal="on its own", engine="ford", start=False)
    web_session(bob)
    client = logged_in(alice)
    # when
    response = client.get(reverse("webui:processes"))
    # then the top-level processes are the rows, the newest first; bob's are not there
    assert response.status_code == 200
    assert ids(response.context["processes"]) == [alone.public_id, chat.public_id]
    tree = response.context["trees"][1]
    assert tree.summary == "4 workers: 2 DONE, 1 FAILED, 1 RUNNING"
    assert response.context["trees"][0].size == 0
    html = response.content.decode()
    # one row per tree; the workers only counted in the fold, closed, until it is asked for
    assert html.count("<tr data-process=") == 2
    fold = fold_of(html, chat.public_id)
    assert fold.startswith(f'<details class="tree-fold" data-root="{chat.public_id}">')
    assert "<summary>4 workers: 2 DONE, 1 FAILED, 1 RUNNING</summary>" in fold
    assert "<li" not in fold
    assert f'href="?open={chat.public_id}"' in fold
    assert f'data-root="{alone.public_id}"' not in html
    # when its fold is asked for open
    response = client.get(reverse("webui:processes"), {"open": chat.public_id})
    # then it is open and lists the workers, the nested one inside its parent's line
    tree = response.context["trees"][1]
    assert tree.opened is True
    assert [node.process.public_id for node in tree.nodes] == [
        first.public_id,
        second.public_id,
        failed.public_id,
    ]
    assert [node.process.public_id for node in tree.nodes[0].children] == [nested.public_id]
    fold = fold_of(response.content.decode(), chat.public_id)
    assert 'data-filled="true" open>' in fold.split("\n", 1)[0]
    parent_item = fold.split(f'<li data-process="{first.public_id}"', 1)[1]
    assert parent_item.index(nested.public_id) < parent_item.index(second.public_id)
    # an `open` that is not process ids is a 400 naming the field
    refused = client.get(reverse("webui:processes"), {"open": "tp_1,moons"})
    assert refused.status_code == 400
    assert "open must be process ids like tp_12" in refused.content.decode()


def test_a_process_on_its_own_keeps_its_workers_and_theirs_in_its_tree(alice):
    # given a process created on its own (a budget root) with a worker that has a worker
    session = web_session(alice)
    top = create_process(session, goal="plan", engine="ford", start=False)
    child = worker(session, top, "step one", "IDLE")
    grandchild = worker(session, child, "step one a", "DONE")
    assert (child.root_id, grandchild.root_id) == (top.pk, top.pk)
    # when
    response = logged_in(alice).get(reverse("webui:processes"), {"open": top.public_id})
    # then
    trees = {tree.root.public_id: tree for tree in response.context["trees"]}
    assert set(trees) == {top.public_id, f"tp_{session.chat_process_id}"}
    assert trees[top.public_id].summary == "2 workers: 1 DONE, 1 IDLE"
    [node] = trees[top.public_id].nodes
    assert [sub.process.public_id for sub in node.children] == [grandchild.public_id]


def test_trees_are_paged_not_processes(alice, monkeypatch):
    monkeypatch.setattr(dashboard, "PAGE_SIZE", 2)
    sessions = [web_session(alice) for _ in range(3)]
    for session in sessions:
        for n in range(3):
            worker(session, chat_of(session), f"work {n}", "DONE")
    client = logged_in(alice)
    chats = [f"tp_{session.chat_process_id}" for session in reversed(sessions)]
    # when
    first = client.get(reverse("webui:processes"))
    second = client.get(reverse("webui:processes"), {"page": "2"})
    # then two trees on the first page, the third on the second, with links between them
    assert ids(first.context["processes"]) == chats[:2]
    assert ids(second.context["processes"]) == chats[2:]
    assert 'href="?page=2"' in first.content.decode()
    assert "Page 1 of 2 · 3 trees" in first.content.decode()
    assert 'href="?page=1"' in second.content.decode()
    # a page past the last shows the last; one that is not a number is a 400 naming the field
    assert ids(client.get("/?page=9").context["processes"]) == chats[2:]
    refused = client.get("/?page=two")
    assert refused.status_code == 400
    assert "page must be a whole number from 1, not &#x27;two&#x27;" in refused.content.decode()


def test_a_status_filter_lists_the_trees_with_a_match_and_the_matches_under_their_top(alice):
    # given a chat with a failed worker under a done one, and a chat with nothing failed
    session = web_session(alice)
    chat = chat_of(session)
    done = worker(session, chat, "count", "DONE")
    failed = worker(session, done, "count again", "FAILED")
    web_session(alice)
    stopped = web_session(alice)
    stop_process(stopped.chat_process_id)
    client = logged_in(alice)
    # when the person asks for the CLOSED ones
    response = client.get(reverse("webui:processes"), {"status": "CLOSED"})
    # then the trees with a CLOSED process: the stopped chat (itself a match), and the first
    # chat, not CLOSED itself, shown as the context of its two CLOSED workers
    assert ids(response.context["processes"]) == [f"tp_{stopped.chat_process_id}", chat.public_id]
    tree = response.context["trees"][1]
    assert tree.matches is False
    assert [process.public_id for process, _ in tree.matching] == [done.public_id, failed.public_id]
    html = response.content.decode()
    assert f'<tr data-process="{chat.public_id}" class="tree-root context">' in html
    assert f'<tr data-process="{failed.public_id}" class="match under">' in html
    assert f"under tp_{done.pk} in {chat.public_id}" in html
    # an unknown status is a 400 naming the statuses
    assert client.get("/?status=SLEEPING").status_code == 400


def test_a_long_list_of_matches_or_of_workers_says_how_many_more_there_are(alice, monkeypatch):
    monkeypatch.setattr(dashboard, "MATCH_LIMIT", 2)
    monkeypatch.setattr(dashboard, "FOLD_LIMIT", 3)
    session = web_session(alice)
    chat = chat_of(session)
    paused = [worker(session, chat, f"wait {n}", "PAUSED") for n in range(5)]
    client = logged_in(alice)
    # when the person filters for PAUSED
    response = client.get(reverse("webui:processes"), {"status": "PAUSED"})
    # then two are rows under the chat, and the page says there are three more
    [tree] = response.context["trees"]
    assert [process.pk for process, _ in tree.matching] == [paused[0].pk, paused[1].pk]
    assert "and 3 more PAUSED under " + chat.public_id in response.content.decode()
    # and an open fold lists three and says two more are not listed here
    response = client.get(reverse("webui:processes"), {"open": chat.public_id})
    [tree] = response.context["trees"]
    assert (len(tree.nodes), tree.hidden) == (3, 2)
    assert "2 more not listed here" in response.content.decode()


def test_a_page_takes_as_many_statements_for_many_trees_as_for_one(alice):
    session = web_session(alice)
    worker(session, chat_of(session), "first", "DONE")
    client = logged_in(alice)
    client.get(reverse("webui:processes"))  # the caches of the first request

    def statements(query: dict[str, str]) -> int:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(reverse("webui:processes"), query)
        assert response.status_code == 200
        return len(captured.captured_queries)

    opened = {"open": f"tp_{session.chat_process_id}"}
    one = statements({})
    one_filtered = statements({"status": "CLOSED"})
    one_opened = statements(opened)
    # when there are five more trees of six workers each, some with workers of their own
    chats = [session.chat_process_id]
    for _ in range(5):
        more = web_session(alice)
        chats.append(more.chat_process_id)
        for n in range(6):
            made = worker(more, chat_of(more), f"work {n}", "DONE")
        worker(more, made, "deeper", "DONE")
    # then the page takes the same statements
    assert statements({}) == one
    assert statements({"status": "CLOSED"}) == one_filtered
    assert statements({"open": ",".join(f"tp_{pk}" for pk in chats)}) == one_opened


# --- the interactive page's chat -----------------------------------------------------------------


def test_a_plain_visit_goes_back_into_the_latest_web_chat_that_can_go_on(alice, bob):
    client = logged_in(alice)

    def latest() -> str:
        return client.get(reverse("webui:interactive")).context["latest_session"]

    # given no chat yet: none to go back into
    assert latest() == ""
    # when there are two web chats, the older one suspended
    older = web_session(alice)
    newer = web_session(alice, machine="browser-b")
    suspend_session(older.pk, SuspendCause.DISCONNECT)
    hours_ago(older, 2)
    hours_ago(newer, 1)
    # then the latest activity is the one (open or suspended, from any browser)
    assert latest() == newer.public_id
    resume_session(alice.user, older.pk, FingerprintData(machine_id="browser-a"), None)
    assert latest() == older.public_id
    # not a closed one, nor one whose chat is closed, a terminal's, or another person's
    close_session(older.pk)
    assert latest() == newer.public_id
    stop_process(newer.chat_process_id)
    web_session(bob)
    create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="laptop", working_dir="/w"),
    )
    assert latest() == ""
    # and a chat asked for (?new=1) is not mixed up with it
    assert client.get(reverse("webui:interactive"), {"new": "1"}).context["new_session"] is True


def test_a_project_asked_for_is_where_the_chat_is_looked_for(alice):
    other = Project.objects.create(tenant=alice.tenant, slug="other", name="Other")
    ProjectMembership.objects.create(user=alice.user, project=other)
    mine = web_session(alice)
    there = web_session(alice, project=other.public_id)
    client = logged_in(alice)
    # when the page is asked for a project, its latest chat is the one, and it is selected
    assert latest_web_chat(alice.user) == Session.objects.get(pk=there.pk)
    response = client.get(reverse("webui:interactive"), {"project": alice.project_id})
    assert response.context["latest_session"] == mine.public_id
    assert f'<option value="{alice.project_id}" selected>' in response.content.decode()
    # a project the person does not see, or no project id, is a 400 naming the field
    for wrong in ("proj_nobody", "nonsense"):
        refused = client.get(reverse("webui:interactive"), {"project": wrong})
        assert refused.status_code == 400
        assert "project: " in refused.content.decode()


def test_any_browser_of_its_owner_resumes_a_web_chat_but_a_terminal_keeps_its_machine(alice):
    web = web_session(alice, machine="browser-a")
    suspend_session(web.pk, SuspendCause.DISCONNECT)
    # when another browser of the same person goes back into it
    resumed = resume_session(alice.user, web.pk, FingerprintData(machine_id="browser-b"), None)
    # then it is open again, still under the browser that opened it
    assert (resumed.session.status, resumed.session.machine_id) == (
        SessionStatus.OPEN,
        "browser-a",
    )
    terminal = create_session(
        alice.user,
        client_type="cli",
        project_id=alice.project_id,
        fingerprint=FingerprintData(machine_id="laptop", working_dir="/w"),
    )
    suspend_session(terminal.pk, SuspendCause.DISCONNECT)
    with pytest.raises(Conflict) as refused:
        resume_session(alice.user, terminal.pk, FingerprintData(machine_id="other"), None)
    assert refused.value.error == "fingerprint-mismatch"
