"""The Brain's REST API (/api/) with the stored token: small, synchronous, no dependencies."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from vance.config import Config

TIMEOUT_SECONDS = 30


class BrainUnreachable(Exception):
    pass


class ApiError(Exception):
    """The Brain answered with an error status. `structured` is False when the body is not the
    Brain's {code, error, message} (e.g. a plain 404 page for a route this Brain lacks)."""

    def __init__(self, status: int, error: str, message: str, *, structured: bool) -> None:
        super().__init__(f"{status} {error}: {message}")
        self.status = status
        self.error = error
        self.message = message
        self.structured = structured

    @property
    def endpoint_missing(self) -> bool:
        # The Brain answers a route it lacks with error `no-endpoint` (older ones: HTML).
        return self.status in {404, 405} and (not self.structured or self.error == "no-endpoint")


def _error_from(exc: urllib.error.HTTPError) -> ApiError:
    raw = exc.read()
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body and "code" in body:
        return ApiError(
            exc.code, str(body["error"]), str(body.get("message") or ""), structured=True
        )
    reason = exc.reason if isinstance(exc.reason, str) else str(exc.reason)
    return ApiError(exc.code, "http-error", reason, structured=False)


class BrainApi:
    def __init__(self, config: Config) -> None:
        self.config = config

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.config.server}/api/{path}",
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.config.token}",
                "Accept": "application/json",
                **({"Content-Type": "application/json"} if data is not None else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise _error_from(exc) from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BrainUnreachable(f"cannot reach {self.config.server}: {reason}") from exc
        return json.loads(raw) if raw else None

    def get(self, path: str, **params: Any) -> Any:
        query = {key: value for key, value in params.items() if value is not None}
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        return self._call("GET", path)

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call("POST", path, body if body is not None else {})

    def results(self, path: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
        """One page of a paginated list: (rows, total count)."""
        page = self.get(path, **params)
        if isinstance(page, dict) and "results" in page:
            return list(page["results"]), int(page.get("count", len(page["results"])))
        rows = list(page or [])
        return rows, len(rows)
