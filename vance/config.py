"""Where `vance` keeps the server URL, the token and the session of each working directory.

Everything lives in one directory, `$VANCE_CONFIG_DIR` or `~/.config/vance/`, readable by the
owner only: the token is a credential.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_FILE = "config.json"
SESSIONS_FILE = "sessions.json"


class ConfigError(Exception):
    pass


class NotLoggedIn(ConfigError):
    pass


def config_dir() -> Path:
    explicit = os.environ.get("VANCE_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "vance"


def write_private_json(path: Path, data: dict[str, Any]) -> None:
    """Replace `path` atomically with a file only its owner can read (mode 0600)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(handle, 0o600)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Config:
    server: str
    token: str

    @property
    def websocket_url(self) -> str:
        scheme, _, rest = self.server.partition("://")
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/ws/brain/"


def normalise_server(url: str) -> str:
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = f"http://{url}"
    scheme = url.split("://", 1)[0]
    if scheme not in {"http", "https"}:
        raise ValueError(f"server URL must start with http:// or https://, not {scheme}://")
    return url


def save_config(config: Config) -> Path:
    path = config_dir() / CONFIG_FILE
    write_private_json(path, {"server": config.server, "token": config.token})
    return path


def load_config() -> Config:
    path = config_dir() / CONFIG_FILE
    data = read_json(path)
    server, token = data.get("server"), data.get("token")
    if not isinstance(server, str) or not isinstance(token, str) or not server or not token:
        raise NotLoggedIn(
            f"not logged in ({path} has no server and token); run "
            "`vance login --server URL --token-file PATH` first"
        )
    return Config(server=server, token=token)


@dataclass
class RememberedSession:
    session_id: str
    last_seq: int


class SessionMemory:
    """The session each (server, project, working directory) last used, and the last event seq
    it saw, so `vance chat` resumes it and asks only for what it missed."""

    def __init__(self, server: str, project: str, working_dir: str) -> None:
        self.path = config_dir() / SESSIONS_FILE
        self.key = f"{server} {project} {working_dir}"

    def recall(self) -> RememberedSession | None:
        entry = read_json(self.path).get(self.key)
        if not isinstance(entry, dict) or not isinstance(entry.get("sessionId"), str):
            return None
        return RememberedSession(entry["sessionId"], int(entry.get("lastSeq") or 0))

    def remember(self, session: RememberedSession) -> None:
        data = read_json(self.path)
        data[self.key] = {"sessionId": session.session_id, "lastSeq": session.last_seq}
        write_private_json(self.path, data)

    def forget(self) -> None:
        data = read_json(self.path)
        if data.pop(self.key, None) is not None:
            write_private_json(self.path, data)
