"""The admin's recipe pages: a recipe that shadows a wider one says so, and engine roles are
checked as the REST writes check them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from recipes_app.models import Recipe, RecipeScope
from tests.support.admin import recipe_form

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_recipe_list_and_page_name_what_a_recipe_shadows(operator, alice):
    # given a project recipe named like the bundled chat recipe
    mine = Recipe.objects.create(
        name="ford", engine="ford", scope=RecipeScope.PROJECT, project=alice.project
    )
    # when
    listing = operator.get(reverse("admin:recipes_recipe_changelist"))
    page = operator.get(reverse("admin:recipes_recipe_change", args=[mine.pk]))
    # then
    assert listing.status_code == 200
    assert "bundled ford" in listing.content.decode()
    assert page.status_code == 200
    assert "bundled ford" in page.content.decode()
    admin_of = listing.context["cl"].model_admin
    bundled = Recipe.objects.get(name="ford", scope=RecipeScope.BUNDLED)
    assert (admin_of.shadows(mine), admin_of.shadows(bundled)) == ("bundled ford", "-")


def test_the_recipe_form_refuses_unknown_engine_roles(operator, alice):
    response = operator.post(
        reverse("admin:recipes_recipe_add"), recipe_form(alice, roles='["tool-prober", "root"]')
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["roles"] == ["unknown engine roles: root; known: tool-health-writer, tool-prober"]
    assert not Recipe.objects.filter(name="ford-coding").exists()
