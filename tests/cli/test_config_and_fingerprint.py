"""Where `vance` keeps its settings, and the fingerprint it binds sessions to."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from vance import fingerprint
from vance.config import (
    Config,
    NotLoggedIn,
    RememberedSession,
    SessionMemory,
    load_config,
    normalise_server,
    save_config,
)


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "vance-config"
    monkeypatch.setenv("VANCE_CONFIG_DIR", str(home))
    monkeypatch.delenv("VANCE_MACHINE_ID", raising=False)
    return home


def test_the_config_file_holds_server_and_token_readable_by_the_owner_only(config_home: Path):
    path = save_config(Config(server="http://127.0.0.1:8000", token="secret-token"))
    assert path == config_home / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(config_home.stat().st_mode) == 0o700
    assert load_config() == Config(server="http://127.0.0.1:8000", token="secret-token")


def test_saving_again_keeps_mode_0600_even_if_the_file_was_opened_up(config_home: Path):
    path = save_config(Config(server="http://a", token="one"))
    path.chmod(0o644)
    save_config(Config(server="http://a", token="two"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_config().token == "two"


def test_without_login_the_message_says_how_to_log_in():
    with pytest.raises(NotLoggedIn, match="vance login"):
        load_config()


def test_server_urls_are_normalised():
    assert normalise_server("127.0.0.1:8000/") == "http://127.0.0.1:8000"
    assert normalise_server("https://brain.example/") == "https://brain.example"
    assert Config("https://brain.example", "t").websocket_url == "wss://brain.example/ws/brain/"
    assert Config("http://h:1", "t").websocket_url == "ws://h:1/ws/brain/"
    with pytest.raises(ValueError, match="http:// or https://"):
        normalise_server("ftp://brain")


def test_the_session_is_remembered_per_working_directory(config_home: Path):
    here = SessionMemory("http://a", "proj_default", "/work/one")
    there = SessionMemory("http://a", "proj_default", "/work/two")
    here.remember(RememberedSession("sess_4", 17))
    assert here.recall() == RememberedSession("sess_4", 17)
    assert there.recall() is None
    assert stat.S_IMODE((config_home / "sessions.json").stat().st_mode) == 0o600
    here.forget()
    assert here.recall() is None


def test_the_machine_id_comes_from_the_os_and_is_stable(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(fingerprint, "os_machine_id", lambda: "0123456789abcdef")
    first = fingerprint.machine_id()
    assert first == fingerprint.machine_id()
    # hashed with an application key, so the raw OS id never leaves the machine
    assert "0123456789abcdef" not in first
    assert len(first) == 32


def test_without_an_os_machine_id_a_generated_one_is_kept(
    monkeypatch: pytest.MonkeyPatch, config_home: Path
):
    monkeypatch.setattr(fingerprint, "os_machine_id", lambda: None)
    first = fingerprint.machine_id()
    assert (config_home / "machine-id").exists()
    assert fingerprint.machine_id() == first


def test_vance_machine_id_overrides_the_os(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("VANCE_MACHINE_ID", "container-7")
    assert fingerprint.machine_id() == "container-7"


def test_on_linux_the_os_id_is_read_from_etc_machine_id(monkeypatch: pytest.MonkeyPatch):
    if not Path("/etc/machine-id").exists() and not Path("/var/lib/dbus/machine-id").exists():
        pytest.skip("this machine has no /etc/machine-id")
    monkeypatch.setattr(fingerprint.sys, "platform", "linux")
    assert fingerprint.os_machine_id()


def test_the_fingerprint_names_machine_directory_home_and_user(tmp_path: Path):
    fp = fingerprint.current_fingerprint(tmp_path)
    data = fp.as_protocol()
    assert data["workingDir"] == str(tmp_path.resolve())
    assert data["userHome"] == str(Path.home())
    assert data["machineId"]
    assert set(data) == {"machineId", "workingDir", "userHome", "osUser"}
