"""The value viewer: a binding, memory or segment as Markdown (or raw), tailing the file.

Reads through the source layer in windows (``targets.read_target``), never a whole
large file, and never on the UI thread: files and sources' values are read in a worker
thread ("reading…" shows meanwhile; a reader's failure is a warning line, never a traceback). When the file changes on disk, ``reload`` updates in place: the reader's
scroll position is kept (or the end is followed if the reader was at the end) and text
appended since the last read is marked with a bar and a "new" rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from prose_tui.backends.common.text import visible
from prose_tui.model import VALUE_WINDOW, ValueWindow
from prose_tui.tui.highlight import highlight_lines
from prose_tui.tui.keys import keyed
from prose_tui.tui.targets import Target, TargetRead, needs_reading, read_target
from prose_tui.tui.widgets.line_view import Line, LineView
from prose_tui.tui.widgets.repaint import show_text
from prose_tui.tui.widgets.sizes import human_size

WINDOW = VALUE_WINDOW  # the first window into a value (32 KiB): a few screens, quick to render
MAX_WINDOW = 4 * 1024 * 1024  # the window doubles as the reader scrolls, up to this
MARKDOWN_LIMIT = 96 * 1024


_MARKDOWN_LINE = re.compile(r"^\s{0,3}(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>|```|~~~|\|.*\|)")
_MARKDOWN_INLINE = re.compile(r"\*\*[^*]+\*\*|`[^`]+`|\[[^\]]+\]\([^)]+\)|__[^_]+__")


def looks_like_markdown(text: str) -> bool:
    """True when ``text`` has Markdown structure (headings, lists, fences, tables, emphasis,
    links). Plain text such as command output is shown as written, line for line: Markdown
    would run its lines together into one paragraph."""
    lines = text.splitlines()[:400]
    if len(lines) <= 1:
        return True
    return any(_MARKDOWN_LINE.match(line) for line in lines) or bool(_MARKDOWN_INLINE.search(text[:20000]))


def _window_of(target: Target, prefetched: ValueWindow, window: int, tail: bool) -> bool:
    """True when ``prefetched`` is what reading ``target`` now would give: its file from the
    binding's value offset, the first ``window`` bytes."""
    return (target.read is None and target.value is None and target.binding is not None and not tail
            and prefetched.max_bytes == window and prefetched.offset == target.binding.value_offset)


def import_markdown() -> None:
    """Import what the viewer shows Markdown with (``rich.markdown``, markdown-it-py, Pygments'
    lexers: 0.1-0.15 s, once), on any thread: a worker that knows a value is about to be
    shown (a history move) calls it, so the UI thread does not import it then."""
    import rich.markdown  # noqa: F401


