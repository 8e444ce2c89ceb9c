"""One way to refuse (vancetope/errors.py): a BadRequest names its field for every face."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from vancetope.errors import BadRequest, NotFound, form_error


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    maxTasks: int = 1


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["go"]
    limits: Limits = Limits()


def test_naming_a_field_sets_it_and_begins_the_message_with_it():
    refused = BadRequest.naming("action.type", "must be one of go")
    assert (refused.code, refused.error, refused.field) == (400, "invalid", "action.type")
    assert refused.message == "action.type: must be one of go"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "go", "limits": {"maxTasks": "3"}}, "action.limits.maxTasks"),
        ({"type": "go", "colour": 1}, "action.colour"),
        ({}, "action.type"),
    ],
)
def test_a_model_refusal_names_the_path_of_its_first_problem(body, field):
    with pytest.raises(ValidationError) as problem:
        Action.model_validate(body)
    refused = BadRequest.from_validation(problem.value, under="action")
    assert refused.field == field
    assert refused.message.startswith(f"{field}: ")


def test_an_admin_form_shows_a_refusal_on_the_field_it_names():
    refused = BadRequest.naming("action.input.topic", "missing")
    assert form_error(refused, {"action": "action"}).message_dict == {
        "action": ["action.input.topic: missing"]
    }
    assert form_error(NotFound("gone"), {"action": "action"}).messages == ["gone"]
    assert form_error(NotFound("gone"), {}, default="action").message_dict == {"action": ["gone"]}
