"""DRF authentication by API token: `Authorization: Bearer <token>` (or `Token <token>`)."""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from vancetope.ratelimit import RateLimited, client_address
from vancetope.tenancy.services import authenticate_token_from

KEYWORDS = {"bearer", "token"}


def token_from_header(header: str) -> str | None:
    """The raw token in an Authorization header value, or None if it carries no token."""
    parts = header.split()
    if len(parts) == 2 and parts[0].lower() in KEYWORDS:
        return parts[1]
    return None


class ApiTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        raw = token_from_header(header)
        if raw is None:
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'")
        try:
            client = client_address(
                request.META.get("REMOTE_ADDR", ""), request.META.get("HTTP_X_FORWARDED_FOR", "")
            )
            found = authenticate_token_from(client, raw)
        except RateLimited as limited:
            raise exceptions.Throttled(wait=limited.retry_after, detail=limited.message) from None
        if found is None:
            raise exceptions.AuthenticationFailed("invalid or revoked API token")
        return found[0], None

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="vancetope"'
