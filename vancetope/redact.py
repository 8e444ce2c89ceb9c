"""Credentials in URLs are never shown or logged.

An `llm.baseUrl` may carry them (`https://user:secret@llm.internal/v1`, as some gateways take
basic auth). Wherever a URL can be shown (a setting's value over REST, a process's lastError),
logged (every log record, its traceback too) or traced (a failed span's status), its userinfo
is replaced by `***`; the host and path stay, so the operator still sees where a call went.
"""

from __future__ import annotations

import re
from typing import Any

# A scheme, then userinfo up to the `@` that ends it (no `/`, `@` or whitespace in it).
USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/@\s]+@")


def redact(text: str) -> str:
    """`text` with the userinfo of every URL in it replaced by `***`."""
    return USERINFO.sub(r"\g<scheme>***@", text) if "@" in text else text


def redacted(value: Any) -> Any:
    """A string redacted; anything else as it is."""
    return redact(value) if isinstance(value, str) else value
