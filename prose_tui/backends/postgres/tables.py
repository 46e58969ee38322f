"""Everything of a run beside its trace: bindings, agents and segments, imports, receipts and
world-model versions, ``x_*`` extension tables and token/cost metrics
(openprose-0.15 state/postgres.md, Core Schema and Flexibility Encouragement).

Every reader takes the schema that is there (``PgReader.tables()``) and the run's warnings
list: a missing table or column is one warning sentence, never an exception. Values are
never loaded with the run; :func:`read_binding_value` reads one, scope-resolved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from prose_tui.backends.common.text import visible
from prose_tui.backends.postgres.connect import PgReader, quote_ident
from prose_tui.model import Agent, Binding, Node, Receipt, Run, Section, Segment

MAX_BINDINGS = 20_000
MAX_RECEIPTS = 5_000
TABLE_ROWS = 200
_METRIC_WORDS = ("token", "cost", "usd", "price")


def text(value: object) -> str | None:
    """A cell as one safe display string: JSON re-serialised, bytes decoded with replacement,
    times in ISO 8601, control characters (ANSI escapes) made visible. ``None`` stays ``None``."""
    if value is None:
        return None
    if type(value) is str and value.isprintable():  # the common case, checked in C
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        out = bytes(value).decode("utf-8", "replace")
    elif isinstance(value, dict | list):
        out = json.dumps(value, ensure_ascii=False, sort_keys=True)
    elif isinstance(value, datetime):
        out = value.isoformat()
    else:
        out = str(value)
    return visible(out)


def _select(reader: PgReader, table: str, cols: Sequence[str], where: str, params: tuple, tail: str = "") -> list[dict[str, Any]]:
    sql = f"SELECT {', '.join(quote_ident(c) for c in cols)} FROM {reader.table(table)} {where} {tail}"
    return [dict(zip(cols, row)) for row in reader.rows(sql, params)]


def binding_path(run: Run, name: str, execution_id: int | None) -> Path:
    """The key a database binding goes by (``<run path>/bindings/<name>@<scope>``); no file."""
    return run.path / "bindings" / f"{name}@{'root' if execution_id is None else execution_id}"


def load_bindings(reader: PgReader, run: Run) -> list[Binding]:
    """Binding metadata of ``run`` (values stay in the database). ``kind`` is the ``binding``
    column (0.15) or ``kind`` (older VMs); ``bytes`` the value's size; ``fields`` every other
    column as text (``created_at``, ``updated_at``, ``attachment_path``, ``metadata``…)."""
    cols = reader.tables().get("bindings")
    if cols is None:
        run.warnings.append("the database has no 'bindings' table: no bindings to show.")
        return []
    if "name" not in cols or "run_id" not in cols:
        run.warnings.append("table 'bindings' lacks 'name' or 'run_id': bindings cannot be listed.")
        return []
    missing = [c for c in ("execution_id", "value") if c not in cols]
    if missing:
        run.warnings.append(f"table 'bindings' lacks column(s) {', '.join(missing)}.")
    other = [c for c in cols if c != "value"]
    size = "octet_length(value::text)" if "value" in cols else "0"
    # Rows written in one transaction share created_at (NOW() is the transaction's start): a
    # tiebreak keeps their order the same on every read. The spec's table has no id, and a
    # row's place on disk moves when it is updated: its key (name, scope; root first) then.
    tiebreak = "id" if "id" in cols else "name, execution_id NULLS FIRST" if "execution_id" in cols else "name"
    order = f"ORDER BY created_at, {tiebreak}" if "created_at" in cols else f"ORDER BY {tiebreak}"
    sql = (f"SELECT {size}, {', '.join(quote_ident(c) for c in other)} FROM {reader.table('bindings')} "
           f"WHERE run_id = %s {order} LIMIT {MAX_BINDINGS + 1}")
    rows = reader.rows(sql, (run.id,))
    if len(rows) > MAX_BINDINGS:
        run.warnings.append(f"more than {MAX_BINDINGS} bindings: only the first {MAX_BINDINGS} are listed.")
        rows = rows[:MAX_BINDINGS]
    out: list[Binding] = []
    for raw in rows:
        data = dict(zip(other, raw[1:]))
        name = text(data.get("name")) or "(no name)"
        eid = data.get("execution_id")
        eid = int(eid) if isinstance(eid, int) else None
        kind = data.get("binding", data.get("kind"))
        skip = ("name", "run_id", "execution_id", "binding", "kind", "source_statement")
        fields = {k: text(v) or "" for k, v in data.items() if k not in skip and v is not None}
        out.append(Binding(name=name, path=binding_path(run, name, eid), kind=text(kind), execution_id=eid,
                           source=text(data.get("source_statement")), bytes=int(raw[0] or 0), fields=fields,
                           listed=len(out)))  # created_at order: the order the VM wrote them
    return out


def read_binding_value(reader: PgReader, run_id: str, name: str, execution_id: int | None) -> tuple[str, str | None]:
    """The value of ``name`` as seen from ``execution_id`` (state/postgres.md, Scope Resolution
    Query: the most local scope up the ``parent_id`` chain, then root). Returns ``(text, note)``;
    an ``attachment_path`` (Large Outputs) is named in ``note`` because the attachment lives
    on the VM's disk, not in the database. ``("", None)`` for a missing binding."""
    tables = reader.tables()
    cols = tables.get("bindings") or []
    if "value" not in cols:
        return "", "the bindings table has no 'value' column"
    attach = ", attachment_path" if "attachment_path" in cols else ", NULL"
    if execution_id is not None and "execution_id" in cols and "parent_id" in tables.get("execution", []):
        sql = (f"WITH RECURSIVE chain(id, parent_id, depth) AS ("
               f" SELECT id, parent_id, 0 FROM {reader.table('execution')} WHERE id = %s"
               f" UNION ALL SELECT e.id, e.parent_id, c.depth + 1 FROM {reader.table('execution')} e"
               f" JOIN chain c ON e.id = c.parent_id WHERE c.depth < 10000)"
               f" SELECT b.value{attach.replace('attachment_path', 'b.attachment_path')} FROM {reader.table('bindings')} b"
               f" LEFT JOIN chain c ON b.execution_id = c.id"
               f" WHERE b.name = %s AND b.run_id = %s AND (c.id IS NOT NULL OR b.execution_id IS NULL)"
               f" ORDER BY c.depth ASC NULLS LAST LIMIT 1")
        rows = reader.rows(sql, (execution_id, name, run_id))
    else:
        scope = "AND execution_id IS NULL" if "execution_id" in cols else ""
        rows = reader.rows(f"SELECT value{attach} FROM {reader.table('bindings')} WHERE name = %s AND run_id = %s {scope} LIMIT 1",
                           (name, run_id))
    if not rows:
        return "", None
    value, attachment = rows[0]
    note = f"attachment {text(attachment)} (on the VM's disk; the database holds this summary)" if attachment else None
    return text(value) or "", note


