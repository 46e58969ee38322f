"""Bindings grouped by scope, agents with memory and segments, imports, program and files."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.binding import Binding as KeyBinding
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import NodeID, TreeNode

from prose_tui.model import Run
from prose_tui.tui.keys import keyed
from prose_tui.tui.targets import Target, binding_target, table_target

_KIND_STYLE = {"input": "cyan", "output": "bold green", "let": "", "const": "blue"}
PAGE = 200  # bindings per page in a scope with more than this


def _binding_label(b) -> Text:
    label = Text()
    label.append(b.name)
    label.append(f"  {b.kind or '—'}", _KIND_STYLE.get(b.kind or "", "dim") or "dim")
    if not b.exists:
        label.append("  missing", "yellow")
    elif b.encrypted:
        label.append("  encrypted", "yellow")
    elif b.warning:
        label.append("  ⚠", "yellow")
    if getattr(b, "failure", None):
        label.append(f"  ✗ {b.failure}", "bold red")
    return label


class BindingTree(Tree[Target]):
    """Posts ``TargetChosen`` when a leaf is highlighted or selected."""

    BINDINGS = keyed([
        KeyBinding("j", "cursor_down", "Down", show=False),
        KeyBinding("k", "cursor_up", "Up", show=False),
        KeyBinding("h,left", "collapse", "Collapse / to parent", show=False),
        KeyBinding("l,right", "expand", "Expand / into", show=False),
        KeyBinding("g,home", "first", "First item", show=False),
        KeyBinding("G,end", "last", "Last item", show=False),
    ])
    HELP_GROUP = "Bindings & agents"

    class TargetChosen(Message):
        """A leaf was highlighted (``opened`` false) or opened with Enter/``l`` (true)."""

        def __init__(self, target: Target, opened: bool = False) -> None:
            super().__init__()
            self.target = target
            self.opened = opened

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("run", id=id)
        self.show_root = False
        self.guide_depth = 2
        self._run_path: Path | None = None
        self.shape: tuple = ()
        self._lazy: dict[int, list[tuple[Text, Target | None]]] = {}
        self._imports: dict[int, str] = {}  # tree node id -> import handle

    @staticmethod
    def shape_of(run: Run | None) -> tuple:
        """What the tree shows of ``run``: rebuilding is needed only when this changes."""
        if run is None:
            return ()
        return (
            run.path,
            tuple((b.path, b.kind, b.exists, b.encrypted, bool(b.warning)) for b in run.bindings),
            tuple((a.name, a.scope, a.memory, tuple((s.path, s.timestamp) for s in a.segments)) for a in run.agents),
            tuple((i.import_handle, i.status, BindingTree.shape_of(i)) for i in run.imports),
            run.program_path, run.state_file, tuple(sec.title for sec in run.sections), tuple(run.tables),
        )

    def set_run(self, run: Run | None) -> None:
        """Rebuild for ``run``, keeping expanded groups and the highlighted item when the run is the same."""
        same = run is not None and run.path == self._run_path
        expanded = {self._label_key(n) for n in self._walk() if n.is_expanded} if same else set()
        selected = self.cursor_node.data if same and self.cursor_node else None
        self._run_path = run.path if run else None
        self.shape = self.shape_of(run)
        self._lazy.clear()
        self._imports.clear()
        self.clear()
        if run is None:
            return
        self._fill(self.root, run, expanded)
        self.root.expand()
        if selected is not None:
            for node in self._walk():
                if node.data is not None and node.data.path == selected.path and node.data.kind == selected.kind:
                    self.move_cursor(node)
                    break

    def _fill(self, parent: TreeNode[Target], run: Run, expanded: set[str]) -> None:
        bindings = parent.add(Text(f"Bindings ({len(run.bindings)})", "bold"), expand=True)
        groups: dict[str, list] = {}
        for b in run.bindings:
            group = f"service {b.service}" if b.service else b.scope
            groups.setdefault(group, []).append(b)
        for group in sorted(groups, key=lambda g: (g != "root", _eid(g), g)):
            members = sorted(groups[group], key=lambda b: b.name)
            node = bindings.add(Text(f"{group} ({len(members)})", "italic"),
                                expand=group == "root" or group in expanded or len(groups) <= 3)
            leaves: list[tuple[Text, Target | None]] = [(_binding_label(b), binding_target(b, run)) for b in members]
            if len(leaves) <= PAGE:
                for label, target in leaves:
                    node.add_leaf(label, target)
                continue
            # Thousands of leaves cost seconds to build: pages are filled when opened.
            for start in range(0, len(leaves), PAGE):
                page = node.add(Text(f"{start + 1}–{min(start + PAGE, len(leaves))}", "dim"), expand=False)
                self._lazy[page.id] = leaves[start:start + PAGE]
        agents = parent.add(Text(f"Agents ({len(run.agents)})", "bold"), expand=bool(run.agents))
        for a in run.agents:
            label = Text(a.name)
            label.append(f"  {a.scope or '—'}", "dim")
            if a.segments:
                label.append(f"  {len(a.segments)} segments", "dim")
            children: list[tuple[Text, Target | None]] = []
            if a.memory is not None:
                children.append((Text("memory.md"), Target("memory", f"{a.name} memory", a.memory)))
            for seg in a.segments:
                seg_label = Text(f"{seg.number:03d}")
                if seg.timestamp:
                    seg_label.append(f"  {seg.timestamp}", "dim")
                children.append((seg_label, Target("segment", f"{a.name} segment {seg.number:03d}", seg.path)))
            if not children:
                children.append((Text("no memory (stateless)", "dim"), None))
            node = agents.add(label, expand=False)
            self._lazy[node.id] = children  # an agent's segments are added when it is opened
            if self._label_key_text(label) in expanded:
                node.expand()
                self._populate(node)
        if run.imports:
            imports = parent.add(Text(f"Imports ({len(run.imports)})", "bold"), expand=True)
            for child in run.imports:
                label = Text(child.import_handle or child.id)
                label.append(f"  {child.status.value}", "dim")
                node = imports.add(label, expand=False)
                self._imports[node.id] = child.import_handle or child.id
                self._fill(node, child, expanded)
        if run.tables:
            tables = parent.add(Text(f"Tables ({len(run.tables)})", "bold"), expand=False)
            for table in run.tables:
                tables.add_leaf(Text(table), table_target(run, table))
        files = parent.add(Text("Files", "bold"), expand=False)
        if run.program_path is not None:
            files.add_leaf(Text(run.program_path.name), Target("program", run.program_path.name, run.program_path))
        if run.state_file is not None:
            files.add_leaf(Text(run.state_file.name), Target("state", run.state_file.name, run.state_file))
        for section in run.sections:
            files.add_leaf(Text(f"§ {section.title}"), Target("section", section.title, text=section.text))

    def _populate(self, node: TreeNode[Target]) -> None:
        """Add the children kept back for ``node`` (a page of bindings, an agent's segments)."""
        for label, target in self._lazy.pop(node.id, []):
            node.add_leaf(label, target)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        event.stop()
        self._populate(event.node)

    def _populate_matching(self, match) -> None:
        """Fill every kept-back node that holds an item ``match(label, target)`` accepts."""
        for node_id, children in list(self._lazy.items()):
            if any(match(label, target) for label, target in children):
                node = self.get_node_by_id(NodeID(node_id))
                self._populate(node)

    def action_collapse(self) -> None:
        """Collapse the highlighted group; on a leaf or a closed group, go to its parent."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    def action_expand(self) -> None:
        """Expand the highlighted group; on an open group, go to its first child; on a leaf,
        open it (as Enter does)."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            node.expand()
            self._populate(node)
        elif node.children:
            self.call_after_refresh(self.move_cursor, node.children[0])
        elif node.data is not None:
            self.post_message(self.TargetChosen(node.data, opened=True))

    def action_first(self) -> None:
        self.cursor_line = 0

    def action_last(self) -> None:
        self.cursor_line = max(0, self.last_line)

    def _walk(self):
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children)

    @staticmethod
    def _label_key_text(label: Text) -> str:
        return label.plain.split("  ")[0]

    def _label_key(self, node: TreeNode) -> str:
        return self._label_key_text(node.label) if isinstance(node.label, Text) else str(node.label)

    def select_binding_path(self, path) -> bool:
        """Highlight the leaf for the binding file ``path``; True when found."""
        self._populate_matching(lambda _label, target: target is not None and target.path == path)
        for node in self._walk():
            if node.data is not None and node.data.path == path:
                self._reveal(node)
                return True
        return False

    def _reveal(self, node: TreeNode[Target]) -> None:
        """Expand the ancestors of ``node`` and move the cursor to it once the lines exist."""
        parent = node.parent
        while parent is not None:
            parent.expand()
            parent = parent.parent
        self.call_after_refresh(self.move_cursor, node)

    def search(self, term: str, *, backwards: bool = False) -> bool:
        """Highlight the next item whose label contains ``term``."""
        needle = term.lower()
        self._populate_matching(lambda label, _target: needle in label.plain.lower())
        nodes = [n for n in self._walk() if n is not self.root]
        nodes.sort(key=lambda n: n.line if n.line >= 0 else 10**9)
        matches = [n for n in nodes if needle in (n.label.plain if isinstance(n.label, Text) else str(n.label)).lower()]
        if not matches:
            return False
        current = self.cursor_line
        ordered = matches[::-1] if backwards else matches
        pick = next((n for n in ordered if (n.line < current if backwards else n.line > current)), ordered[0])
        self._reveal(pick)
        return True

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(self.TargetChosen(event.node.data))

    class ImportChosen(Message):
        """Enter on an import: open it as a run of its own (``handle`` is its import name)."""

        def __init__(self, handle: str) -> None:
            super().__init__()
            self.handle = handle

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if event.node.id in self._imports:
            self.post_message(self.ImportChosen(self._imports[event.node.id]))
            return
        if event.node.data is not None:
            self.post_message(self.TargetChosen(event.node.data, opened=True))


def _eid(group: str) -> int:
    try:
        return int(group.rsplit(" ", 1)[-1])
    except ValueError:
        return -1
