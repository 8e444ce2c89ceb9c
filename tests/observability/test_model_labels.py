"""/metrics' `model` label (issue 42): an LLM call is counted under its model's name only when
that model is configured (the settings llm.model, llm.fallbackModel and llm.models as a
process's settings resolve them, or a provider's own default); any other name is `other`, so
whatever a call names adds no series."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.config.helpers import set_value
from tests.support.observability import sample
from vancetope.config.llm import llm_config, project_settings
from vancetope.config.models import Scope
from vancetope.observability.genai import LlmCallWatch
from vancetope.observability.logs import Facts, bound
from vancetope.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


def scrape() -> str:
    user = get_user_model().objects.get_or_create(username="ops", is_staff=True)[0]
    _, token = ApiToken.issue(user, name="scraper")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    answer = client.get("/metrics")
    assert answer.status_code == 200, answer.content
    return answer.content.decode()


def test_a_call_of_a_model_that_is_not_configured_counts_as_other(alice, settings):
    # given a project whose model is big-model, whose settings a turn resolved
    settings.VANCETOPE_LLM_MODEL = "env-model"
    set_value("llm.model", Scope.PROJECT, alice.project, "big-model")
    llm_config(project_settings(alice.project))
    project = alice.project.public_id
    labels = {"provider": "openai", "project": project, "outcome": "ok"}
    before = scrape()
    # when five calls name models of a caller's own and one names big-model
    with bound(Facts(project=project)):
        for number in range(1, 6):
            LlmCallWatch("openai", f"o1-pro-EXPENSIVE-{number}", "synthesize", []).done("ok")
        LlmCallWatch("openai", "big-model", "synthesize", []).done("ok")
    after = scrape()

    # then the five count as `other` and big-model under its name; no other name is a label
    def moved(model: str) -> float:
        name = "vancetope_llm_calls_total"
        now = sample(after, name, model=model, **labels)
        return now - sample(before, name, model=model, **labels)

    assert moved("other") == 5
    assert moved("big-model") == 1
    assert "EXPENSIVE" not in after


def test_each_name_of_llm_models_is_a_label_of_its_own(alice):
    # given a project that lists a model a param may name, whose settings a turn resolved
    set_value("llm.models", Scope.PROJECT, alice.project, ["list-model"])
    llm_config(project_settings(alice.project))
    project = alice.project.public_id
    before = scrape()
    # when a call names it
    with bound(Facts(project=project)):
        LlmCallWatch("openai", "list-model", "synthesize", []).done("ok")
    # then it is counted under its name
    labels = {"provider": "openai", "model": "list-model", "project": project, "outcome": "ok"}
    name = "vancetope_llm_calls_total"
    assert sample(scrape(), name, **labels) - sample(before, name, **labels) == 1
