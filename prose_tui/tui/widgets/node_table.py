"""The node view: one dense row per node of an openprose-0.15 run or Reactor state dir
(concepts/reactor.md): glyph, name, last receipt status, receipts, version, fresh/reused
tokens, producers. Shown where the call stack goes when the run has nodes."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from prose_tui.model import Node

NODE_GLYPH = {"rendered": ("✓", "green"), "skipped": ("∅", "dim"), "failed": ("✗", "bold red"), None: ("·", "dim")}


def short_version(version: str | None) -> str:
    """``sha256:9f2c4e…`` shortened to ``9f2c4e1``; other versions as written, cut to 12."""
    if not version:
        return "—"
    return version.split(":", 1)[1][:7] if ":" in version else version[:12]


def tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


class NodeTable(DataTable):
    """``set_nodes`` fills it; the row cursor moves over nodes; search finds a name."""

    HELP_GROUP = "Nodes"
    # Its own list, so help shows these and not DataTable's (``Ctrl+Home Top``, ``Home Home``);
    # DataTable's keys still work (Textual merges bindings along the class chain).
    BINDINGS = [
        Binding("j", "cursor_down", "Down a node", show=False),
        Binding("k", "cursor_up", "Up a node", show=False),
        Binding("g,home,ctrl+home", "scroll_top", "First node", show=False),
        Binding("G,end,ctrl+end", "scroll_bottom", "Last node", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self.nodes: list[Node] = []

    def on_mount(self) -> None:
        self.add_columns(" ", "node", "status", "rcpt", "version", "fresh/reused", "producers")

    def set_nodes(self, nodes: list[Node]) -> None:
        if [(n.name, n.status, n.receipts, n.version) for n in nodes] == [(n.name, n.status, n.receipts, n.version) for n in self.nodes] and self.row_count:
            return
        self.nodes = list(nodes)
        row = self.cursor_row
        self.clear()
        for n in nodes:
            glyph, style = NODE_GLYPH.get(n.status, ("?", "yellow"))
            status = Text(n.status or "—", style if n.status else "dim")
            if n.failure_reason:
                status.append(f" {n.failure_reason}", "red")
            producers = list(getattr(n, "producers", []) or [])
            self.add_row(Text(glyph, style), Text(n.name, "bold"), status, str(n.receipts),
                         short_version(n.version), f"{tokens(n.tokens_fresh)}/{tokens(n.tokens_reused)}",
                         Text(", ".join(producers) or "—", "dim"))
        if nodes:
            self.move_cursor(row=min(row, len(nodes) - 1))

    def search(self, term: str, *, backwards: bool = False) -> bool:
        needle = term.lower()
        count = len(self.nodes)
        for step in range(1, count + 1):
            i = (self.cursor_row + (-step if backwards else step)) % count
            if needle in self.nodes[i].name.lower():
                self.move_cursor(row=i)
                return True
        return False
