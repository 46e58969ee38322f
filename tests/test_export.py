"""``prose-tui export``: one self-contained file a teammate can open (issue 14).

The HTML page is checked twice: statically (every tag is one the template writes, no event
handler attributes, no link leaves the page) and in a real headless Chromium from the
system packages (``/usr/bin/chromium``, driven by Playwright; never a downloaded browser):
the page renders the run id and the failure, logs no console error (a CSP violation would
be one) and requests nothing but itself. Without a Chromium the browser tests skip and say
why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import FIXTURES

from prose_tui.backends import open_run
from prose_tui.cli.main import main
from prose_tui.history import Journal, history_of
from prose_tui.history.exporting import default_filename, export_text
from prose_tui.history.report import build_report

EVENTLOG_RUN = FIXTURES / "eventlog" / ".prose" / "runs" / "20260305-120000-e1e2e3"
SNAPSHOT_RUN = FIXTURES / "project" / ".prose" / "runs" / "20260301-100000-a1b2c3"
CHROMIUM = os.environ.get("PROSE_TUI_CHROMIUM", "/usr/bin/chromium")
PWNED = "window.pwned=1"
PAYLOADS = ("<script>window.pwned=1</script>", '"><img src=x onerror="window.pwned=1">',
            "javascript:window.pwned=1", "'><svg onload=window.pwned=1>")
# Every tag the template writes; a run's text must never add another.
TEMPLATE_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "header", "h1", "h2", "h3", "span", "p",
                 "dl", "dt", "dd", "nav", "a", "section", "div", "code", "ul", "li", "details", "summary", "pre",
                 "table", "tr", "td", "th", "meter", "footer"}


def hostile_run(root: Path) -> Path:
    """An event-log run with script, attribute-breaking and ``javascript:`` text in its program
    name, statements, error, binding names and values, and agent memory."""
    run = root / ".prose" / "runs" / "20260305-120000-abcdef"
    (run / "bindings").mkdir(parents=True)
    (run / "agents" / "reviewer").mkdir(parents=True)
    (run / "state.md").write_text(
        f"# run:20260305-120000-abcdef {PAYLOADS[1]}.prose\n"
        "1→ fetch ✓ [2026-03-05T12:00:05Z]\n"
        f"2→ {PAYLOADS[0]} ✗ {PAYLOADS[2]} [2026-03-05T12:00:09Z]\n"
        "2→ retry:2/3\n"
        f"2→ {PAYLOADS[0]} ✗ {PAYLOADS[3]} [2026-03-05T12:00:19Z]\n"
        f"---error 2026-03-05T12:00:20Z {PAYLOADS[1]} {PAYLOADS[2]}\n", encoding="utf-8")
    values = "\n".join(PAYLOADS) + "\n[click](javascript:window.pwned=1)\n"
    (run / "bindings" / "fetch.md").write_text(f"# fetch\n\nkind: let\n\n---\n\n{values}", encoding="utf-8")
    (run / "bindings" / '"><img src=x onerror=alert(1)>.md').write_text("# x\n\nkind: let\n\n---\n\nvalue\n", encoding="utf-8")
    (run / "agents" / "reviewer" / "memory.md").write_text(values, encoding="utf-8")
    (run / "program.prose").write_text(
        f'agent reviewer:\n  model: sonnet\n\nlet fetch = session "{PAYLOADS[0]}"\n  context: fetch\n', encoding="utf-8")
    return run


def export(path: Path, *args: str) -> str:
    run = open_run(path)
    history = history_of(run, journal=Journal())
    fmt = args[0] if args else "html"
    at = int(args[1]) if len(args) > 1 else None
    return export_text(run, history, fmt, at)


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> TagCollector:
    collector = TagCollector()
    collector.feed(html)
    return collector


# -- what the page holds -------------------------------------------------------------------------
def test_html_holds_header_failure_trace_timeline_bindings():
    page = export(EVENTLOG_RUN)
    doc = parse(page)
    text = "".join(doc.text)
    assert "20260305-120000-e1e2e3" in text
    assert "the log ends with ---error" in text  # the status reason
    assert "Failures" in text and "rate limited" in text
    assert "Retries before it (2)" in text and "4→ retry:3/3" in text
    assert "Context bindings (2)" in text  # security and perf, from the program's context: line
    assert "Eviction now scans the whole cache" in text  # a context binding's value
    assert text.count("Trace (14)") == 1 and "Timeline (14)" in text
    assert "Bindings (3)" in text and "Pull request #218" in text


def test_html_is_self_contained_and_forbids_loads():
    page = export(SNAPSHOT_RUN)
    doc = parse(page)
    csp = next(dict(a)["content"] for t, a in doc.tags if t == "meta" and dict(a).get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "script-src 'none'" in csp and "'unsafe-inline'" not in csp
    for tag, attrs in doc.tags:
        values = dict(attrs)
        assert tag not in ("script", "link", "img", "iframe", "object", "embed"), tag
        assert not (values.get("src") or ""), f"{tag} loads {values['src']}"
        assert (values.get("href") or "#").startswith("#"), f"link leaves the page: {values['href']}"


def test_at_n_exports_the_state_as_of_that_event():
    run = open_run(EVENTLOG_RUN)
    history = history_of(run, journal=Journal())
    before_failure = build_report(run, history, at=3)
    assert before_failure.failures == [] and len(before_failure.timeline) == 4
    assert before_failure.at_text.startswith("as of event 3/13: 2b→ perf")
    page = export(EVENTLOG_RUN, "html", "3")
    assert "State as of event 3/13" in page and "rate limited" not in page
    with pytest.raises(IndexError):
        build_report(run, history, at=99)


def test_large_values_are_cut_with_their_full_size(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(EVENTLOG_RUN, run)
    big = run / "bindings" / "fetch.md"
    big.write_text("# fetch\n\nkind: let\n\n---\n\n" + "a line of a large value\n" * 20000
                   + "make: *** [Makefile:9: test] Error 2\n", encoding="utf-8")
    page = export(run)
    # issue 28: the head and the tail (where build and test errors are), and what was cut between
    assert "first 16.0 KiB and last 16.0 KiB of 468.8 KiB shown" in page
    assert "make: *** [Makefile:9: test] Error 2" in page and "cut here" in page
    assert len(page.encode()) < 200_000
    md = export(run, "md")
    assert "first 2.0 KiB and last 2.0 KiB of 468.8 KiB shown" in md
    assert "make: *** [Makefile:9: test] Error 2" in md


def test_markdown_for_an_issue():
    md = export(EVENTLOG_RUN, "md")
    assert md.startswith("## prose-tui run `20260305-120000-e1e2e3`: **failed**")
    assert "#### Event 10: `4→ draft ✗ rate limited`" in md
    assert md.count("#### Event 12: `5→ gate:ship ✗ rejected`") == 1 and "#### Event 13" not in md  # the failure once
    assert "- error: `rate limited`" in md and "  - `4→ retry:2/3`" in md
    assert "<details><summary>context binding security · root · 75 B</summary>" in md


def test_json_is_show_json_plus_history(capsys):
    assert main(["show", "--json", str(EVENTLOG_RUN)]) == 0
    shown = json.loads(capsys.readouterr().out)
    exported = json.loads(export(EVENTLOG_RUN, "json"))
    assert exported["history"]["failures"] == [10, 12, 13]
    exported["history"].pop("failures")
    assert exported == shown


# -- hostile content ---------------------------------------------------------------------------------
def test_hostile_content_is_text_not_markup(tmp_path):
    page = export(hostile_run(tmp_path))
    doc = parse(page)
    assert {t for t, _a in doc.tags} <= TEMPLATE_TAGS
    for tag, attrs in doc.tags:
        for name, value in attrs:
            assert not name.startswith("on"), f"<{tag} {name}=...>"
            assert "javascript:" not in (value or "") and PWNED not in (value or ""), f"<{tag} {name}={value!r}>"
    text = "".join(doc.text)
    for payload in PAYLOADS:  # shown, as text
        assert payload in text


def test_hostile_content_in_markdown_stays_code(tmp_path):
    from markdown_it import MarkdownIt

    md = export(hostile_run(tmp_path), "md")
    rendered = MarkdownIt("commonmark", {"html": True}).render(md)
    doc = parse(rendered)
    assert {t for t, _a in doc.tags} <= {"h2", "h3", "h4", "p", "strong", "em", "code", "pre", "ul", "li", "blockquote",
                                         "details", "summary", "sub"}
    assert all(not name.startswith("on") and "javascript:" not in (value or "")
               for _t, attrs in doc.tags for name, value in attrs)
    assert PAYLOADS[0] in "".join(doc.text)


def test_cli_names_the_file_after_the_run_and_never_lets_the_id_pick_a_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(EVENTLOG_RUN)]) == 0
    written = Path(capsys.readouterr().out.strip())
    assert written == tmp_path / "prose-20260305-120000-e1e2e3.html" and written.read_text().startswith("<!DOCTYPE html>")
    assert main(["export", str(EVENTLOG_RUN), "--at", "2", "-o", str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r.md").read_text().startswith("## prose-tui run")
    run = open_run(EVENTLOG_RUN)
    run.id = "../../etc/<x>"
    assert default_filename(run, "html") == "prose-etc_x.html"


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["export", str(EVENTLOG_RUN), "--at", "14"]) == 1
    assert capsys.readouterr().err.strip() == "prose-tui: --at 14: this run has 14 events (0-13)"
    assert main(["export", str(tmp_path / "nothing")]) == 1
    assert "prose-tui:" in capsys.readouterr().err
    assert main(["export", str(EVENTLOG_RUN), "-o", str(tmp_path / "no" / "such" / "dir" / "r.html")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_cli_runs_as_a_program(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "prose_tui.cli.main", "export", str(EVENTLOG_RUN), "-o", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["id"] == "20260305-120000-e1e2e3"


# -- in a real browser ---------------------------------------------------------------------------------
BROWSER_GUARD_MS = 120_000  # Chromium's start and every wait in it: only ends a hang, never a timing


@pytest.fixture
def browser_context(tmp_path_factory):
    """A headless system Chromium with a fresh profile, or a skip saying what is missing.
    One per test: Playwright's sync API keeps an event loop running while it is open,
    which the async UI tests of this module must not meet."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set PROSE_TUI_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"], timeout=BROWSER_GUARD_MS)
        context.set_default_timeout(BROWSER_GUARD_MS)  # Playwright's 30 s: a loaded machine's Chromium may take longer
        try:
            yield context
        finally:
            context.close()


