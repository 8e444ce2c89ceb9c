"""Killing the Brain's turn at each point of a tool call, on either runtime: the shared part of
tests/e2e/test_journal_crash.py (the embedded Brain, SIGKILLed whole) and
tests/processes/test_journal_worker_kill.py (PostgreSQL + Redis, the Celery worker SIGKILLed
while the socket server lives on).

A worker process (frankie, recipe `frankie-bump`) is given the goal `<tool> <key>`; the model, an
OpenAI-compatible stub that records every request, asks for that tool with that key, and once
it reads the result answers `all done now`. The tools append a line to a file: `bump` on a stdio
MCP server (tests/support/bump_mcp_server.py), `bump_client` on the test's own client. Neither
is idempotent. The kill is a failpoint (vancetope/failpoints.py) armed in the OS process that
runs the turn.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.e2e.brain import (
    Brain,
    BrainSocket,
    CeleryWorker,
    bootstrap,
    brain_env,
    distributed_env,
    free_port,
    manage_shell,
    poll,
)
from tests.support.openai_stub import OpenAIStubServer, StubReply, StubToolCall, count_words

SERVER = Path(__file__).resolve().parent / "bump_mcp_server.py"
FINGERPRINT = {"machineId": "journal-machine", "workingDir": "/srv/journal"}
BUMP_CLIENT = {
    "name": "bump_client",
    "description": "Append a line for key (not idempotent)",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
    "safety": "MUTATING",
}
# (failpoint, completions the stub serves in all): the one a kill cut is asked again.
POINTS = [
    ("tool-starting", 2),
    ("tool-answered", 2),
    ("llm-streaming@2", 3),
    ("turn-committing", 2),
]
RECOVER = (
    "from datetime import timedelta; from processes.recovery import recover_lanes; "
    "recover_lanes(min_pending_age=timedelta(0))"
)


class ToolCallingStub(OpenAIStubServer):
    """For a goal `<tool> <key>`: asks for `tool` {key} until a tool result is the last
    message, then answers `all done now`; every completion is recorded (`requests`)."""

    def _complete(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        last = body["messages"][-1]
        if last["role"] == "tool":
            self.queue(StubReply(text="all done now"))
        else:
            tool, key = goal_of(body).split()
            self.queue(StubReply(tool_calls=(StubToolCall(tool, {"key": key}, id="call_b"),)))
        super()._complete(handler, body)

    def asked(self, key: str) -> list[dict[str, Any]]:
        """The completions asked for the goal with this key."""
        return [body for body in self.requests if goal_of(body).endswith(f" {key}")]


def goal_of(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


@dataclass
class Runtime:
    """One bootstrapped Brain for a test module (each test a key of its own). Embedded: the
    Brain runs the turns, and dies with them. Distributed: a Celery worker runs them, and
    dies; the Brain, and its clients' sockets, live on."""

    env: dict[str, str]
    token: str
    bumps: Path
    stub: ToolCallingStub
    queue: str = ""
    port: int = field(default_factory=free_port)
    brain: Brain | None = None
    worker: CeleryWorker | None = None

    @property
    def distributed(self) -> bool:
        return bool(self.queue)

    def start(self, failpoint: str = "") -> Brain:
        """The Brain (and on the distributed runtime its worker), the failpoint armed where
        the turns run."""
        armed = {**self.env, "VANCETOPE_FAILPOINTS": failpoint}
        if self.distributed:
            if self.brain is None:
                self.brain = Brain(self.env, self.port)
            self.worker = CeleryWorker(armed, self.queue, "worker")
        else:
            self.brain = Brain(armed, self.port)
        return self.brain

    def died(self) -> None:
        """The failpoint killed what runs the turns (SIGKILL: -9)."""
        dying = self.worker if self.distributed else self.brain
        assert dying is not None
        dying.process.wait(timeout=90)
        assert dying.process.returncode == -9, dying.log()[-3000:]

    def kill(self) -> None:
        """SIGKILL now, from outside."""
        dying = self.worker if self.distributed else self.brain
        assert dying is not None
        dying.process.kill()
        dying.process.wait(timeout=30)

    def restart(self) -> Brain:
        """What runs the turns starts again, unarmed; the dead worker's lanes are recovered
        (the embedded Brain recovers its own at its start)."""
        brain = self.start()
        if self.distributed:
            manage_shell(self.env, RECOVER)
        return brain

    def stop(self) -> None:
        """What runs the turns stops (a distributed Brain runs on, for the next test)."""
        running = self.worker if self.distributed else self.brain
        if running is not None and running.process.poll() is None:
            running.stop()
        self.worker = None
        if not self.distributed:
            self.brain = None

    def lines(self, key: str) -> list[str]:
        """The tools that appended a line for `key`, in order."""
        found = [json.loads(line) for line in self.bumps.read_text().splitlines()]
        return [line["tool"] for line in found if line["key"] == key]


