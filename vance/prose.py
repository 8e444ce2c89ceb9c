"""What a model or a process wrote, shown as the Markdown it is: on a terminal drawn by rich's
Markdown (headings, bold, lists, tables with box lines, code); where the output is no terminal
(a pipe, a file) as it was written. The terminal test is rich's own (`Console.is_terminal`:
a TTY, or FORCE_COLOR / TTY_COMPATIBLE set), the one that already turns colour and the
prompt on or off.

A streamed answer on a terminal is drawn again as it grows (`LiveAnswer`): its last
screenful while it streams, then the whole of it, once, when it is complete.

HTML in the Markdown is read as text (`TextMarkdown`): a terminal draws no HTML, and rich leaves
out a tag it does not know, so `Saturn: 95 <moons>` would lose its `<moons>`."""

from __future__ import annotations

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

# Who speaks, as a chat shows it: `brain › ` before an answer.
PREFIX_STYLE = "bold cyan"
# How often a streaming answer is drawn again: enough to read along, seldom enough that a long
# answer's Markdown is not parsed again for every word.
REDRAWS_PER_SECOND = 8
# rich's Markdown parser (CommonMark, tables, strikethrough) with HTML left as text.
PARSER = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")


class TextMarkdown(Markdown):
    """rich's Markdown, its HTML shown as written (the module docstring)."""

    def __init__(self, markup: str) -> None:
        super().__init__("")
        self.markup = markup
        self.parsed = PARSER.parse(markup)


class Prose:
    """Markdown drawn on a terminal; the text as written elsewhere."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield TextMarkdown(self.text) if options.is_terminal else Text(self.text)


class Said:
    """Who speaks (`brain › `), then what they said: on a terminal its Markdown beside the
    prefix, each line under the first; elsewhere one line of text, as written."""

    def __init__(self, prefix: str, text: str, prefix_style: str = PREFIX_STYLE) -> None:
        self.prefix = prefix
        self.prefix_style = prefix_style
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not options.is_terminal:
            yield Text.assemble((self.prefix, self.prefix_style), self.text)
            return
        grid = Table.grid()
        grid.add_column(no_wrap=True)
        grid.add_column()
        grid.add_row(Text(self.prefix, style=self.prefix_style), TextMarkdown(self.text))
        yield grid


class Tail:
    """The last `lines` lines of a renderable: a live display taller than the screen cannot
    be drawn again (its top has scrolled away), so a growing answer shows its end."""

    def __init__(self, renderable: RenderableType, lines: int) -> None:
        self.renderable = renderable
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rendered = console.render_lines(self.renderable, options, pad=False)
        new_line = Segment.line()
        for index, line in enumerate(rendered[-self.lines :]):
            if index:
                yield new_line
            yield from line


def draws_live(console: Console) -> bool:
    """Whether an answer can be drawn again in place: a terminal that moves its cursor."""
    return console.is_terminal and not console.is_dumb_terminal


def stream_answer(console: Console, prefix: str) -> LiveAnswer | PrintedAnswer:
    """An answer that starts streaming: drawn live on a terminal, printed word by word
    elsewhere."""
    if draws_live(console):
        return LiveAnswer(console, prefix)
    return PrintedAnswer(console, prefix)


class PrintedAnswer:
    """An answer streaming where nothing can be drawn again (a pipe): its words as they come,
    the line ended when it is complete."""

    def __init__(self, console: Console, prefix: str) -> None:
        self.console = console
        console.print(prefix, style=PREFIX_STYLE, end="")

    def add(self, text: str) -> None:
        self.console.print(text, end="", markup=False, highlight=False, soft_wrap=True)

    def end(self, final: str | None = None) -> None:
        self.console.print()


class LiveAnswer:
    """An answer streaming to a terminal, drawn as Markdown as it grows."""

    def __init__(self, console: Console, prefix: str) -> None:
        self.console = console
        self.prefix = prefix
        self.text = ""
        self.done = False
        self.live = Live(
            console=console,
            get_renderable=self._renderable,
            refresh_per_second=REDRAWS_PER_SECOND,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.live.start(refresh=True)

    def add(self, text: str) -> None:
        self.text += text

    def end(self, final: str | None = None) -> None:
        """Drawn whole, once more, and left on the screen, the cursor on the line below: the
        stored `final` text when what streamed is its beginning (not when this drawing took up
        an answer half way, after another line cut it short: its start is above)."""
        if final is not None and self.text and final.startswith(self.text):
            self.text = final
        self.done = True
        self.live.stop()

    def _renderable(self) -> RenderableType:
        said = Said(self.prefix, self.text)
        return said if self.done else Tail(said, max(self.console.height - 1, 1))
