"""Small typed readers for environment variables, so settings.py reads as a table."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def secret_key(var_dir: Path) -> str:
    """SECRET_KEY when given; otherwise one key generated under `var_dir`, kept across
    restarts."""
    configured = env_str("SECRET_KEY")
    if configured:
        return configured
    key_file = var_dir / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()