@contextmanager
def runtime(tmp_path: Path, database_url: str = "") -> Iterator[Runtime]:
    """A bootstrapped Brain's runtime: embedded, or distributed on `database_url`."""
    bumps = tmp_path / "bumps.jsonl"
    bumps.touch()
    with ToolCallingStub() as stub:
        llm = {"VANCETOPE_LLM": "openai", "OPENAI_BASE_URL": stub.base_url}
        lease = {"VANCETOPE_LEASE_SECONDS": "3"}
        queue = ""
        if database_url:
            env, queue = distributed_env(tmp_path, database_url, "journal", **llm, **lease)
        else:
            env = brain_env(tmp_path, **llm, **lease)
        token = bootstrap(env)
        project_setup(env, bumps)
        made = Runtime(env, token, bumps, stub, queue)
        try:
            yield made
        finally:
            made.stop()
            if made.brain is not None:
                made.brain.stop()


def project_setup(env: dict[str, str], bumps: Path) -> None:
    """The project's MCP server and a frankie recipe whose pool names both tools."""
    manage_shell(
        env,
        "from vancetope.tenancy.models import Project; "
        "from recipes_app.models import Recipe, RecipeScope; "
        "from vancetope.tools.models import McpServer; "
        "p = Project.objects.get(slug='default'); "
        f"McpServer.objects.create(project=p, name='bump', command={sys.executable!r}, "
        f"args=[{str(SERVER)!r}], env={{'BUMP_FILE': {str(bumps)!r}}}); "
        "Recipe.objects.create(name='frankie-bump', engine='frankie', scope=RecipeScope.PROJECT,"
        " project=p, tenant=p.tenant, allowed_tools_add=['bump', 'bump_client'])",
    )


def open_client(brain: Brain, token: str, **data: Any) -> tuple[BrainSocket, str]:
    """A client with a session of its own; (the client, the session's id)."""
    client = brain.socket(token)
    fields = {"clientType": "cli", "projectId": "proj_default", "fingerprint": FINGERPRINT}
    created = client.request("session-create", {**fields, **data})
    assert created["type"] == "session-created", created
    return client, created["data"]["session"]["id"]


def start_worker(client: BrainSocket, tool: str, key: str) -> str:
    created = client.request("process-create", {"recipe": "frankie-bump", "goal": f"{tool} {key}"})
    return str(created["data"]["process"]["id"])


def resume(client: BrainSocket, session_id: str) -> None:
    """The client comes back to its session, offering its tools with the bind."""
    data = {"sessionId": session_id, "fingerprint": FINGERPRINT, "tools": [BUMP_CLIENT]}
    resumed = client.request("session-resume", data)
    assert resumed["type"] == "session-resumed", resumed


def serve_bump(client: BrainSocket, bumps: Path, *, answer: bool = True) -> None:
    """Run the next bump_client call the Brain sends: append its line, then answer."""
    call = client.event("tool-call", tool="bump_client")["data"]
    client.events.clear()
    with bumps.open("a") as out:
        out.write(json.dumps({"tool": "bump_client", "key": call["arguments"]["key"]}) + "\n")
    if answer:
        result = {"callId": call["callId"], "ok": True, "result": f"bumped {call['arguments']}"}
        client.ws.send(json.dumps({"type": "tool-result", "id": "t", "data": result}))


def finished(brain: Brain, token: str, process_id: str) -> dict[str, Any]:
    def closed() -> dict[str, Any] | None:
        detail = brain.get(f"/api/processes/{process_id}", token)
        return detail if detail["status"] == "CLOSED" else None

    return dict(poll(closed, timeout=90))


def open_items(brain: Brain, token: str, process_id: str) -> list[dict[str, Any]]:
    return list(brain.get(f"/api/inbox?process={process_id}&status=OPEN", token)["results"])


