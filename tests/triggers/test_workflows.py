"""Workflows over REST: a body is checked field by field (400 naming it), stored as given
(YAML or JSON), scoped to what the caller sees; `${input.x}` is a plain replacement."""

from __future__ import annotations

import pytest

from tests.triggers.helpers import REVIEW, create_workflow
from triggers.workflows.services import checked_body, instantiate, substitute
from vancetope.errors import BadRequest

pytestmark = pytest.mark.django_db


def test_substitute_replaces_each_input_reference_and_leaves_other_text_alone():
    # given a template with two references and a look-alike
    template = "Review ${input.topic} for ${input.year} (${event.x} stays)"
    # when it is filled
    filled = substitute(template, {"topic": "Saturn", "year": 2026})
    # then text goes in as it is, other values as JSON, the rest untouched
    assert filled == "Review Saturn for 2026 (${event.x} stays)"


def test_substitute_names_a_missing_input():
    with pytest.raises(BadRequest) as refused:
        substitute("Review ${input.topic}", {})
    assert refused.value.message == "input.topic: missing: the workflow uses it"


def test_instantiate_refuses_an_input_the_workflow_does_not_declare():
    body = checked_body(REVIEW)
    with pytest.raises(BadRequest) as refused:
        instantiate(body, {"topic": "Saturn", "color": "red"})
    assert refused.value.message == "input.color: is not an input of this workflow"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"goal": None}, "goal: is required"),
        ({"tasks": []}, "tasks: [] should be non-empty"),
        ({"colour": "red"}, "colour: is not a field of a workflow"),
        (
            {"tasks": [{"kind": "PLAN", "title": "x", "goal": "y"}]},
            "tasks[0].kind: 'PLAN' is not one of ['WORKER', 'USER_INPUT', 'AGGREGATE']",
        ),
        ({"tasks": [{"kind": "WORKER", "goal": "y"}]}, "tasks[0].title: is required"),
        ({"inputs": ["topic", "topic"]}, "inputs: names must be distinct"),
        ({"inputs": []}, "goal: uses ${input.topic}, which is not in inputs"),
    ],
)
def test_a_bad_workflow_body_is_a_400_naming_the_field(alice, change, message):
    # given the review workflow with one field changed (None: left out)
    body = {**REVIEW, **change}
    body = {key: value for key, value in body.items() if value is not None}
    # when it is posted
    response = alice.api().post("/api/workflows", body, format="json")
    # then it is refused, naming the field, and nothing is stored
    assert response.status_code == 400
    assert response.json()["message"] == message
    assert alice.api().get("/api/workflows").json()["count"] == 0


def test_a_workflow_given_as_yaml_is_stored_with_its_source_and_defaults(alice):
    # given the workflow as YAML text
    source = (
        "name: moons\ngoal: Count the moons of ${input.planet}\ninputs: [planet]\n"
        "tasks:\n  - kind: WORKER\n    title: Count\n    goal: count the moons of ${input.planet}\n"
    )
    # when it is posted as application/yaml
    response = alice.api().post(
        f"/api/workflows?project={alice.project_id}", source, content_type="application/yaml"
    )
    # then it is stored with the default engine, and its source as given
    assert response.status_code == 201, response.json()
    workflow = response.json()
    assert (workflow["name"], workflow["engine"], workflow["inputs"]) == (
        "moons",
        "marvin",
        ["planet"],
    )
    assert workflow["source"] == source
    assert workflow["id"].startswith("wf_")


def test_yaml_that_does_not_parse_is_a_400_naming_the_body(alice):
    response = alice.api().post("/api/workflows", "name: [unclosed", content_type="text/yaml")
    assert response.status_code == 400
    assert response.json()["message"].startswith("body: is neither YAML nor JSON")


def test_workflows_are_listed_replaced_and_deleted_and_another_tenants_is_a_404(alice, bob):
    # given alice's workflow
    workflow_id = create_workflow(alice)
    # when she replaces it
    replaced = alice.api().put(
        f"/api/workflows/{workflow_id}", {**REVIEW, "description": "v2"}, format="json"
    )
    # then it is changed, and listed once
    assert replaced.status_code == 200
    assert replaced.json()["description"] == "v2"
    listing = alice.api().get("/api/workflows").json()
    assert [row["id"] for row in listing["results"]] == [workflow_id]
    # and bob sees nothing of it
    assert bob.api().get(f"/api/workflows/{workflow_id}").status_code == 404
    assert bob.api().delete(f"/api/workflows/{workflow_id}").status_code == 404
    assert bob.api().get("/api/workflows").json()["count"] == 0
    # when alice deletes it, it is gone
    assert alice.api().delete(f"/api/workflows/{workflow_id}").status_code == 204
    assert alice.api().get(f"/api/workflows/{workflow_id}").status_code == 404


def test_a_second_workflow_of_the_same_name_in_a_project_is_a_409_naming_it(alice):
    create_workflow(alice)
    response = alice.api().post("/api/workflows", REVIEW, format="json")
    assert response.status_code == 409
    assert response.json()["message"] == "name: 'review' is taken in this project"


@pytest.mark.parametrize("project_id", [None, 7])
def test_a_replacement_whose_project_id_is_not_an_id_is_a_400_and_changes_nothing(
    alice, project_id
):
    # given alice's workflow
    workflow_id = create_workflow(alice)
    # when she replaces it with a body whose projectId is null or a number
    response = alice.api().put(
        f"/api/workflows/{workflow_id}",
        {**REVIEW, "description": "v2", "projectId": project_id},
        format="json",
    )
    # then it is refused, naming projectId, and the workflow is as it was
    assert response.status_code == 400
    assert response.json()["field"] == "projectId"
    stored = alice.api().get(f"/api/workflows/{workflow_id}").json()
    assert stored["description"] != "v2"
