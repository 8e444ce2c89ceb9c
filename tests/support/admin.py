"""Admin form bodies."""

from __future__ import annotations

import json
from typing import Any

from tests.support.tenancy import Tenancy


def recipe_form(tenancy: Tenancy, **changes: Any) -> dict[str, Any]:
    return {
        "name": "ford-coding",
        "engine": "ford",
        "title": "Frankie",
        "description": "",
        "params": json.dumps({"temperature": 0.2}),
        "prompt_prefix": "",
        "allowed_tools_add": "[]",
        "allowed_tools_remove": "[]",
        "category": "user",
        "roles": "[]",
        "scope": "project",
        "tenant": str(tenancy.tenant.pk),
        "project": str(tenancy.project.pk),
        **changes,
    }
