"""Secret setting values at rest: Fernet ciphertext under the settings key.

`VANCETOPE_SETTINGS_KEY` holds one or more Fernet keys, comma-separated (the first encrypts,
all decrypt, so the key can be rotated); unset, one is derived from SECRET_KEY.
"""

from __future__ import annotations

import base64
import hashlib
import logging

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

log = logging.getLogger(__name__)


def _fernet() -> MultiFernet:
    configured = [key.strip() for key in str(settings.VANCETOPE_SETTINGS_KEY).split(",")]
    keys = [key for key in configured if key]
    if not keys:
        digest = hashlib.sha256(b"vancetope-settings-key:" + settings.SECRET_KEY.encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    return MultiFernet([Fernet(key.encode()) for key in keys])


def encrypt(value: str) -> str:
    return _fernet().encrypt(value.encode()).decode()


def decrypt(stored: str, key: str) -> str | None:
    """The clear value, or None when no configured key decrypts it (the key was rotated away):
    the setting then falls back to the next wider scope, with one warning."""
    try:
        return _fernet().decrypt(stored.encode()).decode()
    except (InvalidToken, ValueError):
        log.warning(
            "setting %s: stored secret cannot be decrypted with VANCETOPE_SETTINGS_KEY", key
        )
        return None
