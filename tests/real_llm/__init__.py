"""Every engine driven by a real model (see conftest.py). SmolLM2-135M plans a deep think
only with marvin's minimal plan schema (kind, title, goal): offered dependsOn, outputSchema and
a recipe too, it listed AGGREGATE tasks and no WORKER. The Brain knows it as a small model
(vancetope/llm/windows.py `is_small_model`, the llm.modelSize setting), so the tests use the
defaults, as a new user would."""