def open_in_browser(context, page_file: Path):
    """Load ``page_file``; returns (page, console messages, requested URLs, page errors)."""
    page = context.new_page()
    console: list[tuple[str, str]] = []
    requests: list[str] = []
    errors: list[str] = []
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(page_file.as_uri(), wait_until="load")
    return page, console, requests, errors


def test_page_renders_in_chromium_offline(browser_context, tmp_path):
    page_file = tmp_path / "report.html"
    page_file.write_text(export(EVENTLOG_RUN), encoding="utf-8")
    page, console, requests, errors = open_in_browser(browser_context, page_file)
    try:
        assert page.inner_text("#run-id") == "20260305-120000-e1e2e3"
        assert "rate limited" in page.inner_text("#failures")
        assert page.locator("#timeline tr").count() == 15  # a heading row and 14 events
        assert page.evaluate("getComputedStyle(document.body).marginTop") == "0px"  # the stylesheet applied under the CSP
        assert [m for m in console if m[0] in ("error", "warning")] == []
        assert errors == []
        assert requests == [page_file.as_uri()]
    finally:
        page.close()


def test_hostile_page_runs_nothing_in_chromium(browser_context, tmp_path):
    page_file = tmp_path / "hostile.html"
    page_file.write_text(export(hostile_run(tmp_path)), encoding="utf-8")
    page, console, requests, errors = open_in_browser(browser_context, page_file)
    try:
        assert page.inner_text("#run-id") == "20260305-120000-abcdef"
        assert PAYLOADS[0] in page.inner_text("#trace")
        assert page.evaluate("document.querySelectorAll('script, img, svg, iframe, object, embed').length") == 0
        assert page.evaluate("typeof window.pwned") == "undefined"
        assert [m for m in console if m[0] in ("error", "warning")] == []
        assert errors == []
        assert requests == [page_file.as_uri()]
    finally:
        page.close()


