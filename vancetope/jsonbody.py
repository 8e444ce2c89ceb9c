"""What clients send (WebSocket frames, REST bodies, query parameters, paths), read in one
place: a malformed or too deeply nested document, and a value no database stores, are a 400
naming where it is, never a 500 from the database later.

No database stores a NUL character in text or JSON (PostgreSQL refuses it; SQLite would store
what PostgreSQL cannot) nor a lone surrogate (`\\ud800`: JSON may escape one, but it is no
Unicode text and encodes to no UTF-8), and JSON holds no infinite number (`1e999`) nor one
Python will not read (an integer of more than 4,300 digits). Every JSON value a client sends is
checked for them once, after it is parsed (`check_json`), so no field, model or service has to
remember it; each refusal names the field.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from vancetope.errors import BadRequest

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# What a JSON text needs to hold one of them: a NUL or surrogate only as an escape (a raw NUL
# is no valid JSON, a raw surrogate no valid UTF-8), an infinite number only with an exponent
# of three digits, 309 digits in a row, or Python's NaN and Infinity. A frame's text without
# any is not walked (chat frames, most of them).
MAYBE_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])|[eE]\+?\d{3}|\d{309}|NaN|Infinity")


def text_problem(text: str) -> str:
    """Why `text` cannot be stored ("" when it can)."""
    found = UNSTORABLE.search(text)
    if found is None:
        return ""
    if found.group() == "\x00":
        return "must not contain NUL characters (\\u0000)"
    return "must not contain a lone surrogate (\\ud800-\\udfff): it is no Unicode text"


def storable_text(text: str) -> str:
    """`text` with what no database stores replaced by U+FFFD: for a record of what a client
    sent (a refused webhook delivery's id and excerpt), never for what it asked to store."""
    return UNSTORABLE.sub("\ufffd", text)


class LongNumber:
    """An integer of the JSON text that has more digits than Python reads
    (`sys.get_int_max_str_digits()`, 4,300 by default), kept as its digits: read_json puts one
    where such a number was, so that check_json names its place."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"LongNumber({len(self.digits)} characters)"


def _integer(digits: str) -> int | LongNumber:
    try:
        return int(digits)
    except ValueError:
        return LongNumber(digits)


def json_problem(value: Any, where: str = "") -> tuple[str, str] | None:
    """The place (`input.topic`, `tasks.0.title`; `where` is the prefix of every place, `data`
    or "") and the problem of the first string or key that cannot be stored, number that is
    not finite, or number too long to read (a LongNumber); None when there is none. Followed
    without recursion, as deep as the parser went."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
        elif isinstance(item, float):
            problem = "" if math.isfinite(item) else "must be a finite number"
        elif isinstance(item, LongNumber):
            digits = len(item.digits.lstrip("-"))
            limit = sys.get_int_max_str_digits()
            problem = f"a number of {digits} digits, more than the {limit} a number may have"
        elif isinstance(item, dict):
            problem = ""
            for key, child in item.items():
                if isinstance(key, str) and text_problem(key):
                    problem = f"a key {text_problem(key)}"
                    break
                stack.append((child, f"{path}.{key}" if path else str(key)))
        elif isinstance(item, list):
            problem = ""
            stack.extend(
                (child, f"{path}.{index}" if path else str(index))
                for index, child in enumerate(item)
            )
        else:
            continue
        if problem:
            return path or "body", problem
    return None


def check_json(value: Any, where: str = "") -> None:
    """BadRequest naming the place of json_problem's first problem (`tasks.0.title: must not
    contain NUL characters (\\u0000)`), if there is one."""
    found = json_problem(value, where)
    if found is not None:
        field, problem = found
        raise BadRequest.naming(field, problem)


def read_json(text: str | bytes, what: str) -> Any:
    """`text` parsed, not yet checked; BadRequest naming `what` when it is not JSON, not UTF-8,
    or nests deeper than the parser can follow (json.loads raises RecursionError there, not a
    JSONDecodeError). An integer of more digits than Python reads (json.loads raises a
    ValueError) is read as a LongNumber, which check_json refuses naming its place."""
    try:
        return _loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"{what} is not JSON: {exc.msg} at position {exc.pos}") from exc
    except RecursionError as exc:
        raise BadRequest(f"{what} is nested too deeply to be read") from exc
    except UnicodeDecodeError as exc:
        raise BadRequest(f"{what} is not UTF-8: {exc.reason}") from exc


def _loads(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError:
        # An integer too long to read: read again, each integer on its own (only now: the
        # parser's own reading is the faster).
        return json.loads(text, parse_int=_integer)


def check_read_json(value: Any, text: str | bytes) -> None:
    """check_json of what read_json made of `text`, skipped when the text cannot hold any
    of what it refuses."""
    if isinstance(text, bytes) or MAYBE_UNSTORABLE.search(text):
        check_json(value)


def parse_json(text: str | bytes, what: str) -> Any:
    """`text` parsed (read_json) and checked (check_json)."""
    value = read_json(text, what)
    check_read_json(value, text)
    return value


def nesting_depth(value: Any) -> int:
    """How deep objects and arrays nest in `value` (a scalar 0, `{}` 1, `{"a": []}` 2),
    followed without recursion, so any depth a parser produced can be measured."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def deeper_than(value: Any, limit: int) -> str | None:
    """The place (dotted, as json_problem names places; "" for `value` itself) of the first
    object or array nested more than `limit` deep in `value`, or None; without recursion."""
    if nesting_depth(value) <= limit:
        return None
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict):
            children: Any = item.items()
        elif isinstance(item, list):
            children = enumerate(item)
        else:
            continue
        if depth > limit:
            return path
        stack.extend(
            (child, depth + 1, f"{path}.{key}" if path else str(key)) for key, child in children
        )
    return None


class BodyParser(JSONParser):
    """DRF's JSON parser, with a body nested too deeply (RecursionError) a 400 as well, and
    the parsed body checked (check_json): a 400 naming the field."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            value = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - the body is nested too deeply to be read") from exc
        check_json(value)
        return value


class UnstorableRequestText:
    """Django middleware: a NUL character in a query parameter (`?key=a%00`, Django decodes it)
    is a 400 naming the parameter, one in the path a 404 (no object has such a name); nothing
    else of the request is read. (Django decodes both with replacement characters, so no lone
    surrogate reaches them.)"""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            body = {"code": 404, "error": "not-found", "message": "no such path"}
            return JsonResponse(body, status=404)
        for name, values in request.GET.lists():
            problem = text_problem(name) and f"a parameter name {text_problem(name)}"
            problem = problem or next(filter(None, map(text_problem, values)), "")
            if problem:
                message = f"{name}: {problem}"
                body = {
                    "code": 400,
                    "error": "bad-request",
                    "message": message,
                    "fields": {name: [message]},
                }
                return JsonResponse(body, status=400)
        return self.get_response(request)
