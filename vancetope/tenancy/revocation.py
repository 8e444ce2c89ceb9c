"""A WebSocket opened with an API token closes (4401) once the token is revoked or deleted, or
its user is deactivated or deleted, in whichever Brain process holds it.

Every socket joins a channel-layer group for its user and one for its token (sessions_app's
consumer); a change that takes the right away is sent to those groups once it has committed,
so it reaches sockets in other Brain processes through Redis. The signals catch every path
that saves or deletes the rows (the admin's forms and actions, the services, a shell).

A change that sends no signal (a bulk `update()` of `revoked_at` or `is_active`, SQL, an
identity sync writing the rows) is found by looking: every Brain process, on either runtime,
looks every VANCETOPE_REVOCATION_POLL_SECONDS at the tokens and users of the sockets it holds
(`HeldSockets`, one statement for all of them) and sends to the groups of those whose access
is gone, as a signal would. On the embedded runtime, whose channel layer lives in the Brain's
memory, that is also how a change made in another OS process (a management command, a
script, a second admin process) reaches it.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import close_old_connections, transaction
from django.db.models import CharField, Value
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


class HeldSockets:
    """The tokens and users of the sockets this OS process holds, counted (one user may hold
    many sockets), so the Brain can look whether their access is gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: Counter[int] = Counter()
        self._users: Counter[int] = Counter()

    def hold(self, user_pk: int, token_pk: int | None) -> None:
        with self._lock:
            self._users[user_pk] += 1
            if token_pk is not None:
                self._tokens[token_pk] += 1

    def release(self, user_pk: int, token_pk: int | None) -> None:
        with self._lock:
            self._users -= Counter({user_pk: 1})
            if token_pk is not None:
                self._tokens -= Counter({token_pk: 1})

    def revoked_groups(self) -> list[str]:
        """The groups of held sockets whose token is revoked or gone, or whose user is
        inactive or gone: one statement however many sockets are held (the users still
        active and the tokens still valid, as one UNION), none when nothing is held."""
        with self._lock:
            tokens, users = set(self._tokens), set(self._users)
        if not users:
            # Every held socket has a user; a token without one is never held.
            return []
        live = (
            get_user_model()
            .objects.filter(pk__in=users, is_active=True)
            .annotate(kind=Value("user", output_field=CharField()))
            .values_list("pk", "kind")
        )
        if tokens:
            valid = (
                ApiToken.objects.filter(pk__in=tokens, revoked_at__isnull=True)
                .annotate(kind=Value("token", output_field=CharField()))
                .values_list("pk", "kind")
            )
            live = live.union(valid, all=True)
        found = set(live)
        active = {pk for pk, kind in found if kind == "user"}
        valid_tokens = {pk for pk, kind in found if kind == "token"}
        return [token_group(pk) for pk in sorted(tokens - valid_tokens)] + [
            user_group(pk) for pk in sorted(users - active)
        ]


held = HeldSockets()


def close_revoked_held() -> int:
    """Close the held sockets whose access is gone; how many groups were told."""
    groups = held.revoked_groups()
    for group in groups:
        _send(group)
    return len(groups)


def watch_revocations(stop: threading.Event) -> None:
    """Every Brain's loop (a daemon thread of `manage.py brain`, on either runtime) until
    `stop` is set: the held sockets whose access went without a signal are closed within
    VANCETOPE_REVOCATION_POLL_SECONDS."""
    interval = float(settings.VANCETOPE_REVOCATION_POLL_SECONDS)
    while not stop.wait(interval):
        try:
            close_revoked_held()
        except Exception:
            log.exception("looking for revoked access failed; trying again")
        finally:
            close_old_connections()
