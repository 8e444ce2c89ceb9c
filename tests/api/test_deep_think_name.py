"""`deep-think` is one name everywhere: as a `thinkEngine` it gives marvin over REST as over
the WebSocket (before, REST answered 400 while the WebSocket gave marvin), and the engine
list names it as marvin's alias."""

from __future__ import annotations

import pytest

from processes.models import ThinkProcess
from tests.support.tenancy import Tenancy, open_session

pytestmark = pytest.mark.django_db


def test_deep_think_as_a_think_engine_gives_marvin_over_rest(alice: Tenancy) -> None:
    # given a session of alice's
    session = open_session(alice)
    # when she creates a process naming deep-think as its engine
    body = {"session": session.public_id, "thinkEngine": "deep-think", "goal": "x", "start": False}
    answer = alice.api().post("/api/processes", body, format="json")
    # then it is a marvin of the deep-think recipe
    assert answer.status_code == 201, answer.json()
    assert answer.json()["thinkEngine"] == "marvin"
    created = ThinkProcess.objects.get(pk=int(answer.json()["id"].removeprefix("tp_")))
    assert created.recipe_name == "deep-think"


def test_the_engine_list_names_deep_think_as_marvins_alias(alice: Tenancy) -> None:
    listed = alice.api().get("/api/think-engines", {"limit": 50}).json()["results"]
    aliases = {engine["name"]: engine["aliases"] for engine in listed}
    assert aliases["marvin"] == ["deep-think"]
    assert aliases["ford"] == []


def test_an_unknown_engine_is_still_a_400_naming_the_field(alice: Tenancy) -> None:
    session = open_session(alice)
    body = {"session": session.public_id, "thinkEngine": "deep-thought", "goal": "x"}
    answer = alice.api().post("/api/processes", body, format="json")
    assert answer.status_code == 400
    assert "thinkEngine" in answer.json()["message"]
