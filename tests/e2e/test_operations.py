"""Operating the Brain from a shell: what `bootstrap` and `brain` print, and the files they make."""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.brain import ROOT, Brain, bootstrap, brain_env, free_port
from tests.support.crashing_llama import crashing_llama_cpp

pytestmark = pytest.mark.embedded_brain


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_bootstrap_again_says_how_to_reset_the_admin_password(tmp_path: Path):
    env = brain_env(tmp_path)
    first = manage(env, "bootstrap")
    assert first.returncode == 0, first.stderr
    assert "admin login (shown once)" in first.stdout
    # when
    again = manage(env, "bootstrap")
    # then
    assert again.returncode == 0, again.stderr
    assert "admin login (shown once)" not in again.stdout
    assert "python manage.py changepassword local" in again.stdout


def test_the_sqlite_files_are_readable_by_their_owner_only(tmp_path: Path):
    env = brain_env(tmp_path)
    assert manage(env, "bootstrap").returncode == 0
    files = [path for path in tmp_path.iterdir() if path.name.startswith("brain.sqlite3")]
    assert tmp_path / "brain.sqlite3" in files
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (
            {"VANCETOPE_LLM": "anthropic", "ANTHROPIC_API_KEY": ""},
            "CommandError: VANCETOPE_LLM=anthropic needs ANTHROPIC_API_KEY",
        ),
        (
            {"VANCETOPE_LLM": "gemini"},
            "CommandError: VANCETOPE_LLM='gemini' is not a known LLM provider; "
            "use one of: scripted, openai, anthropic",
        ),
    ],
)
def test_a_misconfigured_llm_is_a_one_line_error_at_start(tmp_path: Path, variables, message):
    env = brain_env(tmp_path, **variables)
    # when
    done = manage(env, "brain", "--port", str(free_port()))
    # then: exit 1 and one line on stderr that says what to set, no traceback
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(message)
    assert "Traceback" not in done.stderr


def test_a_local_model_that_crashes_its_warm_up_is_a_one_line_error_at_start(tmp_path: Path):
    # a llama-cpp-python built for another CPU: its first completion dies of SIGSEGV
    library = crashing_llama_cpp(tmp_path / "lib")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    env = brain_env(
        tmp_path,
        VANCETOPE_LLM="local",
        VANCETOPE_LOCAL_MODEL=str(model),
        PYTHONPATH=os.pathsep.join(filter(None, [library, os.environ.get("PYTHONPATH")])),
    )
    # when
    done = manage(env, "brain", "--port", str(free_port()))
    # then: the Brain outlived its warm-up's crash, and says how to reinstall in one line
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "CommandError: the local model crashed its warm-up (SIGSEGV): llama-cpp-python was "
        "built for another CPU; reinstall it from source: "
    )
    assert lines[0].endswith(
        'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-binary llama-cpp-python '
        "--no-cache-dir --force-reinstall llama-cpp-python"
    )
    assert "Traceback" not in done.stderr
    # before it touched a database
    assert not (tmp_path / "brain.sqlite3").exists()


def test_a_restarted_brain_logs_no_scheduler_chatter_and_no_eager_warning(tmp_path: Path):
    env = brain_env(tmp_path)
    bootstrap(env)
    first = Brain(env, free_port())
    time.sleep(1)
    first.stop()
    # the minute sweeps last ran long ago (a Brain that was down for a while)
    aged = manage(
        env,
        "shell",
        "-c",
        "from datetime import timedelta; from django.utils import timezone; "
        "from django_celery_beat.models import PeriodicTask; "
        "PeriodicTask.objects.update(last_run_at=timezone.now() - timedelta(hours=1))",
    )
    assert aged.returncode == 0, aged.stderr
    # when: started again, the sweeps are due at once and the scheduler fires them
    again = Brain(env, free_port())
    time.sleep(4)
    again.stop()
    log = again.log()
    # then
    assert "AlwaysEagerIgnored" not in log, log
    assert "celery.beat" not in log, log
    assert "Sending due task" not in log
    assert "DatabaseScheduler" not in log
    assert "not a task of this Brain" not in log


def test_a_busy_port_is_an_error_before_anything_touches_the_database(tmp_path: Path):
    # given another program listening on the port
    env = brain_env(tmp_path)
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        # when the Brain is started on it
        done = manage(env, "brain", "--port", str(port))
    # then it exits non-zero saying why, in one line, and ran neither migrations nor recovery
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"CommandError: cannot listen on 127.0.0.1:{port}: "), lines[0]
    assert "recovered" not in done.stdout
    assert not (tmp_path / "brain.sqlite3").exists()


def test_a_multipart_body_with_no_parts_gets_the_json_400_naming_the_field(tmp_path: Path):
    # given a Brain (daphne serves it) and its token
    env = brain_env(tmp_path)
    token = bootstrap(env)
    brain = Brain(env, free_port())
    try:
        # when a document upload comes as multipart/form-data with no parts at all
        connection = http.client.HTTPConnection("127.0.0.1", brain.port, timeout=30)
        connection.request(
            "POST",
            "/api/documents",
            body=b"--xyz--\r\n",
            headers={
                "Authorization": f"Bearer {token}",
                "Content-Type": "multipart/form-data; boundary=xyz",
            },
        )
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
    finally:
        brain.stop()
    # then the application's answer reaches the client: a JSON 400 naming the missing field
    # (Twisted's own form parser answered a bare 400, no headers, and dropped the connection)
    assert answer.status == 400
    assert answer.getheader("Content-Type") == "application/json"
    assert json.loads(body)["field"] == "project"