# -- from the explorer ------------------------------------------------------------------------------
def messages(app) -> list[str]:
    return list(getattr(app, "notified", None) or (str(n.message) for n in app._notifications))


async def test_export_key_writes_the_run_on_screen_as_of_the_cursor(tmp_path, monkeypatch):
    from app_helpers import make_app, ready, wait_until

    monkeypatch.chdir(tmp_path)
    app = make_app(FIXTURES / "eventlog")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.current_run is not None and len(app.explorer.nav.events) == 14,
                         what="the run and its history")
        await pilot.press("E")
        live = tmp_path / "prose-20260305-120000-e1e2e3.html"
        await wait_until(pilot, lambda: any(str(live) in m for m in messages(app)), what="the export notification")
        assert "rate limited" in live.read_text(encoding="utf-8")
        await pilot.press("left_curly_bracket", "right_square_bracket", "right_square_bracket")  # event 2
        await wait_until(pilot, lambda: app.explorer.nav.cursor == 2, what="the history cursor at event 2")
        await pilot.press("E")
        frozen = tmp_path / "prose-20260305-120000-e1e2e3-at-2.html"
        await wait_until(pilot, lambda: any(str(frozen) in m for m in messages(app)), what="the second export")
        page = frozen.read_text(encoding="utf-8")
        assert "State as of event 2/13" in page and "rate limited" not in page