def load_agents(reader: PgReader, run: Run, *, default_scope: str = "execution", user: bool = False) -> list[Agent]:
    """Agents of ``run`` and the project-scoped ones (``run_id IS NULL``), with segments
    (state/postgres.md, Project-Scoped and User-Scoped Agents). ``user`` reads a separate
    user database (``OPENPROSE_POSTGRES_USER_URL``): only its ``run_id IS NULL`` agents.
    ``Agent.details`` holds ``memory`` and every other column; a segment's summary is in
    ``details["segment_summary_<n>"]``."""
    tables = reader.tables()
    cols = tables.get("agents")
    seg_cols = tables.get("agent_segments")
    agents: dict[tuple[str, str], Agent] = {}
    where = "WHERE run_id IS NULL" if user else "WHERE run_id = %s OR run_id IS NULL"
    params: tuple = () if user else (run.id,)
    if cols is not None and "name" in cols and "run_id" in cols:
        for data in _select(reader, "agents", cols, where, params, "ORDER BY name LIMIT 2000"):
            name = text(data["name"]) or "(no name)"
            scope = text(data.get("scope")) or ("user" if user else default_scope if data.get("run_id") else "project")
            details = {k: text(v) or "" for k, v in data.items() if k not in ("name", "scope", "run_id") and v is not None}
            agents[(name, "run" if data.get("run_id") else "shared")] = Agent(
                name=name, scope=scope, path=run.path / "agents" / name, details=details)
    elif cols is not None and not user:
        run.warnings.append("table 'agents' lacks 'name' or 'run_id': agents cannot be listed.")
    if seg_cols is not None and "agent_name" in seg_cols and "run_id" in seg_cols:
        wanted = [c for c in ("agent_name", "run_id", "segment_number", "timestamp", "prompt", "summary") if c in seg_cols]
        order = "ORDER BY agent_name, segment_number" if "segment_number" in seg_cols else "ORDER BY agent_name"
        for data in _select(reader, "agent_segments", wanted, where, params, order + " LIMIT 20000"):
            name = text(data["agent_name"]) or "(no name)"
            key = (name, "run" if data.get("run_id") else "shared")
            agent = agents.get(key)
            if agent is None:
                agent = agents[key] = Agent(name=name, scope="user" if user else (default_scope if key[1] == "run" else "project"),
                                            path=run.path / "agents" / name)
            number = data.get("segment_number")
            number = int(number) if isinstance(number, int) else len(agent.segments) + 1
            summary = text(data.get("summary"))
            agent.segments.append(Segment(number=number, path=run.path / "agents" / name / f"segment-{number}",
                                          timestamp=text(data.get("timestamp")), prompt=text(data.get("prompt")),
                                          bytes=len(summary.encode()) if summary else 0))
            if summary is not None:
                agent.details[f"segment_summary_{number}"] = summary
    return list(agents.values())


