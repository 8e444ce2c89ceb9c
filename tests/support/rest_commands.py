"""`vance`'s REST commands run as a subprocess against a Brain process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FINGERPRINT = {"machineId": "rest-test-machine", "workingDir": "/srv/rest"}


def run_vance(config_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VANCE_CONFIG_DIR": str(config_dir), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "vance", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
