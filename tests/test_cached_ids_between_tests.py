"""A worker's caches keyed by row id do not leak from one test into the next.

SQLite hands the ids of a rolled-back test's rows out again, so a session of the next test can
have the id of an earlier test's session of another project. The first test below leaves a
worker's cached facts of such a session; the second chats in a session of the same id, and its
run log (which names the session's project) must be of its own project. This failed in CI
(`Project.DoesNotExist` in the run's event) until `tests/conftest.py` dropped the cached session
facts before every test. The two run in this order."""

from __future__ import annotations

import pytest

from processes.actions.steer import send_chat
from processes.models import ThinkProcess
from processes.queries import session_facts
from processes.states import Status
from tests.support.tenancy import Tenancy, open_session
from tests.support.waiting import wait_until
from triggers.models import RunLog

pytestmark = pytest.mark.random_order(disabled=True)


@pytest.mark.django_db
def test_a_worker_reads_the_facts_of_a_session_whose_test_is_rolled_back(recipes):
    # (two tenancies: this session's project id is not the next test's)
    Tenancy("yan")
    session = open_session(Tenancy("zed"))
    facts = session_facts(session.pk)
    assert facts is not None
    assert facts.project_id == session.project_id


@pytest.mark.django_db(transaction=True)
def test_a_chat_in_a_session_of_a_reused_id_logs_its_run_in_its_own_project(recipes):
    # given a session of this test (its id may be the rolled-back test's)
    alice = Tenancy("alice")
    session = open_session(alice)
    # when its person chats
    send_chat(session.pk, "hello")
    # then the turn runs, and its run is logged in this session's project
    run = wait_until(lambda: RunLog.objects.filter(session_id=session.pk).first())
    assert run.project_id == session.project_id
    wait_until(lambda: ThinkProcess.objects.get(pk=session.chat_process_id).status == Status.IDLE)
