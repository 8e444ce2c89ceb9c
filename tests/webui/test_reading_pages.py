"""The pages a person reads, through Django's test client: the process page's conversation
(who speaks, Markdown made safe, tool calls as blocks, old turns folded), its run rows and
item cards; the runs page's folded chat turns; the chats list and going back into a chat."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from inbox.services import post_item
from processes.actions.create import create_process
from processes.actions.sessions import close_session
from processes.models import ConversationMessage, ThinkProcess
from sessions_app.models import ClientType
from tests.support.tenancy import Tenancy, open_session
from triggers.models import RunLog, RunStatus, TriggerType
from webui.conversation import RECENT

pytestmark = pytest.mark.django_db(transaction=True)


def logged_in(tenancy: Tenancy) -> Client:
    client = Client()
    client.force_login(tenancy.user)
    return client


def converse(process: ThinkProcess, messages: list[dict]) -> None:
    """The messages as the process's turns would have stored them."""
    for index, message in enumerate(messages):
        ConversationMessage.objects.create(process=process, index=index, **message)
    ThinkProcess.objects.filter(pk=process.pk).update(conversation_length=len(messages))


def test_a_workers_page_labels_its_goal_and_shows_its_tool_calls_as_blocks(alice):
    # given a worker whose conversation has a goal, a tool call and its result, and an answer
    session = open_session(alice, "web")
    worker = create_process(session, goal="count the rings", engine="ford", start=False)
    call = {"id": "c1", "name": "web_search", "arguments": {"query": "Saturn rings", "k": 3}}
    converse(
        worker,
        [
            {"role": "user", "content": "count the rings"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": '{"hits": ["seven"]}', "tool_call_id": "c1"},
            {"role": "user", "content": "[control: report] Call report_result"},
            {
                "role": "assistant",
                "content": "**Seven** rings <script>alert(1)</script> ![x](http://x.test/a.png)",
            },
        ],
    )
    # when
    page = logged_in(alice).get(reverse("webui:process", args=[worker.public_id]))
    html = page.content.decode()
    # then who speaks is said, and nothing of the worker is the person's own bubble
    kinds = [turn["kind"] for turn in page.context["turns"]["recent"]]
    assert kinds == ["goal", "assistant", "control", "assistant"]
    assert f"goal of {worker.public_id}" in html
    assert "speaker-person" not in html
    # the tool call is a block: its name, its arguments as rows, its result folded
    assert 'data-tool="web_search"' in html
    assert '<th scope="row">query</th><td>Saturn rings</td>' in html
    assert '<th scope="row">k</th><td>3</td>' in html
    assert '<details class="fold"><summary>result</summary><pre class="result">' in html
    assert "{&quot;hits&quot;: [&quot;seven&quot;]}" in html
    # the answer is Markdown, its script removed
    assert "<strong>Seven</strong> rings" in html
    assert "<script>alert(1)</script>" not in html
    assert "x.test" not in html


def test_a_long_conversation_folds_all_but_its_recent_turns(alice):
    session = open_session(alice, "web")
    chat = ThinkProcess.objects.get(pk=session.chat_process_id)
    converse(
        chat,
        [
            {"role": "user" if index % 2 == 0 else "assistant", "content": f"turn {index}"}
            for index in range(RECENT + 6)
        ],
    )
    response = logged_in(alice).get(reverse("webui:process", args=[chat.public_id]))
    turns = response.context["turns"]
    assert [turn["text"] for turn in turns["earlier"]] == [f"turn {i}" for i in range(6)]
    assert len(turns["recent"]) == RECENT
    assert "6 earlier messages</summary>" in response.content.decode()
    assert turns["recent"][-2]["label"] == "you"


def test_a_process_page_lists_its_runs_as_rows_and_its_items_as_cards(alice):
    session = open_session(alice, "web")
    chat = ThinkProcess.objects.get(pk=session.chat_process_id)
    run = RunLog.objects.create(
        owner=alice.user,
        project=alice.project,
        client_type=ClientType.WEB,
        trigger_type=TriggerType.USER,
        status=RunStatus.COMPLETED,
        process_public_id=chat.public_id,
        started_at=timezone.now() - timedelta(seconds=4),
        finished_at=timezone.now(),
        tokens_used=321,
    )
    item = post_item(chat, "QUESTION", "Which **ring**?", "Pick *one*.", [])
    html = logged_in(alice).get(reverse("webui:process", args=[chat.public_id])).content.decode()
    assert f'data-run="{run.public_id}"' in html
    assert '<span class="run-tokens" title="tokens in 0 LLM calls">321 tokens</span>' in html
    assert '<span class="run-duration" title="duration">4.0 s</span>' in html
    assert f'<li class="item-card" data-item="{item.public_id}" data-status="OPEN">' in html
    assert "<em>one</em>" in html
    assert '<pre class="json">' not in html.split('id="runs"')[1]


def a_run(tenancy: Tenancy, trigger: str, status: str, minutes_ago: int) -> RunLog:
    started = timezone.now() - timedelta(minutes=minutes_ago)
    return RunLog.objects.create(
        owner=tenancy.user,
        project=tenancy.project,
        client_type=ClientType.WEB if trigger == TriggerType.USER else ClientType.WORKFLOW,
        trigger_type=trigger,
        status=status,
        started_at=started,
        finished_at=started + timedelta(seconds=2),
    )


def test_the_runs_page_folds_stretches_of_routine_chat_turns(alice):
    # given, oldest first: two chat turns, a workflow run, a failed chat turn, three turns
    for minutes, trigger, status in [
        (9, TriggerType.USER, RunStatus.COMPLETED),
        (8, TriggerType.USER, RunStatus.COMPLETED),
        (7, TriggerType.WORKFLOW, RunStatus.COMPLETED),
        (6, TriggerType.USER, RunStatus.FAILED),
        (5, TriggerType.USER, RunStatus.COMPLETED),
        (4, TriggerType.USER, RunStatus.COMPLETED),
        (3, TriggerType.USER, RunStatus.COMPLETED),
    ]:
        a_run(alice, trigger, status, minutes)
    # when
    entries = logged_in(alice).get(reverse("webui:runs")).context["entries"]
    # then newest first: three turns folded, the failed turn and the workflow run each a row,
    # then two turns folded
    shape = [
        f"fold of {len(entry['fold'])}" if "fold" in entry else entry["run"]["trigger"]["type"]
        for entry in entries
    ]
    assert shape == ["fold of 3", "user", "workflow", "fold of 2"]


def test_the_chats_list_names_each_chat_by_its_first_words_and_how_to_go_back(alice, bob):
    web = open_session(alice, "web")
    converse(
        ThinkProcess.objects.get(pk=web.chat_process_id),
        [{"role": "user", "content": "plan  the\nweek"}, {"role": "assistant", "content": "ok"}],
    )
    cli = open_session(alice, "cli")
    closed = open_session(alice, "web")
    close_session(closed.pk)
    system = open_session(alice, "workflow", system=True)
    theirs = open_session(bob, "web")
    # when
    response = logged_in(alice).get(reverse("webui:sessions"))
    html = response.content.decode()
    # then alice's own chats, not the system's or bob's
    listed = [row["id"] for row in response.context["sessions"]]
    assert set(listed) == {web.public_id, cli.public_id, closed.public_id}
    assert f'data-session="{system.public_id}"' not in html
    assert f'data-session="{theirs.public_id}"' not in html
    row = next(row for row in response.context["sessions"] if row["id"] == web.public_id)
    assert (row["title"], row["messages"]) == ("plan the week", 2)
    assert f'href="/interactive/?session={web.public_id}"' in html
    assert f"vance chat --session {cli.public_id}" in html
    assert f'href="/interactive/?session={closed.public_id}"' not in html


def test_interactive_mode_of_a_process_goes_back_into_its_own_web_chat(alice, bob):
    web = open_session(alice, "web")
    worker = create_process(web, goal="count", engine="ford", start=False)
    cli = open_session(alice, "cli")
    theirs = open_session(bob, "web")
    client = logged_in(alice)

    def resumed(query: str) -> str:
        return client.get(reverse("webui:interactive") + query).context["resume_session"]

    assert resumed(f"?process={worker.public_id}") == web.public_id
    assert resumed(f"?process=tp_{web.chat_process_id}") == web.public_id
    # a terminal's session, another person's process or no process: the tab's own session
    assert resumed(f"?process=tp_{cli.chat_process_id}") == ""
    assert resumed(f"?process=tp_{theirs.chat_process_id}") == ""
    assert resumed("?process=nonsense") == ""
