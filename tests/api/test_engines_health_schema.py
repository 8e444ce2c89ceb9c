"""REST /api/think-engines, /healthz, the OpenAPI document and its docs page."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from django.db import connection
from drf_spectacular.drainage import GENERATOR_STATS
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db(transaction=True)


def test_think_engines_lists_ford_with_its_description(alice):
    # when
    response = alice.api().get("/api/think-engines")
    # then
    assert response.status_code == 200
    engines = {engine["name"]: engine for engine in response.json()["results"]}
    ford = engines["ford"]
    assert set(ford) == {
        "name",
        "title",
        "description",
        "version",
        "aliases",
        "allowedTools",
        "defaultSettings",
    }
    assert re.fullmatch(r"\d+\.\d+\.\d+", ford["version"])
    assert ford["title"]
    assert isinstance(ford["allowedTools"], list)
    assert isinstance(ford["defaultSettings"], dict)


def test_think_engines_need_a_token(alice):
    response = APIClient().get("/api/think-engines")
    assert response.status_code == 401
    assert response.json()["code"] == 401


def test_healthz_reports_database_channel_layer_and_broker(db):
    # when: no token needed, it is a liveness probe
    response = APIClient().get("/healthz")
    # then
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert set(body["checks"]) == {"database", "channelLayer", "broker"}
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["database"]["detail"] == connection.vendor
    assert body["checks"]["broker"]["detail"] == "in-process"
    assert all(check["ms"] >= 0 for check in body["checks"].values())


def test_healthz_is_503_when_a_check_fails(db, settings):
    # given a broker that cannot be reached
    settings.VANCETOPE_WORKER = "celery"
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    # when
    response = APIClient().get("/healthz")
    # then
    assert response.status_code == 503
    body = response.json()
    assert body["ok"] is False
    assert body["checks"]["broker"]["ok"] is False
    # to a probe (no login): failed, not why (that names internal hosts and ports)
    assert body["checks"]["broker"]["detail"] == "failed"
    assert body["checks"]["database"]["ok"] is True


def test_schema_is_an_openapi_document_with_the_process_paths(db):
    # when
    response = APIClient().get("/api/schema/", {"format": "json"})
    # then
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    assert "/api/processes" in paths
    assert "/api/processes/{process_id}" in paths
    for verb in ("start", "pause", "resume", "steer", "stop", "reset"):
        assert "post" in paths[f"/api/processes/{{process_id}}/{verb}"]
    assert {"/api/sessions", "/api/recipes", "/api/think-engines"} <= set(paths)
    status_filter = next(
        p for p in paths["/api/processes"]["get"]["parameters"] if p["name"] == "status"
    )
    assert "CLOSED" in status_filter["schema"]["enum"]


def test_schema_offers_the_api_token_as_a_bearer_scheme(db):
    schema = json.loads(APIClient().get("/api/schema/", {"format": "json"}).content)
    assert schema["components"]["securitySchemes"]["apiToken"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API token: `Authorization: Bearer <token>` (or `Token <token>`).",
    }
    assert {"apiToken": []} in schema["paths"]["/api/processes"]["get"]["security"]


def test_schema_generates_without_warnings_and_validates(db, tmp_path):
    # given a clean slate (the generator counts warnings process-wide)
    GENERATOR_STATS.reset()
    target = tmp_path / "schema.yaml"
    # when: fails with SchemaGenerationError on any warning or an invalid document
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(target))
    # then
    assert "/api/recipes/{name}:" in target.read_text()
    assert "operationId: processes_list" in target.read_text()


def test_docs_page_renders_without_any_external_cdn(db):
    # when
    response = APIClient().get("/api/docs/")
    # then
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert "swagger-ui" in page
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in page
    assert '"/api/schema/"' in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "cdn.jsdelivr.net" not in page
    assert "unpkg.com" not in page


def test_schema_describes_every_answer_with_a_real_shape(db):
    # when
    schema = json.loads(APIClient().get("/api/schema/", {"format": "json"}).content)
    # then every body is a named component, never a bare object
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for code, response in operation["responses"].items():
                if code == "204":
                    continue
                body = response["content"]["application/json"]["schema"]
                assert body.get("$ref", "").startswith("#/components/schemas/"), (method, path)
    components = schema["components"]["schemas"]
    process = components["ProcessObject"]
    assert process["additionalProperties"] is False
    assert set(process["required"]) == set(process["properties"])
    page = schema["paths"]["/api/processes"]["get"]["responses"]["200"]["content"]
    assert page["application/json"]["schema"] == {"$ref": "#/components/schemas/ProcessPage"}
    assert components["ProcessPage"]["required"] == ["count", "next", "previous", "results"]
    steer = schema["paths"]["/api/processes/{process_id}/steer"]["post"]["responses"]
    assert set(steer) == {"200", "400", "401", "404", "409", "429"}
    assert "/healthz" in schema["paths"]
