"""A stand-in llama-cpp-python built for another CPU: it loads a model, and its first completion
kills the process with a signal (as a prebuilt wheel's llama_decode did, SIGSEGV). Put the
folder it is written to first on PYTHONPATH of the process that should import it."""

from __future__ import annotations

from pathlib import Path

MODULE = """\
import os
import signal


class Llama:
    def __init__(self, model_path, n_ctx=512, verbose=True, **kwargs):
        self.model_path = model_path

    def create_chat_completion(self, **kwargs):
        os.kill(os.getpid(), signal.{signal_name})
"""


def crashing_llama_cpp(folder: Path, signal_name: str = "SIGSEGV") -> str:
    """Writes the package `llama_cpp` into `folder`; returns the folder, for PYTHONPATH."""
    package = folder / "llama_cpp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(MODULE.format(signal_name=signal_name))
    return str(folder)
