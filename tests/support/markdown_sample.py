"""One answer in Markdown (a heading, bold and italics, a table, a list) that the web chat,
the Inbox page and `vance` are shown, so each test checks the same marks are gone."""

SATURN_REPORT = (
    "# Saturn report\n\n"
    "It has **95 moons** and *7 rings*.\n\n"
    "| body | count |\n"
    "|---|---|\n"
    "| moons | 95 |\n"
    "| rings | 7 |\n\n"
    "- first\n"
    "- second\n"
)
