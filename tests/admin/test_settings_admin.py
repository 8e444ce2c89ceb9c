"""The admin's settings pages: values are checked against their key as the API checks them,
every change raises the settings revision, and a secret is write-only there too."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from vancetope.config.cascade import current_revision
from vancetope.config.models import Setting

pytestmark = pytest.mark.django_db(transaction=True)


def form(alice: Any, key: str, value: str, scope: str = "project") -> dict[str, Any]:
    scope_id = alice.project.pk if scope == "project" else alice.tenant.pk
    return {"key": key, "scope": scope, "scope_id": scope_id, "value": value}


def test_a_value_set_in_the_admin_is_checked_and_raises_the_revision(operator, alice):
    # when an operator sets a well-typed and an ill-typed value
    added = operator.post(reverse("admin:config_setting_add"), form(alice, "llm.model", '"big"'))
    refused = operator.post(
        reverse("admin:config_setting_add"), form(alice, "arthur.maxSteps", '"six"')
    )
    # then the first is stored for alice's tenant, the second refused naming the problem
    assert added.status_code == 302
    row = Setting.objects.get()
    assert (row.key, row.scope, row.scope_id, row.tenant_id, row.value) == (
        "llm.model",
        "project",
        alice.project.pk,
        alice.tenant.pk,
        "big",
    )
    assert current_revision() == 1
    assert refused.status_code == 200
    errors = refused.context["adminform"].form.errors
    assert errors["value"] == ["arthur.maxSteps: must be an integer, not str 'six'"]
    # and a scope that does not exist is refused too
    missing = {**form(alice, "llm.model", '"x"'), "scope_id": 999_999}
    gone = operator.post(reverse("admin:config_setting_add"), missing)
    assert gone.context["adminform"].form.errors["scope_id"] == ["project 999999 not found"]


def test_a_secret_is_write_only_in_the_admin(operator, alice):
    # given an API key set in the admin
    operator.post(reverse("admin:config_setting_add"), form(alice, "llm.apiKey", '"sk-admin-1"'))
    row = Setting.objects.get()
    # when the list and the row's page are shown
    listing = operator.get(reverse("admin:config_setting_changelist"))
    page = operator.get(reverse("admin:config_setting_change", args=[row.pk]))
    # then neither shows it
    assert "***" in listing.content.decode()
    for shown in (listing, page):
        assert "sk-admin-1" not in shown.content.decode()
    # when the row is saved with the value left empty, the stored secret is kept
    change = reverse("admin:config_setting_change", args=[row.pk])
    assert operator.post(change, form(alice, "llm.apiKey", "")).status_code == 302
    assert Setting.objects.get().value == row.value
    # and deleting it in the admin raises the revision as well
    before = current_revision()
    operator.post(reverse("admin:config_setting_delete", args=[row.pk]), {"post": "yes"})
    assert not Setting.objects.exists()
    assert current_revision() == before + 1
