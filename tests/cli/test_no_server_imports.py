"""The `vance` client stands on its own: importing it loads no Django, no Celery and nothing of
the Brain's packages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import vance

SERVER_PACKAGES = {
    "django",
    "celery",
    "vancetope",
    "processes",
    "engines",
    "sessions_app",
    "recipes_app",
    "webui",
}


def test_importing_every_vance_module_loads_no_django_celery_or_server_package():
    # given: every module of the package (__main__ would run the CLI; it only imports vance.main)
    modules = sorted(
        f"vance.{path.stem}"
        for path in Path(vance.__file__).parent.glob("*.py")
        if path.stem not in {"__init__", "__main__"}
    )
    assert {"vance.main", "vance.chat", "vance.local_tools", "vance.tool_calls"} <= set(modules)
    script = (
        f"import {', '.join(modules)}; import sys, json; "
        f"print(json.dumps(sorted(m for m in sys.modules "
        f"if m.split('.')[0] in {sorted(SERVER_PACKAGES)!r})))"
    )
    # when: a fresh interpreter imports them all
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    # then
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
