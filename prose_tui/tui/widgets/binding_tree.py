"""Bindings grouped by scope, agents with memory and segments, imports, program and files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Self

from rich.text import Text
from textual import events
from textual.binding import Binding as KeyBinding
from textual.geometry import Region
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import NodeID, TreeNode

from prose_tui.backends.common.contained import OUTSIDE_RUN
from prose_tui.model import Binding, Run, StatementState
from prose_tui.model.write_order import ordered_bindings
from prose_tui.remote import shown
from prose_tui.tui.keys import keyed
from prose_tui.tui.targets import Target, binding_target, table_target

_KIND_STYLE = {"input": "cyan", "output": "bold green", "let": "", "const": "blue"}
_COUNT = re.compile(r" \(\d+\)$")
PAGE = 200  # bindings per page in a scope with more than this


def _binding_label(b) -> Text:
    label = Text()
    label.append(b.name)
    label.append(f"  {b.kind or '—'}", _KIND_STYLE.get(b.kind or "", "dim") or "dim")
    if b.outside:  # before "missing": an Index row naming ../x.md is outside, whether or not x.md exists
        label.append(f"  {OUTSIDE_RUN}", "yellow")
    elif not b.exists:
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
        KeyBinding("enter", "select_cursor", "Open in the value pane; an import as a run", show=False),
    ])
    HELP_GROUP = "Bindings & agents"
    _resizing = False  # Tree's own resize handler is running (``refresh``)
    _nodes_changing = False  # Tree's ``_invalidate`` is running (``refresh``)

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
        # The shown run's top level, for growing in place (``show``): the "Bindings" node, each
        # scope group's node and its members' names in order, each agent's node.
        self._bindings_node: TreeNode[Target] | None = None
        self._groups: dict[str, TreeNode[Target]] = {}
        self._members: dict[str, list[tuple]] = {}  # (path, name, execution id) of each member, in order
        self._pages: dict[str, list[TreeNode[Target]]] = {}  # a paged group's pages, in order
        self._agent_nodes: list[TreeNode[Target]] = []
        self._binding_set: frozenset = frozenset()
        self._binding_keys: frozenset = frozenset()  # (path, name, execution id) of each binding
        self.rebuilds = 0  # whole rebuilds (``set_run``), for tests

    def _on_resize(self, event: events.Resize) -> None:
        # Runs just before Tree's own handler, which invalidates the lines and asks for a
        # layout of the whole screen (20-30 ms at 200x50, after every width change or pane
        # switch). This tree's size does not follow its lines, and its scrollable size is
        # set when the lines are rebuilt (a layout then, if it changed): a repaint will do.
        height, width = self.styles.height, self.styles.width
        self._resizing = not ((height is not None and height.is_auto) or (width is not None and width.is_auto))
        self.call_next(setattr, self, "_resizing", False)

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False, recompose: bool = False) -> Self:
        if self._resizing or self._nodes_changing:
            layout = False
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _invalidate(self) -> None:
        # Textual's Tree asks for a layout of the whole screen after any change of its nodes
        # (20-37 ms at 200x50: a live rebuild's frame). When this tree's size does not follow
        # its lines, its scrollable size, set when the lines are built again, asks for the
        # layout itself if it changed (``Widget.virtual_size``): a repaint will do.
        height, width = self.styles.height, self.styles.width
        self._nodes_changing = not ((height is not None and height.is_auto) or (width is not None and width.is_auto))
        try:
            super()._invalidate()
        finally:
            self._nodes_changing = False

    @staticmethod
    def shape_of(run: Run | None) -> tuple:
        """What the tree shows of ``run``: rebuilding is needed only when this changes. The
        last part stands for what orders the bindings (the record :func:`ordered_bindings`
        reads): ordering 10,000 bindings costs ten times this tuple, so it is done only when
        something changed."""
        if run is None:
            return ()
        return (
            run.path,
            tuple((b.path, b.name, b.execution_id, b.kind, b.exists, b.encrypted, bool(b.warning), b.listed)
                  for b in run.bindings),
            tuple((a.name, a.scope, a.memory, tuple((s.path, s.timestamp) for s in a.segments)) for a in run.agents),
            tuple((i.import_handle, i.status, BindingTree.shape_of(i)) for i in run.imports),
            run.program_path, run.state_file, tuple(sec.title for sec in run.sections), tuple(run.tables),
            _order_inputs(run),
        )

    def show(self, run: Run | None) -> None:
        """Show ``run``: nothing when its shape did not change; new bindings and new agent
        segments of the run shown are added in place (the group's and the agent's counts
        updated); any other change rebuilds (``set_run``)."""
        shape = self.shape_of(run)
        if shape == self.shape:
            return
        if run is None or not self._grow(run, shape):
            self.set_run(run, shape=shape)

    def _grow(self, run: Run, shape: tuple) -> bool:
        """Add what ``run`` (shape ``shape``) has beyond the shown shape, when that is only
        new bindings (in groups of at most ``PAGE``) and new segments of known agents; False
        (nothing changed) otherwise."""
        old = self.shape
        if not old or shape[0] != old[0] or shape[3:-1] != old[3:-1] or self._bindings_node is None:
            return False
        new_set = set(shape[1])
        if not self._binding_set <= new_set or len(new_set) != len(shape[1]):
            return False
        added = new_set - self._binding_set
        if any(entry[:3] in self._binding_keys for entry in added):
            return False  # a binding changed, not only added (a database's bindings share a path)
        old_agents, new_agents = old[2], shape[2]
        if len(old_agents) != len(new_agents) or len(self._agent_nodes) != len(run.agents):
            return False
        grown: list[int] = []
        for i, (was, now) in enumerate(zip(old_agents, new_agents)):
            if was == now:
                continue
            if was[:3] != now[:3] or now[3][:len(was[3])] != was[3]:
                return False
            node = self._agent_nodes[i]
            if not was[3] and was[2] is None and node.id not in self._lazy:
                return False  # its "no memory" line is on screen: rebuild
            grown.append(i)
        groups = _grouped(run)
        if list(groups)[:len(self._groups)] != list(self._groups):
            return False  # a new scope or service comes before one shown: rebuild
        added_keys = {entry[:3] for entry in added}
        new_bindings: list[Binding] = []
        for group, members in groups.items():
            keys = [_key(b) for b in members]
            if [k for k in keys if k not in added_keys] != self._members.get(group, []):
                return False  # the order of the bindings shown changed: rebuild
            fresh = [b for b in members if _key(b) in added_keys]
            if group in self._pages and keys[:len(keys) - len(fresh)] != self._members[group]:
                return False  # a paged group takes new bindings after its last one only
            if group not in self._pages and len(keys) > PAGE and fresh:
                return False  # the group would be paged: rebuild
            new_bindings.extend(fresh)
        for b in new_bindings:
            self._add_binding(b, run, groups)
        count = f"Bindings ({len(run.bindings)})"
        if str(self._bindings_node.label) != count:  # (a label set repaints its row: 1-2 ms an event)
            self._bindings_node.set_label(Text(count, "bold"))
        for i in grown:
            self._add_segments(self._agent_nodes[i], run.agents[i], len(old_agents[i][3]))
        self.shape = shape
        self._binding_set = frozenset(shape[1])
        self._binding_keys = frozenset(entry[:3] for entry in shape[1])
        return True

    def _add_binding(self, b: Binding, run: Run, groups: dict[str, list[Binding]]) -> None:
        """Add the leaf of ``b`` (new in ``run``) where ``groups`` (:func:`_grouped`) places it."""
        assert self._bindings_node is not None
        group = _group_of(b)
        node = self._groups.get(group)
        if node is None:  # a new group comes after those shown (checked by ``_grow``)
            node = self._bindings_node.add(Text(f"{group} (0)", "italic"),
                                           expand=group == "root" or len(self._groups) < 3)
            self._groups[group] = node
            self._members[group] = []
        names = self._members[group]
        shown = set(names)  # those before it in the group that are on screen
        at = 0
        for member in groups[group]:
            if member is b:
                break
            at += _key(member) in shown
        names.insert(at, _key(b))
        leaf = (_binding_label(b), binding_target(b, run))
        pages = self._pages.get(group)
        if pages is None:
            node.add_leaf(*leaf, before=at if at < len(names) - 1 else None)
        else:  # appended to the last page, or a new one
            start = PAGE * (len(pages) - 1)
            if len(names) - start > PAGE:
                start += PAGE
                pages.append(node.add(Text("", "dim"), expand=False))
                self._lazy[pages[-1].id] = []
            page = pages[-1]
            page.set_label(Text(f"{start + 1}–{len(names)}", "dim"))
            kept = self._lazy.get(page.id)
            if kept is not None:
                kept.append(leaf)
            else:
                page.add_leaf(*leaf)
        node.set_label(Text(f"{group} ({len(names)})", "italic"))

    def _add_segments(self, node: TreeNode[Target], agent, start: int) -> None:
        node.set_label(_agent_label(agent))
        children = [_segment_child(agent, seg) for seg in agent.segments[start:]]
        kept = self._lazy.get(node.id)
        if kept is not None:
            if kept and kept[-1][1] is None:  # "no memory yet": it has some now
                kept.pop()
                memory = _memory_child(agent)
                if memory is not None:
                    kept.append(memory)
            kept.extend(children)
            return
        for label, target in children:
            node.add_leaf(label, target)

    def set_run(self, run: Run | None, *, shape: tuple | None = None) -> None:
        """Rebuild for ``run``, keeping expanded groups and the highlighted item when the run is the same."""
        same = run is not None and run.path == self._run_path
        expanded = {self._label_key(n) for n in self._walk() if n.is_expanded} if same else set()
        selected = self.cursor_node.data if same and self.cursor_node else None
        self._run_path = run.path if run else None
        self.shape = self.shape_of(run) if shape is None else shape
        self.rebuilds += 1
        self._lazy.clear()
        self._imports.clear()
        self._bindings_node = None
        self._groups, self._members, self._agent_nodes, self._pages = {}, {}, [], {}
        self._binding_set = frozenset(self.shape[1]) if run is not None else frozenset()
        self._binding_keys = frozenset(entry[:3] for entry in self._binding_set)
        self.clear()
        if run is None:
            return
        self._fill(self.root, run, expanded)
        self.root.expand()
        if selected is not None:
            # By the target's key (kind, file, title), not its file alone: a database run's
            # bindings all live in one file. The new nodes get their lines on the next refresh.
            node = next((n for n in self._walk() if n.data is not None and n.data.key == selected.key), None)
            if node is not None:
                self.call_after_refresh(self.move_cursor, node)

    def _fill(self, parent: TreeNode[Target], run: Run, expanded: set[str]) -> None:
        top = parent is self.root
        bindings = parent.add(Text(f"Bindings ({len(run.bindings)})", "bold"), expand=True)
        if top:
            self._bindings_node = bindings
        groups = _grouped(run)
        for group, members in groups.items():  # each in the order the run wrote them (model.write_order.ordered_bindings)
            node = bindings.add(Text(f"{group} ({len(members)})", "italic"),
                                expand=group == "root" or group in expanded or len(groups) <= 3)
            if top:
                self._groups[group] = node
                self._members[group] = [_key(b) for b in members]
            leaves: list[tuple[Text, Target | None]] = [(_binding_label(b), binding_target(b, run)) for b in members]
            if len(leaves) <= PAGE:
                for label, target in leaves:
                    node.add_leaf(label, target)
                continue
            # Thousands of leaves cost seconds to build: pages are filled when opened.
            for start in range(0, len(leaves), PAGE):
                page = node.add(Text(f"{start + 1}–{min(start + PAGE, len(leaves))}", "dim"), expand=False)
                self._lazy[page.id] = leaves[start:start + PAGE]
                if top:
                    self._pages.setdefault(group, []).append(page)
        agents = parent.add(Text(f"Agents ({len(run.agents)})", "bold"), expand=bool(run.agents))
        for a in run.agents:
            label = _agent_label(a)
            children: list[tuple[Text, Target | None]] = []
            memory = _memory_child(a)
            if memory is not None:
                children.append(memory)
            children.extend(_segment_child(a, seg) for seg in a.segments)
            if not children:
                children.append((Text(_no_memory(a), "dim"), None))
            node = agents.add(label, expand=False)
            if top:
                self._agent_nodes.append(node)
            self._lazy[node.id] = children  # an agent's segments are added when it is opened
            if self._label_key_text(label) in expanded:
                node.expand()
                self._populate(node)
        if run.imports:
            imports = parent.add(Text(f"Imports ({len(run.imports)})", "bold"), expand=True)
            for child in run.imports:
                label = Text(child.import_handle or child.id)
                label.append(f"  {child.status.value}", "dim")
                if OUTSIDE_RUN in child.warnings:
                    label.append(f"  {OUTSIDE_RUN}", "yellow")
                node = imports.add(label, expand=False)
                self._imports[node.id] = child.import_handle or child.id
                self._fill(node, child, expanded)
        if run.tables:
            tables = parent.add(Text(f"Tables ({len(run.tables)})", "bold"), expand=False)
            for table in run.tables:
                tables.add_leaf(Text(table), table_target(run, table))
        files = parent.add(Text("Files", "bold"), expand=False)
        if run.program_path is not None:
            files.add_leaf(Text(run.program_path.name), Target("program", run.program_path.name, run.program_path,
                                                                root=run.root))
        if run.state_file is not None:
            files.add_leaf(Text(run.state_file.name), Target("state", run.state_file.name, run.state_file,
                                                              root=run.root))
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
        """What names a node across rebuilds: its label's first part without a count
        (``execution 3 (12)`` -> ``execution 3``: a group keeps its expansion as it grows)."""
        return _COUNT.sub("", label.plain.split("  ")[0])

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


def _agent_label(a) -> Text:
    label = Text(a.name)
    label.append(f"  {a.scope or '—'}", "dim")
    if a.segments:
        label.append(f"  {len(a.segments)} segments", "dim")
    return label


STATELESS_SCOPES = ("stateless", "session", "none", "false", "")  # an Index's words for an agent without memory


def _memory_child(a) -> tuple[Text, Target] | None:
    """The agent's memory as a tree leaf: its ``memory.md`` file, or the text a database row
    holds (``details["memory"]``, seeds/sqlite.md and postgres.md ``agents.memory``)."""
    if a.memory is not None:
        outside = a.memory in a.outside
        return (Text.assemble("memory.md", (f"  {OUTSIDE_RUN}", "yellow") if outside else ""),
                Target("memory", f"{a.name} memory", a.memory, root=a.root, warning=OUTSIDE_RUN if outside else None))
    text = a.details.get("memory")
    if text:
        return Text("memory"), Target("memory", f"{a.name} memory", text=text)
    return None


def _no_memory(a) -> str:
    """What the tree says under an agent with no memory and no segment: stateless only when
    its scope says so; a persistent (execution, project or user) agent's memory is not
    written yet, or not where its scope puts it."""
    scope = (a.scope or "").lower()
    if a.path is None and scope in STATELESS_SCOPES:
        return "no memory (stateless)"
    where = f" in {shown(str(a.path))}" if a.path is not None and not str(a.details.get("memory", "")) else ""
    return f"no memory yet ({scope or 'persistent'} scope){where}"


def _segment_child(a, seg) -> tuple[Text, Target | None]:
    label = Text(f"{seg.number:03d}")
    outside = seg.path in a.outside
    if seg.timestamp:
        label.append(f"  {seg.timestamp}", "dim")
    summary = a.details.get(f"segment_summary_{seg.number}")  # a database row's text, not a file
    if summary is not None:
        return label, Target("segment", f"{a.name} segment {seg.number:03d}", text=summary)
    if outside:
        label.append(f"  {OUTSIDE_RUN}", "yellow")
    return label, Target("segment", f"{a.name} segment {seg.number:03d}", seg.path, root=a.root,
                         warning=OUTSIDE_RUN if outside else None)


def _group_of(b: Binding) -> str:
    """The tree group of ``b``: its contract service, else its scope (``root``, ``execution N``)."""
    return f"service {b.service}" if b.service else b.scope


def _order_inputs(run: Run) -> tuple:
    """What :func:`prose_tui.model.write_order.write_order` orders ``run``'s bindings by, beyond the
    bindings themselves: its events (by identity and length) when it has any, else the
    bindings its entered trace lines name. A snapshot rewrite that only moves the executing
    marker leaves this the same, so the tree is not ordered again (it was, on every rewrite:
    a third of a 500-statement run's live frame)."""
    if run.events:
        return (id(run.events), len(run.events))
    unentered = (StatementState.NEXT, StatementState.PENDING)
    return tuple(t.binding for t in run.trace if t.binding and t.state is not None and t.state not in unentered)


def _key(b: Binding) -> tuple:
    """What names a binding's leaf across reads: its file, name and execution id."""
    return (b.path, b.name, b.execution_id)


def _grouped(run: Run) -> dict[str, list[Binding]]:
    """``run``'s bindings by group, each group's in the order the run wrote them
    (:func:`prose_tui.model.write_order.ordered_bindings`); root first, then the groups in the order
    their first binding comes in."""
    groups: dict[str, list[Binding]] = {"root": []}
    for b in ordered_bindings(run):
        groups.setdefault(_group_of(b), []).append(b)
    if not groups["root"]:
        del groups["root"]
    return groups
