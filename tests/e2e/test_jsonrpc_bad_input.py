"""Bad input of every shape to `/mcp` and `/a2a/…` (issue 42): hypothesis writes JSON-RPC
requests a client might get wrong (any method, any `params`, any `id`, a body that is no JSON
object) and sends them to both faces, served by uvicorn in front of Django as in production.
Whatever it sends, no answer is a 5xx, and no JSON-RPC error is -32603 (internal error): a
client's mistake is named as one (-32700, -32600, -32601, -32602, a tool error, a 4xx)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from django.core.asgi import get_asgi_application
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a_face.endpoint import A2aEndpoint
from mcp_face.endpoint import McpEndpoint
from recipes_app.models import Recipe, RecipeScope
from tests.support.mcp_brain import serve

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = 120
INTERNAL_ERROR = -32603

TEXT = st.text(max_size=20)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | TEXT
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
MCP_METHODS = [
    "tools/call",
    "tools/list",
    "resources/read",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "ping",
    "initialize",
    "subscriptions/listen",
]
MCP_TOOLS = ["process_create", "process_get", "process_steer", "process_stop", "inbox_list"]
MCP_TOOLS += ["inbox_answer", "process_list"]
A2A_METHODS = ["message/send", "tasks/get", "tasks/cancel", "tasks/pushNotificationConfig/get"]
A2A_METHODS += ["SendMessage", "GetTask", "CancelTask", "ListTasks", "GetExtendedAgentCard"]


def ids() -> st.SearchStrategy[Any]:
    return st.integers() | TEXT | st.none() | st.floats() | st.lists(SCALARS, max_size=2)


@st.composite
def mcp_requests(draw: Any) -> Any:
    """A request body: mostly JSON-RPC shaped, a tool's arguments of any shape."""
    method = draw(st.sampled_from(MCP_METHODS) | TEXT)
    if method == "tools/call":
        arguments = draw(
            st.dictionaries(
                st.sampled_from(["goal", "processId", "id", "x"]) | TEXT, JSON, max_size=4
            )
            | JSON
        )
        params: Any = {"name": draw(st.sampled_from(MCP_TOOLS) | TEXT), "arguments": arguments}
    elif method == "resources/read":
        params = {
            "uri": draw(st.sampled_from(["vancetope://inbox", "vancetope://processes/tp_1"]) | TEXT)
        }
    else:
        params = draw(JSON)
    request = {"jsonrpc": draw(st.sampled_from(["2.0"]) | TEXT), "method": method, "params": params}
    if draw(st.booleans()):
        request["id"] = draw(ids())
    return draw(st.just(request) | JSON)


@st.composite
def a2a_requests(draw: Any) -> Any:
    method = draw(st.sampled_from(A2A_METHODS) | TEXT)
    part = st.fixed_dictionaries(
        {"kind": st.sampled_from(["text", "data", "file"]) | TEXT},
        optional={"text": JSON, "data": JSON},
    )
    message = st.fixed_dictionaries(
        {},
        optional={
            "role": st.sampled_from(["user", "agent", "ROLE_USER"]) | JSON,
            "messageId": JSON,
            "parts": st.lists(part, max_size=2) | JSON,
            "taskId": st.sampled_from(["tp_1", "tp_x"]) | JSON,
            "contextId": JSON,
        },
    )
    params = (
        st.fixed_dictionaries(
            {},
            optional={"message": message, "id": JSON, "historyLength": JSON, "configuration": JSON},
        )
        | JSON
    )
    request = {"jsonrpc": "2.0", "id": draw(ids()), "method": method, "params": draw(params)}
    return draw(st.just(request) | JSON)


def errors_in(answer: httpx.Response) -> list[Any]:
    """The JSON-RPC error codes of an answer, as JSON or as server-sent events."""
    texts = [answer.text]
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        texts = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
    codes = []
    for text in texts:
        try:
            payload = json.loads(text)
        except ValueError:
            continue
        for item in payload if isinstance(payload, list) else [payload]:
            if isinstance(item, dict) and isinstance(item.get("error"), dict):
                codes.append(item["error"].get("code"))
    return codes


def check(answer: httpx.Response, sent: Any) -> None:
    assert answer.status_code < 500, (answer.status_code, sent, answer.text[:500])
    assert INTERNAL_ERROR not in errors_in(answer), (sent, answer.text[:500])


def serve_both() -> Any:
    return serve(McpEndpoint(A2aEndpoint(get_asgi_application())))


SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def test_bad_requests_to_mcp_are_no_server_error(alice, llm):
    llm([{"match": "", "reply": "ok"}] * 50)
    with serve_both() as base, httpx.Client(timeout=30) as http:
        headers = {
            "Authorization": f"Bearer {alice.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "1"},
            },
        }
        opened = http.post(f"{base}/mcp", json=init, headers=headers)
        assert opened.status_code == 200, opened.text
        session = {
            **headers,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-11-25",
        }
        http.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=session,
        )

        @SETTINGS
        @given(request=mcp_requests(), in_session=st.booleans())
        def send(request: Any, in_session: bool) -> None:
            answer = http.post(
                f"{base}/mcp",
                content=json.dumps(request),
                headers=session if in_session else headers,
            )
            check(answer, request)

        send()


def test_bad_requests_to_a2a_are_no_server_error(alice, llm, settings):
    settings.VANCETOPE_A2A_WAIT_SECONDS = 0.2
    llm([{"match": "", "reply": "ok"}] * 50)
    Recipe.objects.create(
        name="ford", engine="ford", scope=RecipeScope.PROJECT, project=alice.project, a2a=True
    )
    agent = f"/a2a/{alice.project_id}/ford"
    with serve_both() as base, httpx.Client(timeout=30) as http:
        headers = {"Authorization": f"Bearer {alice.token}", "Content-Type": "application/json"}

        @SETTINGS
        @given(request=a2a_requests(), version=st.sampled_from([None, "1.0", "0.3"]))
        def send(request: Any, version: str | None) -> None:
            sent = {**headers, "A2A-Version": version} if version else headers
            answer = http.post(f"{base}{agent}", content=json.dumps(request), headers=sent)
            check(answer, request)

        send()
