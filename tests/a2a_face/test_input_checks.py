"""What a client sends the A2A face is checked as REST and the WebSocket check it, before the
SDK reads it: text no database stores (a NUL, a lone surrogate), a number too long to read or
too large for its field, a body nested too deeply, bytes that are not UTF-8. Each is a JSON-RPC
error naming the field (-32602 in `params`, -32600 in the envelope, -32700 for a body that
cannot be read), never -32603 nor an HTTP 500, and nothing is stored. A rate-limit refusal has
a code of its own with the wait in its data."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from processes.models import PendingMessage, ThinkProcess
from recipes_app.models import Recipe, RecipeScope
from tests.support.a2a_brain import a2a_brain, rpc

pytestmark = pytest.mark.django_db(transaction=True)

DEEP = 600
DIGITS = "9" * 5000


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def message(text: str = "hi", **fields: Any) -> dict[str, Any]:
    return {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": text}], **fields}


def body(params: dict[str, Any], *, method: str = "message/send", request_id: Any = 1) -> bytes:
    """A JSON-RPC request as JSON text (lone surrogates and NULs as escapes, as JSON has them)."""
    request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(request).encode()


def post(agent: str, token: str, raw: bytes, **headers: str) -> httpx.Response:
    sent = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers}
    return httpx.post(agent, content=raw, headers=sent, timeout=30)


def ford_agent(tenancy: Any) -> None:
    """ford (the scripted model echoes) published as an agent of the tenancy's project."""
    Recipe.objects.create(
        name="ford", engine="ford", scope=RecipeScope.PROJECT, project=tenancy.project, a2a=True
    )


SEND = "message/send"
# (what, the request's body, the code, the field named, the id the answer carries)
REFUSED = [
    ("a NUL in a text part", body({"message": message("a\x00b")}), -32602, "message.parts.0.text"),
    (
        "a lone surrogate in a text part",
        body({"message": message("a\ud800b")}),
        -32602,
        "message.parts.0.text",
    ),
    (
        "a lone surrogate in the contextId",
        body({"message": message(contextId="sess_\udfff")}),
        -32602,
        "message.contextId",
    ),
    (
        "a NUL in a data part's key",
        body({"message": {**message(), "parts": [{"kind": "data", "data": {"a\x00": 1}}]}}),
        -32602,
        "message.parts.0.data",
    ),
    (
        "data nested 600 deep",
        body({"message": {**message(), "parts": [{"kind": "data", "data": {"x": nested(DEEP)}}]}}),
        -32602,
        "message.parts.0.data",
    ),
    (
        "an infinite number in a data part",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": SEND,
                "params": {"message": {**message(), "parts": [{"kind": "data", "data": {"n": 1}}]}},
            }
        )
        .replace('"n": 1', '"n": 1e999')
        .encode(),
        -32602,
        "message.parts.0.data.n",
    ),
    (
        "a 5,000-digit historyLength",
        body({"message": message(), "configuration": {"historyLength": 7}}).replace(
            b'"historyLength": 7', b'"historyLength": ' + DIGITS.encode()
        ),
        -32602,
        "configuration.historyLength",
    ),
    (
        "a historyLength beyond its 32 bits",
        body({"message": message(), "configuration": {"historyLength": 2**40}}),
        -32602,
        "configuration.historyLength",
    ),
    (
        "a historyLength beyond its 32 bits, read by tasks/get",
        body({"id": "tp_1", "historyLength": 2**40}, method="tasks/get"),
        -32602,
        "historyLength",
    ),
]
# The envelope's own faults: the answer's id is null when the id is at fault.
REFUSED_ENVELOPE = [
    ("a lone surrogate in the id", body({"message": message()}, request_id="\ud800"), -32600, "id"),
    (
        "a 5,000-digit id",
        body({"message": message()}, request_id=7).replace(b'"id": 7', b'"id": ' + DIGITS.encode()),
        -32600,
        "id",
    ),
    (
        "a NUL in the method",
        body({"message": message()}, method="message/send\x00"),
        -32600,
        "method",
    ),
]
UNREADABLE = [
    (
        "a body nested 100,000 deep",
        b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}",
        "nested too deeply",
    ),
    (
        "bytes that are not UTF-8",
        body({"message": message("caf\u00e9")}).replace(b"\\u00e9", b"\xe9"),
        "UTF-8",
    ),
    ("a body that is not JSON", b'{"jsonrpc": "2.0", "id": 1,', "not JSON"),
]


def nothing_stored() -> None:
    assert not ThinkProcess.objects.filter(session__client_type="a2a").exists()
    assert not PendingMessage.objects.exists()


