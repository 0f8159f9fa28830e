"""ToolSearch as agents meet it (toolkg.toolsearch.service): names as typed, abstention, pinned tools, freshness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import build_in_process
from tests.support.live_helpers import TOY_TOOLS
from toolkg.errors import NotFoundError
from toolkg.toolsearch.service import ToolSearch

IRRELEVANT = ["water the tomato plants on the balcony", "fold the laundry that's on the bed", "hello there!"]


def _catalog(folder: Path, tools: list[dict] | None = None) -> Path:
    manifest = folder / "bookings.json"
    manifest.write_text(json.dumps({"server": "bookings", "tools": tools or json.loads(TOY_TOOLS.read_text())}))
    return manifest


@pytest.fixture(scope="module")
def store(tmp_path_factory, built_store) -> Path:
    return built_store(_catalog(tmp_path_factory.mktemp("bookings")))


def _ids(answer: dict) -> list[str]:
    return [t["id"] for t in answer["tools"]]


def test_a_named_tool_comes_first_in_every_form(store) -> None:
    with ToolSearch(store) as search:
        for typed in (
            "cancel_booking",
            "bookings::cancel_booking",
            "mcp__bookings__cancel_booking",
            "bookings__cancel_booking",
            "select:cancel_booking",
            "CancelBooking",
            "cancel-bookng",
        ):
            answer = search.search_tools(typed, k=3)
            assert _ids(answer)[0] == "bookings::cancel_booking", typed
            assert answer["tools"][0]["why"] == "named in the request"
        both = search.search_tools("select:login,bookings::get_booking", k=1)
        assert _ids(both) == ["bookings::login", "bookings::get_booking"]  # every named tool, in order, past k


def test_a_request_no_tool_serves_gets_no_tools_and_a_note(store) -> None:
    with ToolSearch(store) as search:
        for text in IRRELEVANT:
            answer = search.search_tools(text, k=5)
            assert answer["tools"] == [], (text, answer["tools"][:1])
            assert "no tool serves this request well enough" in answer["note"]
            assert answer["abstain"] is True and answer["reason"] in answer["note"]
        relevant = search.search_tools("book a flight for me", k=3)
        assert _ids(relevant)[0] == "bookings::book_flight" and "note" not in relevant
        assert relevant["abstain"] is False and "reason" not in relevant
        forced = search.search_tools(IRRELEVANT[0], k=5, min_score=0)  # the caller's threshold wins
        assert len(forced["tools"]) == 5 and forced["min_score"] == 0


def test_pinned_tools_come_with_every_answer(store) -> None:
    with ToolSearch(store, pinned=["login", "mcp__bookings__get_booking", "no_such_tool"]) as search:
        for text in ("book a flight for me", IRRELEVANT[0]):
            answer = search.search_tools(text, k=1)
            pinned = [t["id"] for t in answer["tools"] if t.get("pinned")]
            assert pinned == ["bookings::login", "bookings::get_booking"], text
            assert "pinned tools not in the catalog: no_such_tool" in answer["note"]
        first = search.search_tools("login", k=2)["tools"]
        assert first[0]["id"] == "bookings::login" and first[0]["pinned"] is True  # ranked and pinned: once
        assert [t["id"] for t in first].count("bookings::login") == 1


@pytest.mark.slow
def test_a_tool_a_build_removed_is_never_returned(tmp_path) -> None:
    tools = json.loads(TOY_TOOLS.read_text())
    manifest = _catalog(tmp_path)
    store = tmp_path / "store"
    assert build_in_process([manifest], store).exit_code == 0
    with ToolSearch(store, pinned=["cancel_booking"]) as search:
        assert _ids(search.search_tools("cancel_booking", k=2))[0] == "bookings::cancel_booking"
        _catalog(tmp_path, [t for t in tools if t["name"] != "cancel_booking"])
        assert build_in_process([manifest], store).exit_code == 0  # publishes a new snapshot beside the search
        for text in ("cancel my booking", "cancel_booking", "bookings::cancel_booking"):
            answer = search.search_tools(text, k=5, min_score=0)
            assert "bookings::cancel_booking" not in _ids(answer), text
        with pytest.raises(NotFoundError, match="'bookings::cancel_booking' was removed from the catalog"):
            search.get_tool("bookings::cancel_booking")
        assert "pinned tools not in the catalog: cancel_booking" in search.search_tools("login", k=1)["note"]
