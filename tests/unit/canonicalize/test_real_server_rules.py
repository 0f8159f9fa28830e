"""Dependency rules for real MCP servers, which declare no outputs: what a description says a tool
returns, file formats passed by path, tools named in a parameter's text, and which values may cross
from one server to another (canonicalize/inference/returns.py, files.py, mentions.py, infer.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.inference.returns import described_returns
from toolkg.config import InferenceOptions
from toolkg.models import Parameter, Tool

RULES_ONLY = InferenceOptions(learned=False)  # the rules' own behaviour


def _tool(server: str, name: str, description: str = "", *params: str, notes: dict | None = None) -> Tool:
    notes = notes or {}
    parameters = tuple(Parameter(name=p, required=True, description=notes.get(p, "")) for p in params)
    return Tool(server_id=server, name=name, description=description, parameters=parameters)


def _edges(tools):
    # the rules' own behaviour (the learned model is tested in test_inference.py)
    return {(e.consumer, e.producer, e.parameter): e for e in infer_dependencies(tools, RULES_ONLY)}


def test_a_description_says_what_a_tool_returns():
    def returns(description: str) -> set[str]:
        return {" ".join(k) for k in described_returns(_tool("s", "t", description))}

    assert returns("Search for stories and comments on Hacker News") == {"story", "comment"}
    assert returns("List Git branches") == {"git branch"}
    assert "geographic coordinate" in returns("Convert an address or place name to geographic coordinates")
    assert "park code" in returns("Lists national parks with their park codes.")
    assert returns("Add a recipe to favorites") == set()  # adding makes nothing new
    assert returns("Returns comprehensive information") == set()  # an adjective without its noun
    assert returns("获取少数派热榜") == set()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_reading_returns_never_fails_and_gives_lemma_headed_keys(description):
    for key in described_returns(_tool("s", "t", description)):
        assert key and all(word.isascii() and word.isalpha() for word in key)


def test_a_noun_named_lister_feeds_the_identifier_its_siblings_take():
    tools = [
        _tool("git", "git_branch", "List Git branches", "repo_path"),
        _tool("git", "git_checkout", "Switches branches", "repo_path", "branch_name"),
    ]
    assert ("git::git_checkout", "git::git_branch", "branch_name") in _edges(tools)


def test_coordinates_cross_servers_but_a_bare_reference_does_not():
    tools = [
        _tool("maps", "geocode_address", "Convert an address to geographic coordinates", "address"),
        _tool("weather", "get_weather", "Weather for a place", "latitude", "longitude"),
        _tool("stocks_kr", "load_all_tickers", "Load all tickers of the exchange"),
        _tool("stocks_us", "get_price_history", "Price history of a stock", "ticker"),
    ]
    edges = _edges(tools)
    assert ("weather::get_weather", "maps::geocode_address", "longitude") in edges
    assert not any(c == "stocks_us::get_price_history" for c, _, _ in edges)  # whose ticker?


def test_a_file_written_in_one_format_feeds_the_tool_that_reads_it_preferring_the_same_server():
    tools = [
        _tool("office", "create_document", "Create a new Word document", "filename"),
        _tool("conv", "docx_to_pdf", "Convert DOCX files to PDF format", "inputPath", "outputPath"),
        _tool("conv", "pdf_splitter", "Split a PDF file into multiple files", "inputPath", "outputDir"),
        _tool("web", "save_as_pdf", "Save the current page as a PDF file", "outputPath"),
    ]
    edges = _edges(tools)
    split = edges[("conv::pdf_splitter", "conv::docx_to_pdf", "inputPath")]
    assert split.rule == "file-format" and split.confidence == 0.75
    assert ("conv::pdf_splitter", "web::save_as_pdf", "inputPath") not in edges  # its own server writes PDFs
    across = edges[("conv::docx_to_pdf", "office::create_document", "inputPath")]
    assert across.confidence < split.confidence  # a format means the same everywhere, but less surely


def test_a_tool_named_in_a_parameters_text_is_its_source_in_any_language():
    tools = [
        _tool("cards", "search_cards", "通过关键字搜索卡牌", "keyword"),
        _tool("cards", "get_card_image", "获取卡牌的图片", "id", notes={"id": "卡牌ID，可以使用search_cards工具搜索"}),
        _tool("tasks", "plan", "Plan tasks. Then call finish_task with the result.", "tasks"),
        _tool("tasks", "finish_task", "Finish a task", "note"),
    ]
    edges = _edges(tools)
    assert edges[("cards::get_card_image", "cards::search_cards", "id")].rule == "explicit-mention"
    assert ("tasks::plan", "tasks::finish_task", None) not in edges  # a next step, not a source


def test_an_identifier_comes_from_both_the_tool_that_makes_it_and_the_one_that_lists_it():
    tools = [
        _tool("shop", "create_order", "Create an order", "items"),
        _tool("shop", "list_orders", "List orders"),
        _tool("shop", "cancel_order", "Cancel an order", "order_id"),
    ]
    producers = {p for c, p, q in _edges(tools) if c == "shop::cancel_order" and q == "order_id"}
    assert producers == {"shop::create_order", "shop::list_orders"}


def test_short_forms_form_heads_and_output_locations():
    tools = [
        _tool("git", "git_init", "Initialize a new Git repository", "repo_path"),
        _tool("git", "git_status", "Shows the working tree status", "repo_path"),
        _tool("web", "fetch_markdown", "Fetch a website and return the content as Markdown", "url"),
        _tool("maps", "make_mindmap", "Turn Markdown into a mind map", "markdown_content"),
        _tool("fs", "list_directory", "List a directory", "dir_name"),
        _tool("conv", "html_to_text", "Convert HTML to plain text", "inputPath", "outputDir"),
    ]
    edges = _edges(tools)
    assert ("git::git_status", "git::git_init", "repo_path") in edges  # repo -> the repository git_init makes
    assert ("maps::make_mindmap", "web::fetch_markdown", "markdown_content") in edges  # content as Markdown
    assert not any(q == "outputDir" for _, _, q in edges)  # where to write is the caller's choice
