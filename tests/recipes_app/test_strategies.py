"""vogon's strategies: the JSON Schema and the checks beyond it, the bundled file, the scopes,
and the admin that edits them (a problem names its field)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.urls import reverse

from recipes_app.models import RecipeScope, Strategy
from recipes_app.strategies import (
    StrategyInvalid,
    check_strategy,
    read_bundled_strategies,
    resolve_strategy,
    sync_bundled_strategies,
)
from tests.support.tenancy import Tenancy

GOOD = {
    "name": "check-twice",
    "phases": [
        {"name": "draft", "goal": "draft ${goal}"},
        {
            "name": "review",
            "goal": "review ${draft.result}",
            "output": {
                "type": "object",
                "properties": {
                    "verdict": {"enum": ["pass", "fail"]},
                    "scores": {"type": "object", "properties": {"clarity": {"type": "number"}}},
                },
            },
            "gate": {
                "any": [
                    {"field": "verdict", "op": "==", "value": "pass"},
                    {"all": [{"field": "scores.clarity", "op": ">=", "value": 0.9}]},
                ]
            },
            "checkpoint": {"title": "Ship ${goal}?", "body": "${review.output.verdict}"},
        },
    ],
}


def changed(change: Any) -> dict[str, Any]:
    document = copy.deepcopy(GOOD)
    change(document)
    return document


def test_the_example_and_the_bundled_strategies_fit():
    check_strategy(GOOD)
    bundled = read_bundled_strategies()
    assert "draft-review-ship" in {entry["name"] for entry in bundled}


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        (
            lambda d: d["phases"][1]["gate"]["any"][0].update(op="approx"),
            "phases[1].gate.any[0].op",
            "'approx' is not one of",
        ),
        (
            lambda d: d["phases"][1]["gate"]["any"][1]["all"][0].update(value="high"),
            "phases[1].gate.any[1].all[0].value",
            "'high' is not of type 'number'",
        ),
        (
            lambda d: d["phases"][1]["gate"]["any"][0].update(field="verdcit"),
            "phases[1].gate.any[0].field",
            "'verdcit' is not in the phase's output",
        ),
        (
            lambda d: d["phases"][0].update(gate={"field": "score", "op": "==", "value": 1}),
            "phases[0].gate.field",
            "the phase declares no output",
        ),
        (
            lambda d: d["phases"][1].update(goal="review ${drfat.result}"),
            "phases[1].goal",
            "${drfat.result} names no earlier phase (earlier: draft)",
        ),
        (
            lambda d: d["phases"][0].update(goal="${review.result} first"),
            "phases[0].goal",
            "names no earlier phase",
        ),
        (
            lambda d: d["phases"][1].update(goal="${draft.output}"),
            "phases[1].goal",
            "phase 'draft' declares no output",
        ),
        (
            lambda d: d["phases"][1].update(name="draft"),
            "phases[1].name",
            "'draft' names an earlier phase",
        ),
        (
            lambda d: d["phases"][1]["checkpoint"].pop("title"),
            "phases[1].checkpoint",
            "'title' is a required property",
        ),
        (
            lambda d: d["phases"][1]["output"].update(type="string"),
            "phases[1].output.type",
            "'object' was expected",
        ),
        (
            lambda d: d["phases"][1]["output"]["properties"].update(verdict={"type": "strin"}),
            "phases[1].output.properties.verdict.type",
            "",
        ),
        (lambda d: d["phases"][0].pop("goal"), "phases[0]", "'goal' is a required property"),
        (lambda d: d.update(phases=[]), "phases", "should be non-empty"),
        (lambda d: d["phases"][0].update(recipe="Not Kebab"), "phases[0].recipe", "does not match"),
    ],
)
def test_a_strategy_that_does_not_fit_names_the_field(change, where, message):
    with pytest.raises(StrategyInvalid) as invalid:
        check_strategy(changed(change))
    assert invalid.value.where == where
    assert message in invalid.value.message


def test_a_bundled_file_with_a_bad_strategy_is_refused_naming_it(tmp_path: Path):
    path = tmp_path / "strategies.yaml"
    path.write_text(yaml.safe_dump([{"name": "bad", "phases": [{"name": "x"}]}]))
    with pytest.raises(ValueError, match=r"strategy #0: phases\[0\]: 'goal' is a required"):
        read_bundled_strategies(path)


@pytest.mark.django_db
def test_syncing_the_bundled_strategies_is_idempotent_and_drops_removed_ones(tmp_path: Path):
    path = tmp_path / "strategies.yaml"
    path.write_text(yaml.safe_dump([GOOD]))
    Strategy.objects.create(name="gone", scope=RecipeScope.BUNDLED, phases=GOOD["phases"])
    assert sync_bundled_strategies(path) == 1
    assert sync_bundled_strategies(path) == 1
    assert list(Strategy.objects.values_list("name", "scope")) == [("check-twice", "bundled")]


def scope_of(project: Any, name: str) -> str | None:
    found = resolve_strategy(project, name)
    return found.scope if found is not None else None


@pytest.mark.django_db
def test_the_narrowest_scope_wins(alice: Tenancy, bob: Tenancy):
    phases = GOOD["phases"]
    Strategy.objects.create(name="check-twice", scope=RecipeScope.BUNDLED, phases=phases)
    Strategy.objects.create(
        name="check-twice", scope=RecipeScope.TENANT, tenant=alice.tenant, phases=phases
    )
    assert scope_of(alice.project, "check-twice") == RecipeScope.TENANT
    assert scope_of(bob.project, "check-twice") == RecipeScope.BUNDLED
    Strategy.objects.create(
        name="check-twice",
        scope=RecipeScope.PROJECT,
        project=alice.project,
        tenant=alice.tenant,
        phases=phases,
    )
    assert scope_of(alice.project, "check-twice") == RecipeScope.PROJECT
    assert scope_of(alice.project, "no-such") is None


# --- the admin -----------------------------------------------------------------------------------


def strategy_form(tenancy: Tenancy, **changes: Any) -> dict[str, Any]:
    return {
        "name": "check-twice",
        "title": "Check twice",
        "description": "",
        "phases": yaml.safe_dump(GOOD["phases"], sort_keys=False),
        "scope": "project",
        "tenant": str(tenancy.tenant.pk),
        "project": str(tenancy.project.pk),
        **changes,
    }


@pytest.mark.django_db
def test_the_admin_saves_a_strategy_written_in_yaml(operator, alice):
    response = operator.post(reverse("admin:recipes_strategy_add"), strategy_form(alice))
    assert response.status_code == 302
    saved = Strategy.objects.get(name="check-twice", scope=RecipeScope.PROJECT)
    assert saved.phases == GOOD["phases"]
    # and shows it as YAML again
    page = operator.get(reverse("admin:recipes_strategy_change", args=[saved.pk]))
    assert page.status_code == 200
    assert "gate:" in page.content.decode()


@pytest.mark.django_db
def test_the_admin_refuses_a_strategy_that_does_not_fit_naming_the_field(operator, alice):
    phases = changed(lambda d: d["phases"][1]["gate"]["any"][0].update(op="approx"))["phases"]
    response = operator.post(
        reverse("admin:recipes_strategy_add"),
        strategy_form(alice, phases=yaml.safe_dump(phases)),
    )
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["phases"]
    assert error.startswith("phases[1].gate.any[0].op: 'approx' is not one of ['==', ")
    assert not Strategy.objects.filter(scope=RecipeScope.PROJECT).exists()


@pytest.mark.django_db
def test_the_admin_refuses_text_that_is_not_yaml_and_the_bundled_scope(operator, alice):
    not_yaml = operator.post(
        reverse("admin:recipes_strategy_add"), strategy_form(alice, phases="phases: [")
    )
    assert not_yaml.context["adminform"].form.errors["phases"][0].startswith("not YAML or JSON")
    bundled = operator.post(
        reverse("admin:recipes_strategy_add"),
        strategy_form(alice, scope="bundled", tenant="", project=""),
    )
    assert "strategies.yaml" in bundled.context["adminform"].form.errors["scope"][0]
    assert not Strategy.objects.filter(name="check-twice").exists()


@pytest.mark.django_db
def test_bundled_strategies_are_shown_read_only(operator, alice):
    bundled = Strategy.objects.get(name="draft-review-ship", scope=RecipeScope.BUNDLED)
    url = reverse("admin:recipes_strategy_change", args=[bundled.pk])
    page = operator.get(url)
    edit = operator.post(url, strategy_form(alice, name="draft-review-ship", title="hacked"))
    assert page.status_code == 200
    assert page.context["has_change_permission"] is False
    assert edit.status_code == 403
    assert Strategy.objects.get(pk=bundled.pk).title == bundled.title
