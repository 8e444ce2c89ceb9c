"""/healthz tells why a check failed (internal hosts and ports) to staff only."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from vancetope.tenancy.models import ApiToken

BROKEN_BROKER = "redis://127.0.0.1:1/0"


@pytest.fixture
def broken_broker(settings):  # type: ignore[no-untyped-def]
    settings.VANCETOPE_WORKER = "celery"
    settings.CELERY_BROKER_URL = BROKEN_BROKER


def test_a_probe_gets_ok_or_failed_per_component_and_no_host_or_port(db, broken_broker):
    response = APIClient().get("/healthz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert {name: check["ok"] for name, check in checks.items()} == {
        "database": True,
        "channelLayer": True,
        "broker": False,
    }
    assert checks["broker"]["detail"] == "failed"
    assert "127.0.0.1" not in response.content.decode()


def test_a_wrong_token_is_a_probe_too_not_a_401(db, broken_broker):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer vt_wrong")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["detail"] == "failed"


def test_a_member_who_is_not_staff_is_not_told_why(alice, broken_broker):
    response = alice.api().get("/healthz")
    assert response.json()["checks"]["broker"]["detail"] == "failed"


def test_staff_logged_in_are_told_why_with_the_host_and_port(operator, broken_broker):
    response = operator.get("/healthz")
    assert response.status_code == 503
    detail = response.json()["checks"]["broker"]["detail"]
    assert detail.startswith("failed: ")
    assert "127.0.0.1:1" in detail or "port 1" in detail or "Connection refused" in detail


def test_staff_by_token_are_told_why(db, broken_broker):
    user = get_user_model().objects.create_user("ops", password="pw", is_staff=True)
    _, raw = ApiToken.issue(user, name="ops")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    detail = client.get("/healthz").json()["checks"]["broker"]["detail"]
    assert detail.startswith("failed: ")
    assert detail != "failed"


def test_a_healthy_brain_says_what_answered(db):
    body = Client().get("/healthz").json()
    assert body["ok"] is True
    assert body["checks"]["broker"]["detail"] == "in-process"
