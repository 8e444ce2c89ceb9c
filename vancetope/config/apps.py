from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_delete

# The models whose rows are scopes (a tenant's settings go with it by their foreign key).
SCOPE_MODELS = {
    "group": "tenancy.ProjectGroup",
    "project": "tenancy.Project",
    "session": "brain_sessions.Session",
}


class ConfigConfig(AppConfig):
    name = "vancetope.config"
    label = "config"
    verbose_name = "Settings"

    def ready(self) -> None:
        # The Brain's own keys (llm.*) register themselves on import; engines add theirs
        # from EnginesConfig.ready().
        from vancetope.config import keys  # noqa: F401

        for scope, model in SCOPE_MODELS.items():
            post_delete.connect(
                _forget_scope(scope), sender=model, weak=False, dispatch_uid=f"settings-{scope}"
            )


def _forget_scope(scope: str) -> Any:
    """A deleted group, project or session takes its settings along, so a row that later gets
    the same primary key (SQLite reuses the highest) never inherits them."""

    def forget(sender: Any, instance: Any, **kwargs: Any) -> None:
        from vancetope.config.services import forget_scope

        forget_scope(scope, instance.pk)

    return forget