def assert_done_once(made: Runtime, detail: dict[str, Any], key: str, completions: int) -> None:
    """The worker finished as without the crash: the tool ran once, the model was asked only
    what no journal answered, and the tokens count once."""
    assert detail["closeReason"] == "DONE", detail
    tool = detail["goal"].split()[0]
    assert made.lines(key) == [tool]
    requests = made.stub.asked(key)
    assert len(requests) == completions
    # the tool's result reached the model
    assert "bumped" in requests[-1]["messages"][-1]["content"]
    # the first answer's tokens and the last's (a call the kill cut is lost with it), the stub
    # counting words (the last answer's are three)
    usage = detail["usage"]
    words = count_words(requests[0]["messages"]) + count_words(requests[-1]["messages"])
    assert (usage["promptTokens"], usage["completionTokens"]) == (words, 3)


# --- the scenarios, each test module runs them on its runtime -------------------------------------


def mcp_tool_at(made: Runtime, point: str, completions: int) -> None:
    # given a turn that dies at `point` of a worker's turn that calls the MCP tool
    key = f"mcp-{point.replace('@', '-')}"
    brain = made.start(point)
    client, _ = open_client(brain, made.token, onDisconnect="KEEP_OPEN")
    process_id = start_worker(client, "bump", key)
    made.died()
    # when it starts again
    brain = made.restart()
    try:
        # then the turn finishes from its journal: the tool ran once, no answer asked twice
        assert_done_once(made, finished(brain, made.token, process_id), key, completions)
    finally:
        made.stop()


def client_tool_at(made: Runtime, point: str, completions: int) -> None:
    # given a turn that dies at `point` of a worker's turn that calls the client's tool
    key = f"client-{point.replace('@', '-')}"
    brain = made.start(point)
    client, session_id = open_client(brain, made.token, tools=[BUMP_CLIENT])
    process_id = start_worker(client, "bump_client", key)
    if point != "tool-starting":
        serve_bump(client, made.bumps)
    made.died()
    # when it starts again (the embedded Brain's client comes back to it)
    brain = made.restart()
    try:
        if not made.distributed:
            client = brain.socket(made.token)
            resume(client, session_id)
        if point == "tool-starting":
            serve_bump(client, made.bumps)
        # then the turn finishes from its journal: the tool ran once, no answer asked twice
        detail = finished(brain, made.token, process_id)
        assert_done_once(made, detail, key, completions)
    finally:
        made.stop()


def mcp_tool_caught_running(made: Runtime) -> None:
    # given a turn that dies after the MCP tool's effect, before its result is recorded
    key = "mcp-uncertain"
    brain = made.start("tool-ran")
    client, _ = open_client(brain, made.token, onDisconnect="KEEP_OPEN")
    process_id = start_worker(client, "bump", key)
    made.died()
    brain = made.restart()
    try:
        # when it starts again, the process asks its person whether to run it again
        [item] = poll(lambda: open_items(brain, made.token, process_id), timeout=60)
        assert item["kind"] == "APPROVAL"
        assert brain.get(f"/api/processes/{process_id}", made.token)["status"] == "BLOCKED"
        assert made.lines(key) == ["bump"]
        # and when the person approves, it runs again, once, and the worker finishes
        answer = f"/api/inbox/{item['id']}/answer"
        status, _ = brain.post(answer, made.token, {"answer": {"decision": "approve"}})
        assert status == 200
        detail = finished(brain, made.token, process_id)
        assert detail["closeReason"] == "DONE", detail
        assert made.lines(key) == ["bump", "bump"]
        assert len(made.stub.asked(key)) == 2
        # a second answer is refused and changes nothing
        status, _ = brain.post(answer, made.token, {"answer": {"decision": "approve"}})
        assert status == 409
        assert made.lines(key) == ["bump", "bump"]
    finally:
        made.stop()


def client_tool_caught_running(made: Runtime) -> None:
    # given a turn killed while its client runs the tool (the line written, no answer sent)
    key = "client-uncertain"
    brain = made.start()
    client, session_id = open_client(brain, made.token, tools=[BUMP_CLIENT])
    process_id = start_worker(client, "bump_client", key)
    serve_bump(client, made.bumps, answer=False)
    made.kill()
    brain = made.restart()
    try:
        if not made.distributed:
            client = brain.socket(made.token)
            resume(client, session_id)
        # when the process asks its person, and they say it went through
        [item] = poll(lambda: open_items(brain, made.token, process_id), timeout=60)
        answer = {"answer": {"decision": "reject"}}
        status, _ = brain.post(f"/api/inbox/{item['id']}/answer", made.token, answer)
        assert status == 200
        # then the worker finishes without running the tool again
        detail = finished(brain, made.token, process_id)
        assert detail["closeReason"] == "DONE", detail
        assert made.lines(key) == ["bump_client"]
        assert not [e for e in client.events if e["event"] == "tool-call"]
    finally:
        made.stop()
