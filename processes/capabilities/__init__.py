"""The process app's implementations of the engine capabilities (engines/capabilities.py)."""