@pytest.mark.parametrize(
    ("raw", "code", "field"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_what_no_face_stores_in_params_is_invalid_params_naming_the_field(alice, raw, code, field):
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"
        # when a 0.3 client sends it
        answer = post(agent, alice.token, raw)
    # then the answer is an invalid-params error naming the field, with the request's id
    assert answer.status_code == 200, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == code, error
    assert error["message"].startswith(f"{field}:"), error
    assert error["data"] == {"field": field}
    assert answer.json()["id"] == 1
    # and nothing was stored
    nothing_stored()


@pytest.mark.parametrize(
    ("raw", "code", "field"),
    [case[1:] for case in REFUSED_ENVELOPE],
    ids=[case[0] for case in REFUSED_ENVELOPE],
)
def test_what_no_face_stores_in_the_envelope_is_an_invalid_request_naming_it(
    alice, raw, code, field
):
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"
        answer = post(agent, alice.token, raw)
    # then it is an invalid request naming the member, never an HTTP 500
    assert answer.status_code == 200, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == code, error
    assert error["message"].startswith(f"{field}:"), error
    assert answer.json()["id"] is (None if field == "id" else 1)
    nothing_stored()


@pytest.mark.parametrize(
    ("raw", "said"), [case[1:] for case in UNREADABLE], ids=[case[0] for case in UNREADABLE]
)
def test_a_body_that_cannot_be_read_is_a_parse_error(alice, raw, said):
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"
        answer = post(agent, alice.token, raw)
    # then it is a parse error saying why, with no id, and no Python exception's text
    assert answer.status_code == 200, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == -32700, error
    assert said in error["message"]
    assert "Traceback" not in answer.text
    assert "RecursionError" not in answer.text
    assert answer.json()["id"] is None
    nothing_stored()


def test_a_1_0_client_gets_the_field_in_the_error_info_of_its_own_shape(alice):
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/deep-think"
        # when a 1.0 client sends a NUL in a text part
        params = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "a\x00"}]}}
        answer = post(
            agent, alice.token, body(params, method="SendMessage"), **{"A2A-Version": "1.0"}
        )
    # then it is invalid params naming the field, its data the SDK's ErrorInfo with the field
    error = answer.json()["error"]
    assert error["code"] == -32602, error
    assert error["message"].startswith("message.parts.0.text:")
    [info] = [detail for detail in error["data"] if detail["@type"].endswith("ErrorInfo")]
    assert info["metadata"] == {"field": "message.parts.0.text"}
    nothing_stored()


def test_a_steer_with_a_nul_is_refused_and_nothing_is_queued(alice):
    # given a task of ford's, waiting for input
    ford_agent(alice)
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/ford"
        first = rpc(agent, alice.token, SEND, {"message": message("hello")}).json()["result"]
        assert first["status"]["state"] == "input-required"
        queued = PendingMessage.objects.count()
        # when the client answers it with a NUL in the text
        answer = post(
            agent, alice.token, body({"message": message("a\x00b", taskId=first["id"])})
        ).json()
    # then it is invalid params naming the text, and nothing was queued for the process
    assert answer["error"]["code"] == -32602
    assert answer["error"]["data"] == {"field": "message.parts.0.text"}
    assert PendingMessage.objects.count() == queued


@pytest.mark.parametrize("version", ["0.3", "1.0"])
def test_the_rate_limit_is_an_error_of_its_own_with_the_wait(alice, settings, version):
    # given a limit of one process a minute, and ford as an agent
    settings.VANCETOPE_RATE_PROCESS_CREATE = "1/minute"
    ford_agent(alice)
    if version == "0.3":
        method, headers = SEND, {}
        params = {"message": message("hello"), "configuration": {"blocking": False}}
    else:
        method, headers = "SendMessage", {"A2A-Version": "1.0"}
        params = {
            "message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]},
            "configuration": {"returnImmediately": True},
        }
    with a2a_brain() as base:
        agent = f"{base}/a2a/{alice.project_id}/ford"
        # when the client sends two new tasks within the minute
        first = post(agent, alice.token, body(params, method=method), **headers).json()
        second = post(agent, alice.token, body(params, method=method), **headers).json()
    # then the first is a task; the second the rate limit's own error (not an internal one),
    # which says when to try again
    assert "result" in first, first
    error = second["error"]
    assert error["code"] == -32029, error
    assert error["message"].startswith("too many processes created (limit 1/minute)")
    data = error["data"]
    if version == "1.0":
        [info] = [detail for detail in data if detail["@type"].endswith("ErrorInfo")]
        data = info["metadata"]
    assert data["error"] == "rate-limited"
    assert 1 <= int(data["retryAfter"]) <= 60
    # and only the first made a process
    assert ThinkProcess.objects.filter(session__client_type="a2a").count() == 1
