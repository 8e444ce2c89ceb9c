"""Every unknown path under /api/ answers the JSON error body, not Django's HTML 404 page."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path",
    [
        "/api/nope",
        "/api/nope/",
        "/api/processes/",
        "/api/think-engines/",
        "/api/processes/tp_1/explode",
        "/api/processes/tp_1/explode/",
        "/api",
        "/api/",
    ],
)
def test_an_unknown_api_path_is_a_json_404_naming_it(alice, path):
    # when
    response = alice.api().get(path)
    # then
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "code": 404,
        "error": "no-endpoint",
        "message": f"no API endpoint {path}; the endpoints are listed at /api/docs/",
    }


def test_an_unknown_api_path_is_json_without_a_token_too(db):
    response = APIClient().post("/api/nope/", {}, format="json")
    assert response.status_code == 404
    assert response.json()["error"] == "no-endpoint"


def test_a_known_row_that_is_missing_stays_the_brains_own_not_found(alice):
    response = alice.api().get("/api/processes/tp_999999")
    assert response.status_code == 404
    assert response.json()["error"] == "not-found"
