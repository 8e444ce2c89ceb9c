"""What a turn spent before a budget ended it is counted: the turn is not committed, but its
calls' tokens were spent, and the tree's spend (run logs, a project's) must show them."""

from __future__ import annotations

import pytest

from processes.actions.create import create_process
from tests.support.tenancy import open_session
from tests.support.waiting import closed_process

VERDICT = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "fail"]}},
    "required": ["verdict"],
}


@pytest.mark.django_db(transaction=True)
def test_the_tokens_of_the_turn_a_budget_ended_are_counted(alice, script):
    # given a worker whose act step answers in 12 words, and a tree budget of 10 tokens
    script([{"engine": "frankie", "step": "act", "reply": " ".join(["word"] * 12)}])
    session = open_session(alice)
    worker = create_process(
        session,
        goal="judge it",
        engine="frankie",
        params={"outputSchema": VERDICT, "maxTokens": 10},
    )
    # when its report step is refused by the budget
    closed = closed_process(worker.pk)
    assert closed.close_reason == "FAILED"
    assert closed.last_error.startswith("budget maxTokens exceeded")
    # then the act call's tokens are on the row: the prompt's words and the 12 of the answer
    assert closed.completion_tokens == 12
    assert closed.prompt_tokens > 0
    assert closed.llm_calls == 1
