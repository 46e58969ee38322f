"""Reactor state dirs (openprose-0.15 reactor.md, concepts/reactor.md): every real state dir
of the corpus opens with the facts its files hold, computed here from the raw JSON; the
repository's own fixtures (tests/fixtures/reactor, written by its make.py) cover a failing
node found through reactor.yml, a broken chain, a truncated ledger and a bad OPWM1 frame;
live appends are read from the tail; ``show --json`` carries nodes, receipts and cost.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import sys
from collections import Counter
from contextlib import redirect_stdout
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from prose_tui.backends import open_run
from prose_tui.backends.registry import backend_for, backend_of
from prose_tui.cli.main import main as cli_main
from prose_tui.model import Backend, EventKind, RunFormat, RunStatus
from prose_tui.model.serialize import run_detail

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "reactor"
REACTOR_CORPUS = Path(os.environ.get("PROSE_TUI_REACTOR_CORPUS", ROOT.parent / "shared" / "corpus" / "reactor")).resolve()
sys.path.insert(0, str(ROOT / "benchmarks"))

LATER = datetime.now(timezone.utc) + timedelta(days=2)  # long after any file time: quiescent


def corpus_dirs() -> list:
    if not REACTOR_CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"Reactor corpus not found at {REACTOR_CORPUS} (set PROSE_TUI_REACTOR_CORPUS)"))]
    found = sorted(p.parent for p in REACTOR_CORPUS.rglob("receipts.json"))
    return [pytest.param(d, id=str(d.relative_to(REACTOR_CORPUS))) for d in found]


def facts(state_dir: Path) -> dict:
    """What the files say, read simply: counts, last statuses, tokens, chain, producers."""
    receipts = json.loads((state_dir / "receipts.json").read_text(encoding="utf-8"))
    topo = json.loads((state_dir / "compile" / "topology.json").read_text(encoding="utf-8"))
    topo = topo.get("topology", topo)
    count: Counter = Counter()
    fresh: Counter = Counter()
    reused: Counter = Counter()
    last: dict = {}
    chain_ok: dict = {}
    hashes: dict = {}
    for r in receipts:
        n = r["node"]
        count[n] += 1
        fresh[n] += r["cost"]["tokens"]["fresh"]
        reused[n] += r["cost"]["tokens"]["reused"]
        last[n] = r
        body = {k: v for k, v in r.items() if k != "content_hash"}
        digest = "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"),
                                                       ensure_ascii=False).encode()).hexdigest()
        chain_ok[n] = chain_ok.get(n, True) and digest == r["content_hash"] and r["prev"] == hashes.get(n)
        hashes[n] = digest
    producers: dict = {}
    for e in topo["edges"]:
        producers.setdefault(e["subscriber"], [])
        if e["producer"] not in producers[e["subscriber"]]:
            producers[e["subscriber"]].append(e["producer"])
    return {"receipts": receipts, "count": count, "fresh": fresh, "reused": reused, "last": last,
            "chain_ok": chain_ok, "producers": producers, "topology_nodes": [n["node"] for n in topo["nodes"]],
            "failed": sorted(n for n, r in last.items() if r["status"] == "failed")}


def first_file(blob: bytes) -> tuple[str, bytes]:
    """The first file of an OPWM1 frame: magic, u32 count, u32 name length, name, u32 size, data."""
    assert blob[:5] == b"OPWM1"
    (name_len,) = struct.unpack_from("<I", blob, 9)
    name = blob[13 : 13 + name_len].decode()
    (size,) = struct.unpack_from("<I", blob, 13 + name_len)
    start = 17 + name_len
    return name, blob[start : start + size]


@pytest.mark.parametrize("state_dir", corpus_dirs())
def test_corpus_state_dir_opens_with_the_facts_of_its_files(state_dir: Path) -> None:
    expected = facts(state_dir)
    run = open_run(state_dir, now=LATER)
    assert (run.backend, run.format) == (Backend.REACTOR, RunFormat.REACTOR)
    assert len(run.receipts) == len(expected["receipts"])
    assert [e.kind.value for e in run.events] == ["receipt_" + r["status"] for r in expected["receipts"]]
    nodes = {n.name: n for n in run.nodes}
    assert set(expected["topology_nodes"]) | set(expected["count"]) <= set(nodes)
    for name, n in expected["count"].items():
        node = nodes[name]
        assert (node.receipts, node.status) == (n, expected["last"][name]["status"]), name
        assert (node.tokens_fresh, node.tokens_reused) == (expected["fresh"][name], expected["reused"][name]), name
        assert node.chain_ok is expected["chain_ok"][name], name
    for name, prods in expected["producers"].items():
        assert nodes[name].producers == prods, name
    if expected["failed"]:
        assert run.status is RunStatus.FAILED
        assert expected["failed"][0] in run.status_reason
        assert all(nodes[n].failure_reason for n in expected["failed"])
    else:
        assert run.status is RunStatus.COMPLETED, run.status_reason
        assert all(nodes[n].failure_reason is None for n in nodes)
    earlier_failures = sum(1 for r in expected["receipts"] if r["status"] == "failed")
    if earlier_failures and not expected["failed"]:
        assert f"{earlier_failures} earlier failed render" in run.status_reason
    if all(expected["chain_ok"].values()):
        assert not [w for w in run.warnings if "chain" in w], run.warnings
    # One trace line per node, producers before their subscribers.
    assert [t.step for t in run.trace] == [n.name for n in run.nodes]
    position = {n.name: i for i, n in enumerate(run.nodes)}
    for name, prods in expected["producers"].items():
        assert all(position[p] < position[name] for p in prods), name


@pytest.mark.parametrize("state_dir", corpus_dirs())
def test_corpus_published_world_models_read_as_their_frames(state_dir: Path) -> None:
    run = open_run(state_dir, now=LATER)
    backend = backend_of(run)
    nodes = {n.name: n for n in run.nodes}
    published = 0
    for folder in sorted((state_dir / "world-models").iterdir()):
        name = bytes.fromhex(folder.name).decode()
        version = json.loads((folder / "published.json").read_text())["version"]
        assert nodes[name].version == version
        binding = next(b for b in run.bindings if b.name == name)
        value = backend.read_value(run, binding)
        assert value.warning is None
        file_name, data = first_file((folder / "versions" / (version.replace(":", "_") + ".bin")).read_bytes())
        if file_name.endswith(".json"):
            fenced = value.text.split("```json\n", 1)[1].split("\n```", 1)[0]
            assert json.loads(fenced) == json.loads(data)
        else:
            assert data.decode().strip().splitlines()[0] in value.text
        published += 1
    assert published == len(run.bindings)


@pytest.mark.parametrize("state_dir", corpus_dirs())
def test_corpus_receipt_versions_that_were_kept_read_back(state_dir: Path) -> None:
    run = open_run(state_dir, now=LATER)
    backend = backend_of(run)
    kept = missing = 0
    for r in run.receipts[:: max(1, len(run.receipts) // 20)]:
        atomic = r.fields["fingerprints"]["@atomic"]
        folder = state_dir / "world-models" / r.node.encode().hex() / "versions"
        value = backend.read_version(run, r.node, atomic)
        if (folder / (atomic.replace(":", "_") + ".bin")).is_file():
            kept += 1
            assert value.warning is None and value.text
        else:
            missing += 1
            assert value.warning and "not kept" in value.warning
    assert kept + missing > 0


def test_corpus_is_not_empty_when_present() -> None:
    if not REACTOR_CORPUS.is_dir():
        pytest.skip(f"Reactor corpus not found at {REACTOR_CORPUS} (set PROSE_TUI_REACTOR_CORPUS)")
    assert len(list(REACTOR_CORPUS.rglob("receipts.json"))) >= 1


# -- the repository's own fixtures ------------------------------------------------------------


def test_project_with_reactor_yml_opens_its_state_dir_failed_with_the_reason() -> None:
    project = FIXTURES / "newsroom"
    backend = backend_for(project.resolve())
    assert backend is not None and backend.kind is Backend.REACTOR
    run = open_run(project, now=LATER)
    assert run.path == (project / "state").resolve()
    assert run.id == "newsroom/state"
    assert run.program_path == (project / "reactor.yml").resolve()
    assert run.status is RunStatus.FAILED
    assert "responsibility.summary" in run.status_reason
    assert "postcondition unmet: ### Maintains.headline is empty" in run.status_reason
    summary = next(n for n in run.nodes if n.name == "responsibility.summary")
    assert (summary.status, summary.receipts) == ("failed", 2)
    assert summary.failure_reason == "postcondition unmet: ### Maintains.headline is empty"
    assert [n.name for n in run.nodes][:2] == ["ingress.tips", "gateway.tips"]
    assert next(n for n in run.nodes if n.name == "ingress.tips").kind == "ingress"
    assert run.events[-2].kind is EventKind.RECEIPT_FAILED and "headline is empty" in run.events[-2].text
    assert run.metrics["tokens_fresh"] == sum(r.tokens_fresh for r in run.receipts) == 2005
    assert any(s.title == "Cost" and "| external |" in s.text for s in run.sections)


def test_ledger_file_itself_opens_the_same_run() -> None:
    ledger = FIXTURES / "newsroom" / "state" / "receipts.json"
    run = open_run(ledger, now=LATER)
    assert run.path == ledger.parent.resolve()
    assert len(run.receipts) == 13


def test_two_file_world_model_reads_each_file_under_its_name() -> None:
    run = open_run(FIXTURES / "newsroom", now=LATER)
    binding = next(b for b in run.bindings if b.name == "responsibility.digest")
    value = backend_of(run).read_value(run, binding)
    assert value.warning is None
    assert "### state/digest.md" in value.text and "# Digest" in value.text
    assert "### state/index.json" in value.text and '"items": 1' in value.text


def test_broken_chain_is_named_by_node_and_receipt() -> None:
    run = open_run(FIXTURES / "broken-chain", now=LATER)
    triage = next(n for n in run.nodes if n.name == "responsibility.triage")
    assert triage.chain_ok is False
    assert "receipt #7 of responsibility.triage" in (triage.chain_note or "")
    assert all(n.chain_ok for n in run.nodes if n.name != "responsibility.triage")
    chain = [w for w in run.warnings if w.startswith("chain broken")]
    assert any("receipt #7 of responsibility.triage: prev is sha256:000000000000" in w for w in chain)
    assert any("receipt #10 of responsibility.triage: its content_hash" in w for w in chain)
    assert "chain broken" in run.trace[[n.name for n in run.nodes].index("responsibility.triage")].note


def test_truncated_ledger_keeps_whole_receipts_and_shows_the_rest_raw() -> None:
    run = open_run(FIXTURES / "truncated", now=LATER)
    assert len(run.receipts) == 8
    assert any("receipts.json is not valid JSON" in w for w in run.warnings)
    raw = next(s for s in run.sections if s.title == "receipts.json (unparsed)")
    cut = (FIXTURES / "truncated" / "receipts.json").read_text()
    partial = cut[cut.rindex(',{"content_hash"') + 1 :]  # the receipt the file ends inside
    assert partial.startswith('{"content_hash"') and partial in raw.text
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(["show", str(FIXTURES / "truncated")]) == 0
    assert "Traceback" not in out.getvalue()


def test_garbage_ledger_gives_a_warning_and_safe_raw_text(tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(FIXTURES / "newsroom" / "state", state)
    (state / "receipts.json").write_bytes(b"\x1b[2J\x00 this is not a ledger \xff")
    run = open_run(state, now=LATER)
    assert run.receipts == [] and run.events == []
    assert any("receipts.json" in w for w in run.warnings)
    raw = next(s for s in run.sections if s.title == "receipts.json (unparsed)")
    assert "\x1b" not in raw.text and "\x00" not in raw.text and "not a ledger" in raw.text
    assert len(run.nodes) == 5  # the topology still gives the nodes


def test_bad_frame_gives_a_warning_and_a_hex_dump() -> None:
    run = open_run(FIXTURES / "bad-frame", now=LATER)
    assert any("responsibility.triage" in w and "frame" in w for w in run.warnings)
    binding = next(b for b in run.bindings if b.name == "responsibility.triage")
    assert binding.warning
    value = backend_of(run).read_value(run, binding)
    assert value.warning and "OPWM1" in value.warning
    assert "00000000  4f 50 57 4d 31" in value.text
    assert "\x1b" not in value.text
    assert run.status is RunStatus.COMPLETED


# -- live ---------------------------------------------------------------------------------------


def _small(tmp_path: Path):
    from bench_reactor import build

    state = tmp_path / "proj" / ".reactor"
    writer = build(state, 60, 8)
    return state, writer


def test_appended_receipts_come_back_as_only_the_new_events(tmp_path: Path) -> None:
    state, w = _small(tmp_path)
    run = open_run(state, now=LATER)
    backend = backend_of(run)
    before = len(run.events)
    node = "responsibility.n002"
    index = [n.name for n in run.nodes].index(node)
    count = run.nodes[index].receipts
    w.emit(node, "rendered", fresh=77, reused=5, truth='{"live":1}')
    delta = backend.apply(run, {state / "receipts.json"}, now=LATER)
    assert not delta.reread
    assert [(e.seq, e.kind, e.name) for e in delta.events] == [(before, EventKind.RECEIPT_RENDERED, node)]
    assert delta.trace_lines == {index}
    assert run.nodes[index].receipts == count + 1 and len(run.events) == before + 1
    assert "77 fresh" in run.events[-1].text
    assert run.updated is None  # reactor.md receipts carry no time: unknown, never the file's (issue 28)

    for k in range(3):
        w.emit("gateway.inbox", "skipped", cause="external", write=False)
    w.write_ledger()
    delta = backend.apply(run, {state / "receipts.json"}, now=LATER)
    assert [e.seq for e in delta.events] == [before + 1, before + 2, before + 3]
    assert all(e.kind is EventKind.RECEIPT_SKIPPED for e in delta.events)

    w.emit(node, "failed", reason="render timed out")
    delta = backend.apply(run, {state / "receipts.json"}, now=LATER)
    assert delta.status and run.status is RunStatus.FAILED and "render timed out" in run.status_reason
    assert len(run.receipts) == len(w.receipts)
    assert all(n.chain_ok for n in run.nodes)

    unchanged = backend.apply(run, {state / "receipts.json"}, now=LATER)
    assert unchanged.events == [] and not unchanged.reread


def test_a_reformatted_ledger_is_read_again_then_tailed(tmp_path: Path) -> None:
    state, w = _small(tmp_path)
    run = open_run(state, now=LATER)
    backend = backend_of(run)

    def write_pretty() -> None:
        (state / "receipts.json").write_text(json.dumps(w.receipts, indent=2, sort_keys=True))

    w.emit("gateway.inbox", "skipped", cause="external", write=False)
    write_pretty()
    delta = backend.apply(run, {state / "receipts.json"}, now=LATER)
    assert delta.reread and len(delta.run.receipts) == len(w.receipts)
    run = delta.run
    w.emit("gateway.inbox", "skipped", cause="external", write=False)
    write_pretty()
    delta = backend.apply(run, {state / "receipts.json"}, now=LATER)
    assert not delta.reread and [e.name for e in delta.events] == ["gateway.inbox"]
    assert len(run.receipts) == len(w.receipts) and all(n.chain_ok for n in run.nodes)


def test_a_new_published_version_replaces_the_binding(tmp_path: Path) -> None:
    state, w = _small(tmp_path)
    run = open_run(state, now=LATER)
    backend = backend_of(run)
    w.emit("gateway.inbox", "rendered", cause="external", fresh=1, truth='{"fresh news": true}')
    node_dir = state / "world-models" / "gateway.inbox".encode().hex()
    delta = backend.apply(run, {state / "receipts.json", node_dir / "published.json"}, now=LATER)
    binding = next(b for b in run.bindings if b.name == "gateway.inbox")
    assert binding.path in delta.bindings
    assert '"fresh news": true' in backend.read_value(run, binding).text


def test_receipts_arriving_mean_running_until_stale(tmp_path: Path) -> None:
    """Running while receipts are seen arriving; quiescent once none came for stale_after."""
    state, _ = _small(tmp_path)
    seen = datetime.now(timezone.utc)
    run = open_run(state, now=seen, stale_after=60)
    status, reason = backend_of(run).status(run, now=seen + timedelta(seconds=5), stale_after=60, observed=seen)
    assert status is RunStatus.RUNNING and "receipts arriving" in reason and "seen live" in reason
    status, reason = backend_of(run).status(run, now=seen + timedelta(seconds=120), stale_after=60, observed=seen)
    assert status is RunStatus.COMPLETED and "quiescent" in reason


def test_a_copied_ledger_is_not_running_and_its_times_are_unknown(tmp_path: Path) -> None:
    """Issue 28: a Reactor dir just copied or cloned (every file new) showed running for 30
    minutes and dated by its files. The receipts carry no time: quiescent, times unknown."""
    state, _ = _small(tmp_path)
    copy = tmp_path / "clone" / ".reactor"
    shutil.copytree(state, copy)
    run = open_run(copy, now=datetime.now(timezone.utc), stale_after=1800)
    assert run.status is RunStatus.COMPLETED and "receipts carry no time" in run.status_reason
    assert run.started is None and run.updated is None


# -- show --json --------------------------------------------------------------------------------


def _show_json(path: Path) -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli_main(["show", "--json", str(path)]) == 0
    return json.loads(out.getvalue())


def test_show_json_has_nodes_receipt_events_and_cost() -> None:
    detail = _show_json(FIXTURES / "newsroom")
    ledger = json.loads((FIXTURES / "newsroom" / "state" / "receipts.json").read_text())
    assert detail["backend"] == "reactor" and detail["status"] == "failed"
    summary = next(n for n in detail["nodes"] if n["name"] == "responsibility.summary")
    assert {"name", "status", "receipts", "version", "failure_reason", "tokens_fresh", "tokens_reused",
            "producers"} <= set(summary)
    assert summary["producers"] == ["responsibility.triage"] and summary["status"] == "failed"
    assert [e["kind"] for e in detail["events"]] == ["receipt_" + r["status"] for r in ledger]
    assert len(detail["receipts"]) == len(ledger)
    assert detail["cost"]["tokens_fresh"] == sum(r["cost"]["tokens"]["fresh"] for r in ledger)
    by_cause = Counter()
    for r in ledger:
        by_cause[r["cost"]["surprise_cause"]] += r["cost"]["tokens"]["reused"]
    assert {k: v["tokens_reused"] for k, v in detail["cost"]["by_surprise_cause"].items()} == dict(by_cause)


def test_runs_without_nodes_have_empty_node_receipt_and_cost_keys() -> None:
    run = open_run(ROOT / "tests" / "fixtures" / "project" / ".prose" / "runs" / "20260301-100000-a1b2c3")
    detail = run_detail(run)
    assert (detail["nodes"], detail["receipts"], detail["cost"]) == ([], [], {})


def test_non_ascii_receipts_verify_however_the_ledger_is_escaped(tmp_path: Path) -> None:
    state, w = _small(tmp_path)
    w.emit("responsibility.n001", "failed", reason="Größe überschritten — ✓ fehlt")
    for text in ((state / "receipts.json").read_text(encoding="utf-8"),  # as the SDK writes: UTF-8
                 json.dumps(w.receipts, indent=2)):  # re-serialised with \\u escapes
        (state / "receipts.json").write_text(text, encoding="utf-8")
        run = open_run(state, now=LATER)
        assert all(n.chain_ok for n in run.nodes), [n.chain_note for n in run.nodes if not n.chain_ok]
        assert "Größe überschritten — ✓ fehlt" in run.status_reason


def test_apply_to_an_older_copy_of_the_run_reads_it_again(tmp_path: Path) -> None:
    state, w = _small(tmp_path)
    older = open_run(state, now=LATER)
    newer = open_run(state, now=LATER)  # e.g. a summary read again in full: the backend follows this one
    w.emit("gateway.inbox", "skipped", cause="external")
    delta = backend_of(newer).apply(newer, {state / "receipts.json"}, now=LATER)
    assert not delta.reread and len(delta.events) == 1
    delta = backend_of(older).apply(older, {state / "receipts.json"}, now=LATER)
    assert delta.reread and len(delta.run.receipts) == len(w.receipts)


def test_apply_without_paths_only_refreshes_the_status(tmp_path: Path) -> None:
    state, _ = _small(tmp_path)
    seen = datetime.now(timezone.utc)
    run = open_run(state, now=seen, stale_after=60)
    backend_of(run).apply(run, set(), now=seen + timedelta(seconds=1), stale_after=60, observed=seen)
    assert run.status is RunStatus.RUNNING  # receipts seen arriving
    delta = backend_of(run).apply(run, set(), now=seen + timedelta(seconds=600), stale_after=60, observed=seen)
    assert delta.status and not delta.events and run.status is RunStatus.COMPLETED


# -- hostile input ------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from prose_tui.backends.reactor.frames import decode_frame  # noqa: E402

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["node", "status", "prev", "cost", "tokens", "fresh", "content_hash", "wake",
                         "semantic_diff", "failure_reason", "fingerprints", "@atomic", "x"]), inner, max_size=5),
    max_leaves=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ledger=st.lists(_json, max_size=6), topology=_json)
def test_any_json_in_ledger_and_topology_opens_without_raising(tmp_path: Path, ledger, topology) -> None:
    state = tmp_path / "s"
    (state / "compile").mkdir(parents=True, exist_ok=True)
    (state / "compile" / "topology.json").write_text(json.dumps(topology))
    (state / "receipts.json").write_text(json.dumps(ledger))
    run = open_run(state, now=LATER)
    dicts = [r for r in ledger if isinstance(r, dict) and isinstance(r.get("node"), str) and r["node"]]
    assert len(run.receipts) == len(dicts)
    assert len(run.receipts) + sum("not an object naming its node" in w for w in run.warnings) == len(ledger)
    run_detail(run)  # serialisable shape


@settings(max_examples=150, deadline=None)
@given(files=st.lists(st.tuples(st.text(max_size=8), st.binary(max_size=24)), max_size=4), cut=st.integers(0, 200))
def test_frames_decode_whole_or_name_the_fault(files, cut: int) -> None:
    from bench_reactor import frame

    unique = dict(files)
    blob = frame(unique)
    decoded, error = decode_frame(blob)
    assert error is None and [(f.name, f.data) for f in decoded] == list(unique.items())
    if cut < len(blob) - 5:
        decoded, error = decode_frame(blob[: 5 + cut])
        assert error is not None  # a strict prefix is never a whole frame


def test_a_cycle_in_the_topology_is_a_warning_and_every_node_is_listed(tmp_path: Path) -> None:
    state = tmp_path / "s"
    (state / "compile").mkdir(parents=True)
    (state / "compile" / "topology.json").write_text(json.dumps({
        "nodes": [{"node": "a"}, {"node": "b"}, {"node": "c"}],
        "edges": [{"subscriber": "a", "producer": "b"}, {"subscriber": "b", "producer": "a"},
                  {"subscriber": "c", "producer": "a"}]}))
    run = open_run(state, now=LATER)
    assert sorted(n.name for n in run.nodes) == ["a", "b", "c"]
    assert any("cycle" in w for w in run.warnings)
    assert run.status is RunStatus.UNKNOWN and "no receipts" in run.status_reason


def test_the_periodic_status_check_keeps_a_quiet_ledger_quiescent_not_interrupted(tmp_path):
    """The explorer re-checks statuses every second: a Reactor state dir that was running and
    went quiet becomes what a fresh open says then (quiescent: completed), never the
    event-log rule's "interrupted"."""
    from prose_tui.live.workspace import Workspace

    state = tmp_path / "bad-frame"  # a ledger whose last receipts all rendered
    shutil.copytree(FIXTURES / "bad-frame", state)
    written = datetime.fromtimestamp((state / "receipts.json").stat().st_mtime, timezone.utc)
    now = [written + timedelta(seconds=1)]
    workspace = Workspace(state, clock=lambda: now[0], stale_after=60)
    workspace.scan()
    run = workspace.runs[state]
    assert run.status is RunStatus.COMPLETED  # a new file time is not receipts arriving (issue 28)
    now[0] = written + timedelta(days=3)
    workspace.refresh_statuses()
    fresh = open_run(state, now=now[0], stale_after=60)
    assert fresh.status is RunStatus.COMPLETED
    assert (run.status, run.status_reason) == (fresh.status, fresh.status_reason)
