"""A new user's rough edges (issue 32): the run list's width, Enter and Esc, typeahead after
``/``, a bad path, help and keys, notifications and status lines, labels. Each test drives
the app as a user does (keys, a paste) at 80x24 and 120x40 and waits on what the app signals."""

from __future__ import annotations

import pytest
from app_helpers import make_app, ready, wait_until
from conftest import FIXTURES
from textual import events

from prose_tui.tui.widgets.search_bar import SearchBar

PROJECT = FIXTURES / "project"
NEWEST = PROJECT / ".prose" / "runs" / "20260301-100000-a1b2c3"
SIZES = [(80, 24), (120, 40)]


# -- 3. typeahead after "/" ------------------------------------------------------------------------
@pytest.mark.parametrize("size", SIZES)
async def test_every_key_typed_right_after_slash_reaches_the_search(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await pilot.press("slash", *"a1b2")
        bar = app.explorer.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.value == "a1b2", what=f"the query typed after / (have {bar.value!r})")


@pytest.mark.parametrize("size", SIZES)
async def test_a_query_pasted_right_after_slash_reaches_the_search(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        # "/" and the paste arrive together, as over SSH: both queued before either is handled.
        app.post_message(events.Key("slash", "/"))
        app.post_message(events.Paste("a1b2c3"))
        bar = app.explorer.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.value == "a1b2c3", what=f"the pasted query (have {bar.value!r})")


@pytest.mark.parametrize("size", SIZES)
async def test_keys_arriving_together_with_slash_reach_the_search(size):
    app = make_app(PROJECT)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        for key, char in [("slash", "/"), ("j", "j"), ("k", "k"), ("2", "2")]:  # j, k, 2 would move or switch pane
            app.post_message(events.Key(key, char))
        bar = app.explorer.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.value == "jk2", what=f"the keys typed with / (have {bar.value!r})")
        app.post_message(events.Key("enter", "\r"))
        await wait_until(pilot, lambda: not bar.has_class("-open") and app.explorer.search_term == "jk2", what="the search to run")


async def test_a_slash_typed_into_the_query_is_part_of_it():
    app = make_app(PROJECT)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("slash", *"runs/2026")
        bar = app.explorer.query_one(SearchBar)
        await wait_until(pilot, lambda: bar.value == "runs/2026", what=f"the query with a slash (have {bar.value!r})")