def load_imports(reader: PgReader, run: Run) -> list[Run]:
    """``imports`` rows of ``run`` as child runs (alias, ``source_ref``, schemas, hash in the header)."""
    cols = reader.tables().get("imports")
    if cols is None or "run_id" not in cols:
        return []
    children: list[Run] = []
    for data in _select(reader, "imports", cols, "WHERE run_id = %s", (run.id,), "LIMIT 1000"):
        alias = text(data.get("alias")) or f"import-{len(children) + 1}"
        child = Run(id=alias, path=run.path / "imports" / alias, backend=run.backend, format=run.format,
                    import_handle=alias, location=run.location)
        child.program = text(data.get("source_ref") or data.get("source_url"))
        child.header = {k: text(v) or "" for k, v in data.items() if v is not None and k != "run_id"}
        resolved = data.get("resolved_at") or data.get("fetched_at")
        child.started = resolved if isinstance(resolved, datetime) else None
        child.bindings = [b for b in run.bindings if b.name.startswith(alias + ".")]
        children.append(child)
    return children


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 0


def load_receipts(reader: PgReader, run: Run, after: int = 0) -> tuple[list[Receipt], int]:
    """Receipts of ``run`` with ``id > after``, in ledger order (concepts/reactor.md, The
    receipt), and the highest id seen. ``version`` is the content address the receipt's
    node has published (``world_model_published``) when this receipt is the node's latest."""
    cols = reader.tables().get("receipt")
    if cols is None or "run_id" not in cols or "node" not in cols:
        return [], after
    key = "id" if "id" in cols else None
    where = f"WHERE run_id = %s{' AND id > %s' if key else ''}"
    params: tuple = (run.id, after) if key else (run.id,)
    order = "ORDER BY id" if key else ("ORDER BY created_at" if "created_at" in cols else "")
    rows = _select(reader, "receipt", cols, where, params, f"{order} LIMIT {MAX_RECEIPTS}")
    out: list[Receipt] = []
    top = after
    for data in rows:
        cost_raw, diff_raw = data.get("cost"), data.get("semantic_diff")
        cost: dict[str, Any] = cost_raw if isinstance(cost_raw, dict) else {}
        wake = data.get("wake")
        diff: dict[str, Any] = diff_raw if isinstance(diff_raw, dict) else {}
        rid = data.get("id")
        top = max(top, rid) if isinstance(rid, int) else top
        out.append(Receipt(
            node=text(data.get("node")) or "?", status=text(data.get("status")) or "?", seq=len(run.receipts) + len(out),
            time=data.get("created_at") if isinstance(data.get("created_at"), datetime) else None,
            hash=text(data.get("hash")), prev=text(data.get("prev")), version=text(data.get("version")),
            wake=text(wake.get("source") if isinstance(wake, dict) else wake),
            tokens_fresh=_int(cost.get("tokens_fresh", cost.get("tokens"))), tokens_reused=_int(cost.get("tokens_reused")),
            surprise_cause=text(cost.get("surprise_cause")), failure_reason=text(diff.get("failure_reason")),
            fields={k: text(v) for k, v in data.items()}))
    return out, top


