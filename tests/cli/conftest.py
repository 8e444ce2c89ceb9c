"""Fixtures of the CLI tests: a Brain process with a logged-in `vance` config directory, a
PTY setup for `vance chat`, and the chat client on a fake socket."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tests.e2e.brain import Brain, bootstrap, brain_env, free_port
from tests.support.chat_client import FakeSocket
from tests.support.rest_commands import run_vance
from tests.support.vance_pty import Setup
from vance.chat import ChatClient, ChatOptions
from vance.config import Config
from vance.fingerprint import Fingerprint
from vance.lines import LineRouter


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    var = tmp_path / "var"
    var.mkdir()
    # A crash of the Brain on shutdown leaves a Python traceback in brain.log.
    env = brain_env(var, PYTHONFAULTHANDLER="1")
    token = bootstrap(env)
    config_dir = tmp_path / "vance"
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("# demo\n")
    (work / "src").mkdir()
    return env, token, free_port(), config_dir, work


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VANCE_CONFIG_DIR", str(tmp_path / "config"))
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "README.md").write_text("hi\n")

    def make(assume_yes: bool = False) -> tuple[ChatClient, io.StringIO, FakeSocket]:
        output = io.StringIO()
        console = Console(file=output, width=120, color_system=None)
        fp = Fingerprint("m-1", str(tmp_path / "work"), str(tmp_path), "dev")
        chat = ChatClient(
            Config("http://127.0.0.1:1", "t"),
            ChatOptions(assume_yes=assume_yes),
            fp,
            console,
            LineRouter(),
        )
        socket = FakeSocket()
        chat.ws = socket  # type: ignore[assignment]
        chat.connected.set()
        chat.session_id = "sess_1"
        chat.printer.chat_process_id = "tp_1"
        return chat, output, socket

    return make


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory):
    var = tmp_path_factory.mktemp("var")
    env = brain_env(var)
    token = bootstrap(env)
    running = Brain(env, free_port())
    yield running, token, var / "token"
    running.stop()


@pytest.fixture
def config_dir(tmp_path: Path, brain) -> Path:
    running, _, token_file = brain
    config = tmp_path / "vance"
    done = run_vance(config, "login", "--server", running.url, "--token-file", str(token_file))
    assert done.returncode == 0, done.stderr
    return config
