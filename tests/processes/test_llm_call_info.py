"""An engine's LLM calls say who makes them (engine, step, recipe), so a scripted provider's
rules can target one step of one engine (docs/protocol.md, "Scripted provider")."""

from __future__ import annotations

import pytest

from processes.actions.create import create_process
from processes.models import ConversationMessage
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until


@pytest.mark.django_db(transaction=True)
def test_a_rule_for_fords_answer_step_in_the_ford_recipe_answers_its_call(alice, script):
    # given a script whose first rule is for another engine and whose second is ford's step
    script(
        [
            {"engine": "marvin", "reply": "not for ford"},
            {
                "engine": "ford",
                "step": "answer",
                "recipe": "ford",
                "reply": "ford answers by its step",
            },
        ]
    )
    session = open_session(alice)
    # when a ford worker answers its goal
    worker = create_process(session, goal="what is the step?", engine="ford")

    # then the reply came from the rule for ford's `answer` step
    def reply() -> str | None:
        found = ConversationMessage.objects.filter(process_id=worker.pk, role="assistant")
        return found.values_list("content", flat=True).first()

    assert wait_until(reply) == "ford answers by its step"
