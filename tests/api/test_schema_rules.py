"""Rules the server keeps that the OpenAPI document states, so a request the document allows
is accepted and one it forbids refused (tests/api/test_schema_all_checks.py runs every check on
every operation; these name each rule)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.tenancy import Tenancy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def document(client) -> dict[str, Any]:
    return client.get("/api/schema/?format=json").json()


def parameter(document: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    found = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == name]
    return found[0]["schema"]


def test_every_text_field_and_parameter_says_it_takes_no_nul_character(document) -> None:
    # given the document; then a body's text fields, free-form keys and a parameter exclude NUL
    webhook = document["components"]["schemas"]["WebhookInput"]["properties"]
    for schema in (
        webhook["name"],
        parameter(document, "/api/memory", "key"),
        document["components"]["schemas"]["CreateInput"]["properties"]["params"]["propertyNames"],
    ):
        pattern = schema["pattern"]
        assert re.search(pattern, "a\x00b") is None
        assert re.search(pattern, "ab") is not None
    assert "NUL" in document["info"]["description"]


def test_a_text_field_that_may_not_be_blank_says_so(document) -> None:
    properties = document["components"]["schemas"]["CreateInput"]["properties"]
    assert properties["session"]["minLength"] == 1


@pytest.mark.parametrize(
    ("path", "name", "good", "bad"),
    [
        ("/api/processes", "session", "sess_12", "12"),
        ("/api/inbox", "process", "tp_12", "tp_x"),
        ("/api/runs", "process", "tp_12", ""),
    ],
)
def test_an_id_parameter_carries_the_shape_of_its_ids(document, path, name, good, bad) -> None:
    pattern = parameter(document, path, name)["pattern"]
    assert re.search(pattern, good) is not None
    assert re.search(pattern, bad) is None


@pytest.mark.parametrize(
    "query",
    [
        "/api/inbox?kind=",
        "/api/inbox?status=",
        "/api/inbox?process=",
        "/api/runs?status=",
        "/api/runs?process=",
        "/api/memory?includeInvalid=",
        "/api/memory?scope=",
        "/api/knowledge/edges?createdBy=",
    ],
)
def test_an_empty_filter_value_is_a_400_not_no_filter(alice: Tenancy, query: str) -> None:
    # given a filter the document gives as an enum, a flag or an id; when it is sent empty
    response = alice.api().get(query)
    # then it is refused, naming the filter, as any other value outside the document
    assert response.status_code == 400, response.content[:300]
    assert query.split("?")[1].rstrip("=") in response.json()["message"]