class ValueViewer(Vertical, can_focus=True):
    """Shows one ``Target``. ``r`` toggles raw, ``t`` jumps between the head and tail windows."""

    BINDINGS = keyed([
        Binding("r", "toggle_raw", "Raw/Markdown"),
        Binding("t", "toggle_tail", "Head/tail of a large value (end/start of a small one)", show=False),
        Binding("j,down", "scroll(1)", "Down", show=False),
        Binding("k,up", "scroll(-1)", "Up", show=False),
        Binding("ctrl+d,pagedown", "page(1)", "Page down", show=False),
        Binding("ctrl+u,pageup", "page(-1)", "Page up", show=False),
        Binding("g,home", "top", "Top", show=False),
        Binding("G,end", "bottom", "Bottom", show=False),
    ])
    HELP_GROUP = "Value"
    DEFAULT_CSS = """
    ValueViewer { padding: 0 0 0 1; }
    ValueViewer > #value-head { color: $text-muted; height: 1; }
    ValueViewer > #value-note { color: $text-muted; text-style: dim; height: auto; max-height: 3; display: none; }
    ValueViewer > #value-note.-shown { display: block; }
    ValueViewer > #value-body { height: 1fr; }
    ValueViewer > #value-warning { color: $warning; display: none; }
    ValueViewer > #value-warning.-shown { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.target: Target | None = None
        self.raw = False
        self.tail = False
        self.window = WINDOW
        self.text = ""
        self.note = ""  # the shown value's note (``Value.note``), a dim line under the head
        self._new_from: int | None = None
        self._changed_at: datetime | None = None
        self.search_term = ""
        self.reading = False  # a read is on its way from a worker thread (a ready signal)
        self._generation = 0
        self._file_bytes = 0
        self._cut = False
        self._read_error: str | None = None

    def compose(self):
        yield Static(id="value-head")
        yield Static(id="value-note")
        yield Static(id="value-warning")
        yield LineView(id="value-body")

    # -- public -------------------------------------------------------------------------------
    def show_target(self, target: Target | None, *, prefetched: ValueWindow | None = None) -> None:
        """Show ``target`` from the top (a new item resets position, raw mode and tail). A
        file or a source's value is read in a worker thread; "reading…" shows meanwhile.
        ``prefetched``: the file's value as the live worker read it with a change (used
        when it is the window this would read)."""
        if target is not None and self.target is not None and target.key == self.target.key:
            return  # the same item (a tree re-highlight): keep position and the new-text mark
        self.target = target
        self.tail = False
        self.window = WINDOW
        self._new_from = None
        self._changed_at = None

        def shown(result: TargetRead) -> None:
            self._take(result)
            self.text = result.text
            self._render_all()
            self.scroll_home(animate=False)

        if needs_reading(target):
            self._take(TargetRead(note=target.note if target is not None else ""))
            self.text = ""
        self._read(shown, prefetched)
        if self.reading:
            self._render_all()
            self.scroll_home(animate=False)

    def reload(self, *, now: datetime | None = None, target: Target | None = None,
               prefetched: ValueWindow | None = None) -> None:
        """Re-read the shown file after it changed (in a worker thread; what is shown stays
        until the new text is there); keep position, mark what is new.

        ``target`` replaces the shown target (the same file, re-read binding metadata);
        ``prefetched`` is the file's value as the live worker read it (see ``show_target``)."""
        if target is not None:
            self.target = target
        if self.target is None:
            return

        def reloaded(result: TargetRead) -> None:
            body = self.body
            at_end = body.max_scroll_y > 0 and body.scroll_y >= body.max_scroll_y - 1
            old = self.text
            self._take(result)
            new = result.text
            if new == old:
                self._render_head()
                return
            self._new_from = len(old) if new.startswith(old) and old else None
            self._changed_at = now or datetime.now()
            self.text = new
            self._render_all(scroll="end" if at_end or self.tail else "keep")

        self._read(reloaded, prefetched)

    @property
    def body(self) -> LineView:
        return self.query_one("#value-body", LineView)

    def search(self, term: str, *, backwards: bool = False) -> bool:
        """Show the value raw with ``term`` highlighted and go to its next (previous) hit.

        Every occurrence is a hit, also several on one line and in wrapped lines: hits are
        counted in the text and mapped to the screen rows the wrapped lines take."""
        needle = term.lower()
        if term != self.search_term:
            self._hit = -1 if not backwards else 0
        self.search_term = term
        lowered = self.text.lower()
        starts = []
        at = lowered.find(needle) if needle else -1
        while at >= 0:
            starts.append(at)
            at = lowered.find(needle, at + max(1, len(needle)))
        if not starts:
            self._render_all()
            return False
        self.raw = True  # row positions are exact in raw mode
        self._render_all()
        self._hit = (getattr(self, "_hit", -1) + (-1 if backwards else 1)) % len(starts)
        self.hit_row = self._row_of(starts[self._hit])
        self.body.scroll_to(y=max(0, self.hit_row - 1), animate=False)
        return True

    def _row_of(self, offset: int) -> int:
        """The screen row (wrapped at the body's width) where character ``offset`` is shown."""
        width = max(1, self.body.scrollable_content_region.width or self.body.size.width or 80)
        console = self.app.console
        row = 0
        pos = 0
        for line in self.text.splitlines(keepends=True):
            end = pos + len(line)
            wrapped = Text(line.rstrip("\n")).wrap(console, width) if line.strip() else [Text()]
            if offset < end:
                return row + min(len(wrapped) - 1, (offset - pos) // width)
            row += max(1, len(wrapped))
            pos = end
        return row

    # -- actions ---------------------------------------------------------------------------------
    def action_toggle_raw(self) -> None:
        self.raw = not self.raw
        self._render_all()

    def action_toggle_tail(self) -> None:
        """``t``: the head or the tail window of a value too large to show whole; on a value
        shown whole, its end (or its start again), and a note saying there is no tail to read."""
        if self.target is None:
            self.app.notify("No value shown: choose a binding, agent or segment in the Data pane (4)",
                            severity="warning", markup=False)
            return
        if not self._cut and not self.tail:
            at_end = self.body.scroll_y >= self.body.max_scroll_y
            if at_end:
                self.action_top()
            else:
                self.action_bottom()
            size = f" ({human_size(self._file_bytes)})" if self._file_bytes else ""
            self.app.notify(f"The whole value is shown{size}: no tail to read. t went to its {'start' if at_end else 'end'}.",
                            markup=False)
            return
        self.tail = not self.tail

        def shown(result: TargetRead) -> None:
            self._take(result)
            self.text = result.text
            self._render_all(scroll="end" if self.tail else "home")

        self._read(shown)

    def on_line_view_near_end(self, event: LineView.NearEnd) -> None:
        """Grow the window into a large value as the reader nears its end."""
        if self._cut and not self.tail and self.window < MAX_WINDOW and not self.reading:
            self.window = min(self.window * 2, MAX_WINDOW)

            def grown(result: TargetRead) -> None:
                self._take(result)
                self.text = result.text
                self._render_all(scroll="keep")

            self._read(grown)

    def action_scroll(self, delta: int) -> None:
        self.body.scroll_to(y=self.body.scroll_y + delta, animate=False)

    def action_page(self, direction: int) -> None:
        self.body.scroll_to(y=self.body.scroll_y + direction * max(1, self.body.size.height - 1), animate=False)

    def action_top(self) -> None:
        self.body.scroll_to(y=0, animate=False)

    def action_bottom(self) -> None:
        self.body.scroll_end(animate=False)

    # -- reading and rendering ---------------------------------------------------------------------
    def _read(self, then: Callable[[TargetRead], None], prefetched: ValueWindow | None = None) -> None:
        """Read the target (``targets.read_target``) and hand the result to ``then`` on the UI
        thread: at once for text in memory or a value the live worker read (``prefetched``,
        when it is the window asked for), else from a worker thread (group ``value``; a
        newer read makes an older one's result be dropped). ``reading`` is True meanwhile."""
        target, window, tail = self.target, self.window, self.tail
        self._generation += 1
        generation = self._generation
        if not needs_reading(target):
            self.reading = False
            then(read_target(target, window=window, tail=tail))
            return
        if prefetched is not None and target is not None and _window_of(target, prefetched, window, tail):
            self.reading = False
            then(TargetRead(prefetched.text.lstrip("\n"), target.note, prefetched.size, prefetched.cut))
            return
        self.reading = True
        app = self.app

        def work() -> None:
            try:
                result = read_target(target, window=window, tail=tail)
            except Exception as exc:  # never a traceback: the viewer says what failed
                result = TargetRead(note=target.note if target is not None else "", error=f"cannot read the value: {exc}")
            try:
                app.call_from_thread(self._read_done, generation, then, result)
            except RuntimeError:  # the app is closing
                pass

        self.run_worker(work, name="value-read", group="value", exclusive=True, thread=True, exit_on_error=False)

    def _read_done(self, generation: int, then: Callable[[TargetRead], None], result: TargetRead) -> None:
        if generation != self._generation or not self.is_mounted:
            return  # another read was asked for since: its result is the one to show
        self.reading = False
        then(result)

    def _take(self, result: TargetRead) -> None:
        self.note = result.note
        self._file_bytes, self._cut, self._read_error = result.size, result.cut, result.error

    def _render_head(self) -> None:
        if self.is_mounted:
            show_text(self.query_one("#value-head", Static), self._head())

    def _head(self) -> Text:
        t = self.target
        head = Text(no_wrap=True, overflow="ellipsis")
        if t is None:
            head.append("Select a binding, memory or segment (Enter on a trace line opens its binding)")
            return head
        head.append(t.title, "bold")
        b = t.binding
        if b is not None:
            # a contract's binding by its service, as the bindings tree groups it; else its scope
            head.append(f"  {b.kind or 'no kind'} · {f'service {b.service}' if b.service else b.scope}")
        if self._file_bytes:
            head.append(f" · {human_size(self._file_bytes)}")
        if self.reading:
            head.append(" · reading…", "dim")
        head.append(f" · {'raw' if self.raw or not t.markdown else 'markdown'}", "dim")
        if self._changed_at is not None:
            head.append(f" · updated {self._changed_at:%H:%M:%S}", "bold")
        return head

    def _warning(self) -> str | None:
        t = self.target
        parts = []
        if self._read_error:
            parts.append(self._read_error)
        if t is not None and t.binding is not None and t.binding.outside:
            pass  # the read said "outside the run: not read" (the file is never opened)
        elif t is not None and t.binding is not None and t.binding.encrypted:
            parts.append("This binding is SOPS-encrypted; its value cannot be shown without the key.")
        elif t is not None and t.binding is not None and not t.binding.exists:
            parts.append("The Index names this binding but its file does not exist yet.")
        elif t is not None and t.warning and t.warning != self._read_error:
            parts.append(t.warning)
        if self._cut:
            where = "last" if self.tail else "first"
            more = "" if self.tail else "scroll down for more, "
            parts.append(f"Showing the {where} {human_size(self.window)} of {human_size(self._file_bytes)}; {more}press t for the {'head' if self.tail else 'tail'}.")
        return "  ".join(f"⚠ {p}" for p in parts) or None

    def _split(self) -> tuple[str, str]:
        """The text read before the last change, and what the change appended."""
        text = self.text
        return (text[: self._new_from], text[self._new_from:]) if self._new_from is not None else (text, "")

    def _shows_raw(self) -> bool:
        t, text = self.target, self.text
        return t is not None and (self.raw or not t.markdown or len(text) > MARKDOWN_LIMIT or not looks_like_markdown(text))

    def _body(self) -> RenderableType:
        t = self.target
        text = self.text
        if t is None or not text:
            if self.reading:
                return Text("reading…", "dim")
            encrypted = t is not None and t.binding is not None and t.binding.encrypted
            return Text("(empty)" if t is not None and not encrypted else "", "dim")
        if t.binding is not None and t.binding.source and not self.raw:
            source = Text("source:\n", "dim")
            for line in highlight_lines(t.binding.source.splitlines()):
                source.append("  ")
                source.append_text(line)
                source.append("\n")
        else:
            source = None
        old, new = self._split()
        if self._shows_raw():
            body: RenderableType = self._raw(old, new)
        else:
            # rich.markdown (with markdown-it-py, rich.syntax and Pygments' lexers) is a fifth of
            # the explorer's imports: loaded when a value is first shown as Markdown (issue 33).
            from rich.markdown import Markdown

            parts: list[RenderableType] = [Markdown(old)] if old.strip() else []
            if new:
                parts += [Rule("new", style="bold green"), Markdown(new)]
            body = Group(*parts)
        return Group(source, body) if source is not None else body

    def _body_lines(self) -> list[Line] | None:
        """The body as lines to render when painted (``LineView.set_lines``): a raw value
        without a source block; ``None`` for what is rendered whole (Markdown, a binding's
        source, an empty value)."""
        t = self.target
        if t is None or not self.text or not self._shows_raw():
            return None
        if t.binding is not None and t.binding.source and not self.raw:
            return None
        return self._raw_lines(*self._split())

    def _raw(self, old: str, new: str) -> Text:
        """The raw body as one ``Text`` (what ``_raw_lines`` gives, row for row)."""
        return Text("\n").join(Text(line) if isinstance(line, str) else line for line in self._raw_lines(old, new))

    def _raw_lines(self, old: str, new: str) -> list[Line]:
        """The raw body's lines (split on newlines only, as Rich splits a text): a program
        highlighted, other text as written, text appended since the last read behind a bar,
        search hits reversed."""
        if self.target is not None and self.target.kind == "program":
            return [*highlight_lines((old + new).splitlines()), ""]
        rows = old.split("\n")
        out: list[Line] = list(rows)
        if new:
            out.pop()
            current = Text(rows[-1])  # the row the appended text continues
            for chunk in new.splitlines(keepends=True):
                current.append("▌", "bold green")
                pieces = chunk.split("\n")
                current.append(pieces[0])
                for piece in pieces[1:]:
                    out.append(current)
                    current = Text(piece)
            out.append(current)
        term = self.search_term
        if term:
            needle = term.lower()
            for i, line in enumerate(out):
                plain = line if isinstance(line, str) else line.plain
                if needle in plain.lower():
                    styled = Text(line) if isinstance(line, str) else line
                    styled.highlight_words([term], "reverse", case_sensitive=False)
                    out[i] = styled
        return out

    def _render_all(self, *, scroll: str = "keep") -> None:
        if not self.is_mounted:
            return
        # The head is one row: a new text repaints it alone (no screen-wide layout).
        show_text(self.query_one("#value-head", Static), self._head())
        note = visible(self.note).replace("\n", " ") if self.note else ""
        if note != getattr(self, "_shown_note", None):
            self._shown_note = note
            box = self.query_one("#value-note", Static)
            box.update(Text(note, "dim", overflow="fold"))  # a content address breaks, not jumps a row
            box.set_class(bool(note), "-shown")
        warning = self._warning()
        if warning != getattr(self, "_shown_warning", None):
            self._shown_warning = warning
            box = self.query_one("#value-warning", Static)
            box.set_class(bool(warning), "-shown")
            show_text(box, Text(warning or ""))
        lines = self._body_lines()
        if lines is not None:
            self.body.set_lines(lines, scroll=scroll)  # rendered as painted: costs what is shown
        else:
            self.body.set_renderable(self._body(), scroll=scroll)
