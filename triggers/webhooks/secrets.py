"""Webhook secrets: made, stored, rotated and checked.

Secret mode: the token is 32 random bytes (URL-safe text); only its SHA-256 is stored, and a
delivery's `X-Webhook-Secret` is compared with it by `hmac.compare_digest`. Signature mode
(Standard Webhooks v1): the `whsec_` secret is needed to check each HMAC, so it is stored
encrypted with Fernet under the webhook key (`VANCETOPE_WEBHOOK_KEY`: one or more Fernet keys,
comma-separated, the first encrypting, all decrypting, so the key itself can be rotated;
derived from SECRET_KEY when unset), and checked by the `standardwebhooks` package on the raw
body. A rotation keeps the previous secret valid for `VANCETOPE_WEBHOOK_ROTATE_GRACE_SECONDS`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.utils import timezone
from standardwebhooks import Webhook as Signer
from standardwebhooks import WebhookVerificationError

from triggers.models import Webhook, WebhookMode

SIGNATURE_PREFIX = "whsec_"
# Standard Webhooks' tolerance for webhook-timestamp (the package checks the same window).
TOLERANCE = timedelta(minutes=5)


def _fernet() -> MultiFernet:
    configured = [key.strip() for key in str(settings.VANCETOPE_WEBHOOK_KEY).split(",")]
    keys = [key for key in configured if key]
    if not keys:
        digest = hashlib.sha256(b"vancetope-webhook-key:" + settings.SECRET_KEY.encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    return MultiFernet([Fernet(key.encode()) for key in keys])


def new_secret(mode: str) -> str:
    """A fresh secret of the mode, in clear (shown once)."""
    if mode == WebhookMode.SIGNATURE:
        return SIGNATURE_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()
    return secrets.token_urlsafe(32)


def stored_form(mode: str, secret: str) -> str:
    """What the row keeps of a secret: its hash (secret mode) or its ciphertext."""
    if mode == WebhookMode.SIGNATURE:
        return _fernet().encrypt(secret.encode()).decode()
    return hashlib.sha256(secret.encode()).hexdigest()


def set_new_secret(webhook: Webhook, *, keep_previous: bool) -> str:
    """Give the webhook a new secret (unsaved); with `keep_previous`, the current one stays
    valid for the grace period. Returns the new secret in clear."""
    secret = new_secret(webhook.mode)
    if keep_previous and webhook.secret:
        grace = float(settings.VANCETOPE_WEBHOOK_ROTATE_GRACE_SECONDS)
        webhook.previous_secret = webhook.secret
        webhook.previous_until = now() + timedelta(seconds=grace)
    else:
        webhook.previous_secret, webhook.previous_until = "", None
    webhook.secret = stored_form(webhook.mode, secret)
    return secret


def now() -> datetime:
    """The clock the grace period is read with (a test may move it)."""
    return timezone.now()


def _valid_forms(webhook: Webhook) -> list[str]:
    forms = [webhook.secret]
    if webhook.previous_secret and webhook.previous_until and now() < webhook.previous_until:
        forms.append(webhook.previous_secret)
    return forms


def secret_matches(webhook: Webhook, given: str) -> bool:
    """Secret mode: the header's token against the stored hashes, in constant time."""
    digest = hashlib.sha256(given.encode()).hexdigest()
    # Every valid form is compared, so the time taken does not say which one matched.
    results = [hmac.compare_digest(digest, form) for form in _valid_forms(webhook)]
    return any(results)


def signature_matches(webhook: Webhook, body: bytes, headers: Mapping[str, str]) -> bool:
    """Signature mode: any entry of webhook-signature made with a valid secret over the raw
    body (never re-serialized), checked by the standardwebhooks package."""
    for form in _valid_forms(webhook):
        try:
            secret = _fernet().decrypt(form.encode()).decode()
        except InvalidToken:
            continue  # encrypted under a key no longer configured: it cannot match
        try:
            Signer(secret).verify(body, dict(headers), json_parse=False)
        except (WebhookVerificationError, ValueError, binascii.Error, UnicodeDecodeError):
            continue
        return True
    return False


def timestamp_problem(header: str | None) -> str:
    """Why a webhook-timestamp is refused (400), or "" when it is absent or within tolerance."""
    if header is None:
        return ""
    try:
        moment = datetime.fromtimestamp(float(header), tz=UTC)
    except (ValueError, OverflowError, OSError):
        return f"webhook-timestamp: {header[:40]!r} is not a Unix time in seconds"
    # Real time, as the standardwebhooks package reads it.
    current = datetime.now(tz=UTC)
    if moment < current - TOLERANCE:
        return "webhook-timestamp: too old (more than 5 minutes before now)"
    if moment > current + TOLERANCE:
        return "webhook-timestamp: in the future (more than 5 minutes after now)"
    return ""