async def test_palette_exports_markdown_to_a_typed_path(tmp_path, monkeypatch):
    from app_helpers import make_app, ready, wait_until

    from prose_tui.tui.screens.export_prompt import ExportPrompt

    monkeypatch.chdir(tmp_path)
    app = make_app(FIXTURES / "eventlog")
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await wait_until(pilot, lambda: app.explorer.current_run is not None, what="the run")
        await pilot.press("ctrl+p")
        await pilot.press(*"Export run as Markdown to")
        await wait_until(pilot, lambda: "Export run as Markdown to" in str(app.screen.query("OptionList").first().get_option_at_index(0).prompt)
                         if app.screen.query("OptionList") and app.screen.query("OptionList").first().option_count else False,
                         what="the palette to offer the command")
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, ExportPrompt), what="the path prompt")
        target = tmp_path / "issue.md"
        app.screen.query_one("#export-path").value = str(target)
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(str(target) in m for m in messages(app)), what="the export notification")
        assert target.read_text(encoding="utf-8").startswith("## prose-tui run `20260305-120000-e1e2e3`: **failed**")


@pytest.mark.corpus
def test_every_real_run_exports_as_text_not_markup():
    from conftest import corpus_or_skip

    from prose_tui.backends import find_runs

    refs = find_runs(corpus_or_skip())
    assert refs, "the corpus holds no runs"
    for ref in refs:
        run = open_run(ref.path)
        history = history_of(run, journal=Journal())
        doc = parse(export_text(run, history, "html"))
        assert {t for t, _a in doc.tags} <= TEMPLATE_TAGS, ref.path
        assert run.id in "".join(doc.text)
        assert export_text(run, history, "md").startswith("## prose-tui run ")


def test_call_stack_of_a_run_inside_a_recursive_block():
    page = export(SNAPSHOT_RUN)
    text = "".join(parse(page).text)
    assert "Call stack (innermost first)" in text and "#43" in text and "expand" in text
    assert "- `#43 expand` depth 3 · `executing`" in export(SNAPSHOT_RUN, "md")


def test_markdown_stays_under_an_issue_body_limit(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(EVENTLOG_RUN, run)
    for i in range(40):
        (run / "bindings" / f"part{i:02d}.md").write_text("# p\n\nkind: let\n\n---\n\n" + "x" * 8000, encoding="utf-8")
    md = export(run, "md")
    assert len(md) < 65_536
    assert "values left out to stay under 60,000 characters" in md
    assert "- `part39` · `let` · `root`" in md  # listed, without its value


def test_a_sqlite_run_exports_values_and_memory_from_the_database(tmp_path):
    from sqlite_fixture import build_sqlite_run

    run_dir = build_sqlite_run(tmp_path, failed=True)
    text = "".join(parse(export(run_dir)).text)
    assert "Context window exceeded" in text  # the failure
    assert "Quantum computing uses qubits" in text  # a value held in the bindings table
    assert "Every finding, at length." in text  # a value in an attachment file
    assert "Remembers: prefer primary sources." in text  # agent memory held in the agents table


def test_an_export_shows_the_program_and_marks_what_the_explorer_marks(tmp_path):
    """Issue 28: an exported event-log run had no program text, and the failure the explorer
    marks was not marked: the export carries the trace as the explorer shows it."""
    from prose_tui.demo.simulator import write_history_runs
    from prose_tui.history import Journal as J
    from prose_tui.viewmodel.explorer_model import trace_as_shown

    run = open_run(EVENTLOG_RUN)
    md = export_text(run, history_of(run, journal=J()), "md", None, trace_as_shown(run))
    assert '23 ✗ if **the review approves the change**:' in md  # the program line, not the log line
    assert '17 ✗   let draft = session "Draft the review comment"' in md
    _done, failed = write_history_runs(tmp_path)
    demo = open_run(failed)
    page = export_text(demo, history_of(demo, journal=J()), "md", None, trace_as_shown(demo))
    assert '3 ✗ session "Publish the site to the docs bucket"' in page
    assert "✗ failed (attempt 3/3): The publish session failed on all 3 attempts" in page
    assert page.count("#### Event") == 1  # the failure once
