"""A WebSocket opened with an API token closes (4401) once the token is revoked or deleted, or
its user is deactivated or deleted, in whichever Brain process holds it.

Every socket joins a channel-layer group for its user and one for its token (sessions_app's
consumer); a change that takes the right away is sent to those groups once it has committed,
so it reaches sockets in other Brain processes through Redis. The signals catch every path
that saves or deletes the rows (the admin's forms and actions, the services, a shell).
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from vancetope.infra.channel_layer import ThreadSafeInMemoryChannelLayer
from vancetope.tenancy.models import ApiToken

log = logging.getLogger(__name__)

# The message a socket in these groups closes on (its handler is `auth_revoked`).
REVOKED = {"type": "auth.revoked"}


def token_group(token_pk: int) -> str:
    return f"auth.token.{token_pk}"


def user_group(user_pk: int) -> str:
    return f"auth.user.{user_pk}"


def announce_revoked(group: str) -> None:
    """Tell the sockets of `group` to close, once the surrounding transaction commits."""
    transaction.on_commit(lambda: _send(group))


def _send(group: str) -> None:
    layer: Any = get_channel_layer()
    if layer is None:
        return
    try:
        if isinstance(layer, ThreadSafeInMemoryChannelLayer):
            # The embedded layer hands the message to the sockets' loop without waiting.
            layer.group_send_now(group, dict(REVOKED))
        else:
            async_to_sync(layer.group_send)(group, dict(REVOKED))
    except Exception:
        log.exception("could not close the sockets of %s", group)


def _token_saved(sender: Any, instance: ApiToken, **kwargs: Any) -> None:
    if instance.revoked_at is not None:
        announce_revoked(token_group(instance.pk))


def _token_deleted(sender: Any, instance: ApiToken, **kwargs: Any) -> None:
    announce_revoked(token_group(instance.pk))


def _user_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if not instance.is_active:
        announce_revoked(user_group(instance.pk))


def _user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    announce_revoked(user_group(instance.pk))


def connect_signals() -> None:
    users = get_user_model()
    post_save.connect(_token_saved, sender=ApiToken, dispatch_uid="vt-token-saved")
    post_delete.connect(_token_deleted, sender=ApiToken, dispatch_uid="vt-token-deleted")
    post_save.connect(_user_saved, sender=users, dispatch_uid="vt-user-saved")
    post_delete.connect(_user_deleted, sender=users, dispatch_uid="vt-user-deleted")
