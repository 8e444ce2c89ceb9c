"""What an operator reads first in the admin: a process's status, goal and work above its
internals (lease, fence, counters: folded); a bundled strategy's phases as YAML; the
scheduler's own models labelled as internals, its schedules hidden, its entries read-only."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from processes.models import ThinkProcess
from processes.states import Status
from recipes_app.models import RecipeScope, Strategy
from tests.support.tenancy import open_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def fieldset_of(html: str, field: str) -> str:
    """The heading (or "top") of the fieldset that shows `field`, and whether it is folded."""
    position = html.index(f"field-{field}")
    start = html.rfind("<fieldset", 0, position)
    opening = html[start : html.index(">", start) + 1]
    heading = re.search(r"<h2[^>]*>(.*?)</h2>", html[start:position], re.S)
    folded = "collapse" in opening or "<details" in html[start:position]
    return f"{heading.group(1).strip() if heading else 'top'}{' (folded)' if folded else ''}"


def test_the_process_page_shows_status_and_goal_first_and_folds_the_internals(operator, alice):
    session = open_session(alice)
    chat = session.chat_process_id
    wait_until(lambda: ThinkProcess.objects.get(pk=chat).status == Status.IDLE)
    html = operator.get(reverse("admin:processes_thinkprocess_change", args=[chat])).content
    page = html.decode()
    # what an operator reads first: open, at the top
    for field in ("status", "goal", "think_engine", "last_error"):
        assert fieldset_of(page, field) == "top", field
    assert page.index("field-status") < page.index("field-lease_owner")
    # the lane's bookkeeping and the engine's raw state: one click away
    for field in ("lease_owner", "lease_fence", "next_pending_seq", "consumed_count"):
        assert fieldset_of(page, field).endswith("(folded)"), field
        assert "Internals" in fieldset_of(page, field)
    assert fieldset_of(page, "engine_state") == "Engine state (folded)"
    assert fieldset_of(page, "prompt_tokens") == "Usage (folded)"


def test_a_bundled_strategy_shows_its_phases_as_yaml_not_json(operator, recipes):
    bundled = Strategy.objects.get(name="draft-review-ship", scope=RecipeScope.BUNDLED)
    page = operator.get(reverse("admin:recipes_strategy_change", args=[bundled.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert '<pre class="strategy-yaml">- name: research' in html
    assert "gate:" in html
    assert "{&quot;name&quot;: &quot;research&quot;" not in html


def test_the_scheduler_models_are_labelled_internal_and_its_schedules_hidden(operator):
    index = operator.get(reverse("admin:index")).content.decode()
    assert "Scheduler internals (django-celery-beat): schedule work with Cron jobs" in index
    assert ">Cron jobs</a>" in index
    for hidden in ("Clocked", "Crontabs", "Intervals", "Solar events"):
        assert f">{hidden}</a>" not in index, hidden
    # its entries (the sweeps) are shown, never changed here
    every = IntervalSchedule.objects.create(every=10, period="seconds")
    sweep = PeriodicTask.objects.create(
        name="sweep lanes", task="processes.sweep_lanes", interval=every
    )
    url = reverse("admin:django_celery_beat_periodictask_change", args=[sweep.pk])
    page = operator.get(url)
    assert page.status_code == 200
    assert 'name="_save"' not in page.content.decode()
    assert operator.post(url, {"name": "renamed"}).status_code == 403
    assert PeriodicTask.objects.get(pk=sweep.pk).name == sweep.name
    assert operator.get(reverse("admin:django_celery_beat_periodictask_add")).status_code == 403
