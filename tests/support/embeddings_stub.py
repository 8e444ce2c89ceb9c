"""A local OpenAI-compatible embeddings endpoint (POST /v1/embeddings), so the real `openai`
client is tested without the internet. Each text becomes a bag of its words hashed into
DIMENSIONS numbers: texts sharing words are near, others far, deterministically."""

from __future__ import annotations

import hashlib
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.openai_stub import StubServer, send_json

DIMENSIONS = 64


def bag_of_words(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    return vector


class EmbeddingsStubServer(StubServer):
    base_path = "/v1"

    def handle(
        self, handler: BaseHTTPRequestHandler, method: str, path: str, body: dict[str, Any]
    ) -> None:
        if method != "POST" or path != "/v1/embeddings":
            send_json(handler, 404, {"error": {"message": f"no route {method} {path}"}})
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        send_json(
            handler,
            200,
            {
                "object": "list",
                "model": body["model"],
                "data": [
                    {"object": "embedding", "index": i, "embedding": bag_of_words(text)}
                    for i, text in enumerate(texts)
                ],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )
