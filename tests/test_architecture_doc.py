"""docs/architecture.md's "Four paths, one hop per box" stays true: every module a box names
exists, and every function or class named beside it is defined there, so a newcomer who
follows a box lands on the code that handles that step."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# `path/to/module.py  name` (two spaces), `… name → name`, `… Class.method`, `… a / b`; a
# word in brackets after the path, or after one space, is prose.
BOX = re.compile(
    r"(?P<path>[\w/]+\.py)(?:\s+\([^)]*\))?(?:\s{2,}(?P<names>[\w.]+(?:\s*(?:→|/)\s*[\w.]+)*))?"
)


def boxes() -> list[tuple[str, list[str]]]:
    text = DOC.read_text()
    section = text[text.index("## Four paths") : text.index("## Glossary")]
    found = []
    for block in re.findall(r"```\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            for match in BOX.finditer(line):
                names = re.split(r"\s*(?:→|/)\s*|\.", match.group("names") or "")
                found.append((match.group("path"), [name for name in names if name]))
    return found


def test_the_four_paths_name_their_steps() -> None:
    assert len(boxes()) >= 20


@pytest.mark.parametrize(("path", "names"), boxes(), ids=lambda value: str(value))
def test_every_box_names_a_module_that_defines_what_it_names(path: str, names: list[str]) -> None:
    module = ROOT / path
    assert module.is_file(), f"{path} does not exist"
    source = module.read_text()
    for name in names:
        assert re.search(rf"^\s*(async )?(def|class) {re.escape(name)}\b", source, re.M) or (
            re.search(rf"^{re.escape(name)}\s*[:=]", source, re.M)
        ), f"{name} is not defined in {path}"
