"""Talk to a running Brain once, as a new user would: health, session, chat, reply."""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path

from websockets.sync.client import connect


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token-file", required=True)
    args = parser.parse_args()
    token = Path(args.token_file).read_text().strip()

    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{args.url}/healthz", timeout=2) as response:
                health = json.load(response)
                break
        except OSError:
            if time.monotonic() > deadline:
                print("Brain did not answer /healthz within 60 s", file=sys.stderr)
                return 1
            time.sleep(0.3)
    assert health["ok"], health

    ws_url = args.url.replace("http://", "ws://") + "/ws/brain/"
    with connect(ws_url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        ws.send(
            json.dumps(
                {
                    "type": "session-create",
                    "id": "s1",
                    "data": {
                        "clientType": "cli",
                        "projectId": "proj_default",
                        "fingerprint": {"machineId": "ci", "workingDir": "/ci"},
                    },
                }
            )
        )
        ws.send(json.dumps({"type": "chat", "id": "c1", "data": {"text": "hello"}}))
        while True:
            frame = json.loads(ws.recv(timeout=30))
            if frame["type"] == "error":
                print(f"error frame: {frame}", file=sys.stderr)
                return 1
            if frame.get("event") == "chat-message" and frame["data"]["role"] == "assistant":
                break
    reply = frame["data"]["text"]
    if reply != "echo: hello":
        print(f"unexpected reply {reply!r}", file=sys.stderr)
        return 1

    request = urllib.request.Request(
        f"{args.url}/api/processes/{frame['data']['processId']}",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        detail = json.load(response)
    assert [m["content"] for m in detail["conversation"]] == ["hello", "echo: hello"], detail
    print(f"smoke: chatted with arthur over WebSocket, reply {reply!r}; REST shows it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