def summarise_nodes(reader: PgReader, run: Run) -> list[Node]:
    """One :class:`Node` per node in ``run.receipts``, with its published world-model version
    (``world_model_published``, where the table exists) and token totals."""
    nodes: dict[str, Node] = {}
    for r in run.receipts:
        node = nodes.setdefault(r.node, Node(name=r.node))
        node.receipts += 1
        node.status = r.status
        node.tokens_fresh += r.tokens_fresh
        node.tokens_reused += r.tokens_reused
        node.failure_reason = r.failure_reason if r.status == "failed" else node.failure_reason
        node.version = r.version or node.version
    cols = reader.tables().get("world_model_published")
    if nodes and cols is not None and {"node", "version"} <= set(cols):
        for name, version in reader.rows(f"SELECT node, version FROM {reader.table('world_model_published')} "
                                         f"WHERE node = ANY(%s)", (list(nodes),)):
            if text(name) in nodes:
                nodes[text(name) or ""].version = text(version)
    return list(nodes.values())


def world_model_section(reader: PgReader, nodes: list[Node]) -> Section | None:
    """A Markdown table of the world-model versions of ``nodes`` (newest first, 50 per node
    at most): content address, size, attachment, time; the published one marked."""
    cols = reader.tables().get("world_model_version")
    if not nodes or cols is None or "node" not in cols or "version" not in cols:
        return None
    size = "octet_length(artifact)" if "artifact" in cols else "NULL"
    attach = "attachment_path" if "attachment_path" in cols else "NULL"
    created = "created_at" if "created_at" in cols else "NULL"
    rows = reader.rows(
        f"SELECT node, version, {size}, {attach}, {created} FROM (SELECT *, row_number() OVER "
        f"(PARTITION BY node ORDER BY {created} DESC NULLS LAST) AS n FROM {reader.table('world_model_version')} "
        f"WHERE node = ANY(%s)) v WHERE n <= 50 ORDER BY node, {created} DESC NULLS LAST", ([n.name for n in nodes],))
    published = {n.name: n.version for n in nodes}
    lines = ["| node | version | bytes | attachment | created |", "|---|---|---|---|---|"]
    for node, version, nbytes, attachment, when in rows:
        mark = " (published)" if published.get(text(node) or "") == text(version) else ""
        cells = [text(node), f"{text(version)}{mark}", "" if nbytes is None else str(nbytes), text(attachment), text(when)]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if len(lines) == 2:
        return None
    return Section("World model", "Content-addressed versions per node (openprose.world_model_version).\n\n" + "\n".join(lines))


def _cell(value: str | None) -> str:
    return ("" if value is None else value).replace("|", "\\|").replace("\n", " ")[:80]


def extension_tables(reader: PgReader) -> list[str]:
    """The ``x_*`` extension tables (state/postgres.md, Schema Conventions), sorted."""
    return sorted(t for t in reader.tables() if t.lower().startswith("x_"))


