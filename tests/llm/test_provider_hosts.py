"""Provider calls stay on the hosts the operator allows: a `host:port` entry of
VANCETOPE_LLM_ALLOWED_HOSTS allows that port only (before, the list ignored ports), and no
provider call follows a redirect (before, one led the call, and its key, anywhere)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.openai_stub import OpenAIStubServer
from vancetope.llm.anthropic_provider import AnthropicProvider
from vancetope.llm.base import LlmError, LlmMessage
from vancetope.llm.factory import check_allowed_url
from vancetope.llm.openai_provider import OpenAICompatibleProvider


@pytest.mark.parametrize(
    ("allowed", "url", "ok"),
    [
        (["llm.internal:8443"], "https://llm.internal:8443/v1", True),
        (["llm.internal:8443"], "https://llm.internal:9000/v1", False),
        (["llm.internal:443"], "https://llm.internal/v1", True),
        (["llm.internal:8443"], "https://llm.internal/v1", False),
        (["llm.internal"], "https://llm.internal:9000/v1", True),
        ([".example.com"], "http://gpu.example.com:8080/v1", True),
        (["llm.internal:8443"], "https://elsewhere:8443/v1", False),
    ],
)
def test_an_entry_with_a_port_allows_that_port_only(
    settings: Any, allowed: list[str], url: str, ok: bool
) -> None:
    settings.VANCETOPE_LLM_ALLOWED_HOSTS = allowed
    problem = check_allowed_url(url, "openai")
    assert (problem == "") is ok, problem
    if not ok:
        assert "VANCETOPE_LLM_ALLOWED_HOSTS" in problem


class Redirecting:
    """A server that answers every request with a 307 to `target`, and counts them."""

    def __init__(self, target: str) -> None:
        self.hits = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                owner.hits += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(307)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def elsewhere() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as stub:
        yield stub


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_no_provider_call_follows_a_redirect(elsewhere: OpenAIStubServer, kind: str) -> None:
    # given a server that redirects every call to another (a stub that would answer)
    redirecting = Redirecting(elsewhere.base_url.removesuffix("/v1"))
    try:
        if kind == "openai":
            provider: Any = OpenAICompatibleProvider(
                base_url=redirecting.url + "/v1", api_key="sk-secret", model="m"
            )
            provider.max_retries = 0
        else:
            provider = AnthropicProvider(
                base_url=redirecting.url, api_key="sk-ant-secret", model="m", max_tokens=16
            )
            provider.max_retries = 0
        # when a call is made
        with pytest.raises(LlmError):
            list(provider.stream([LlmMessage(role="user", content="hello")]))
    finally:
        redirecting.close()
    # then it was refused where it was sent, and nothing reached the other server
    assert redirecting.hits >= 1
    assert elsewhere.recorded == []
