"""marvin, the deep-think engine: `engine.py` (the engine), `state.py` (its engine_state and
which nodes may run), `prompts.py` (its LLM steps' tools and prompts)."""

from engines.builtin.marvin.engine import Marvin

__all__ = ["Marvin"]