def read_table_page(reader: PgReader, table: str, run_id: str | None, offset: int = 0,
                    limit: int = TABLE_ROWS) -> tuple[list[str], list[tuple]]:
    """One page of an ``x_*`` table: ``(columns, rows)``, the run's rows only when the table
    has a ``run_id`` column; values as display text. ``table`` must be one the schema lists
    (so nothing can be injected); an unknown table gives ``([], [])``."""
    cols = reader.tables().get(table)
    if cols is None:
        return [], []
    where, params = ("WHERE run_id = %s", (run_id,)) if run_id is not None and "run_id" in cols else ("", ())
    order = "ORDER BY id" if "id" in cols else ""
    rows = reader.rows(f"SELECT {', '.join(quote_ident(c) for c in cols)} FROM {reader.table(table)} {where} {order} "
                       f"LIMIT {max(int(limit), 0)} OFFSET {max(int(offset), 0)}", params)
    return cols, [tuple(text(v) for v in row) for row in rows]


def load_metrics(reader: PgReader, run: Run) -> None:
    """Token and cost figures of ``run`` from ``x_*`` tables (the spec's long
    ``x_metrics(execution_id, metric_name, metric_value)`` and wide tables with
    token/cost/usd/price columns) and from ``receipt.cost.tokens``: totals into
    ``run.metrics``, a per-statement table into a "Metrics" section."""
    by_exec: dict[int | None, dict[str, float]] = {}

    def add(eid: object, name: str, value: object) -> None:
        if not isinstance(value, int | float | Decimal):
            return
        key = eid if isinstance(eid, int) else None
        run.metrics[name] = run.metrics.get(name, 0.0) + float(value)
        per = by_exec.setdefault(key, {})
        per[name] = per.get(name, 0.0) + float(value)

    for table in extension_tables(reader):
        cols = reader.tables()[table]
        if "run_id" not in cols:
            continue
        lower = {c.lower(): c for c in cols}
        eid_sql = quote_ident(lower["execution_id"]) if "execution_id" in lower else "NULL"
        if "metric_name" in lower and "metric_value" in lower:
            for e, name, total in reader.rows(
                    f"SELECT {eid_sql}, {quote_ident(lower['metric_name'])}, sum({quote_ident(lower['metric_value'])}) "
                    f"FROM {reader.table(table)} WHERE run_id = %s GROUP BY 1, 2", (run.id,)):
                add(e, text(name) or "?", total)
        wide = [c for c in cols if any(w in c.lower() for w in _METRIC_WORDS) and c.lower() not in ("metric_name", "metric_value")]
        if wide:
            sums = ", ".join(f"sum({quote_ident(c)})" for c in wide)
            try:
                rows = reader.rows(f"SELECT {eid_sql}, {sums} FROM {reader.table(table)} WHERE run_id = %s GROUP BY 1", (run.id,))
            except Exception:  # noqa: BLE001 - a text column named *cost*: not a figure
                rows = []
            for raw in rows:
                for c, total in zip(wide, raw[1:]):
                    add(raw[0], c, total)
    for r in run.receipts:
        if r.tokens_fresh or r.tokens_reused:
            add(None, "receipt_tokens_fresh", r.tokens_fresh)
            add(None, "receipt_tokens_reused", r.tokens_reused)
    if not run.metrics:
        return
    names = sorted({n for figures in by_exec.values() for n in figures})
    lines = ["| execution | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for eid, figures in sorted(by_exec.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        cells = " | ".join(f"{figures.get(n, 0):g}" for n in names)
        lines.append(f"| {'run' if eid is None else eid} | {cells} |")
    totals = ", ".join(f"{k} {v:g}" for k, v in sorted(run.metrics.items()))
    run.sections = [s for s in run.sections if s.title != "Metrics"]
    run.sections.append(Section("Metrics", f"Run totals: {totals}\n\n" + "\n".join(lines)))
