"""JSON from clients (WebSocket frames, REST bodies): a malformed or too deeply nested document
is a 400, never a 500."""

from __future__ import annotations

import json
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from vancetope.errors import BadRequest


def parse_json(text: str | bytes, what: str) -> Any:
    """`text` parsed; BadRequest naming `what` when it is not JSON or nests deeper than the
    parser can follow (json.loads raises RecursionError there, not a JSONDecodeError)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"{what} is not JSON: {exc.msg} at position {exc.pos}") from exc
    except RecursionError as exc:
        raise BadRequest(f"{what} is nested too deeply to be read") from exc
    except UnicodeDecodeError as exc:
        raise BadRequest(f"{what} is not UTF-8: {exc.reason}") from exc


class BodyParser(JSONParser):
    """DRF's JSON parser, with a body nested too deeply (RecursionError) a 400 as well."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - the body is nested too deeply to be read") from exc
