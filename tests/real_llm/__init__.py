"""Every engine driven by a real model (see conftest.py)."""

from __future__ import annotations

# SmolLM2-135M plans a deep think only with marvin's minimal plan schema (kind, title, goal):
# offered dependsOn, outputSchema and a recipe too, it listed AGGREGATE tasks and no WORKER.
# The full schema is for models that can use it; a project sets marvin.planSchema for a small one.
SMALL_MODEL_PLAN = {"planSchema": "minimal"}
