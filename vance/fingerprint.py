"""The client fingerprint a session is bound to: which machine, which directory, which user.

The Brain refuses to resume a session from another machine and marks its processes with
context drift when the working directory changed (docs/protocol.md), so the machine id must be
stable across runs: it comes from the operating system, and only when the OS has none from a
random id kept in the config directory.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vance.config import config_dir

MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id", "/etc/hostid")
FALLBACK_FILE = "machine-id"


@dataclass(frozen=True)
class Fingerprint:
    machine_id: str
    working_dir: str
    user_home: str
    os_user: str

    def as_protocol(self) -> dict[str, Any]:
        return {
            "machineId": self.machine_id,
            "workingDir": self.working_dir,
            "userHome": self.user_home,
            "osUser": self.os_user,
        }


def _from_files() -> str | None:
    for name in MACHINE_ID_FILES:
        try:
            value = Path(name).read_text(encoding="ascii", errors="ignore").strip()
        except OSError:
            continue
        if value:
            return value
    return None


def _from_macos() -> str | None:
    try:
        out = subprocess.run(
            ["ioreg", "-rd1", "-c", "IOPlatformExpertDevice"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'"IOPlatformUUID"\s*=\s*"([^"]+)"', out)
    return match.group(1) if match else None


def _from_windows() -> str | None:
    try:
        import winreg  # type: ignore[import-not-found,unused-ignore]

        key = winreg.OpenKey(  # type: ignore[attr-defined,unused-ignore]
            winreg.HKEY_LOCAL_MACHINE,  # type: ignore[attr-defined,unused-ignore]
            r"SOFTWARE\Microsoft\Cryptography",
        )
        value, _ = winreg.QueryValueEx(key, "MachineGuid")  # type: ignore[attr-defined,unused-ignore]
        return str(value)
    except (ImportError, OSError):
        return None


def os_machine_id() -> str | None:
    """The operating system's own stable machine id, if it has one."""
    if sys.platform == "darwin":
        return _from_macos()
    if sys.platform == "win32":
        return _from_windows()
    return _from_files()


def _fallback_machine_id() -> str:
    path = config_dir() / FALLBACK_FILE
    try:
        value = path.read_text(encoding="ascii").strip()
        if value:
            return value
    except OSError:
        pass
    value = uuid.uuid4().hex
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(value + "\n", encoding="ascii")
    return value


def machine_id() -> str:
    """A stable id of this machine. `VANCE_MACHINE_ID` overrides it (containers whose
    machine-id changes per start, tests). The OS id is hashed with an application key, as
    machine-id(5) asks, so the Brain never stores the raw value."""
    explicit = os.environ.get("VANCE_MACHINE_ID")
    if explicit:
        return explicit
    raw = os_machine_id() or _fallback_machine_id()
    return hashlib.sha256(f"vance-cli:{raw}".encode()).hexdigest()[:32]


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def current_fingerprint(working_dir: Path | None = None) -> Fingerprint:
    return Fingerprint(
        machine_id=machine_id(),
        working_dir=str((working_dir or Path.cwd()).resolve()),
        user_home=str(Path.home()),
        os_user=os_user(),
    )
