"""The same-server rules for real MCP servers: identifiers from the tool that lists, finds, creates or
converts into what they name, and the one opener a server's interaction tools act after."""

from __future__ import annotations

from toolkg.canonicalize.inference.identifiers import MAX_SERVER_TOOLS
from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.config import InferenceOptions
from toolkg.models import Parameter, Tool

RULES_ONLY = InferenceOptions(learned=False)  # the rules' own behaviour


def _tool(server: str, name: str, description: str = "", *params: str) -> Tool:
    parameters = tuple(Parameter(name=p, required=True) for p in params)
    return Tool(server_id=server, name=name, description=description, parameters=parameters)


def _pairs(tools) -> dict[tuple[str, str, str | None], str]:
    # the rules' own behaviour (the learned model is tested in test_inference.py)
    return {(e.consumer, e.producer, e.parameter): e.rule for e in infer_dependencies(tools, RULES_ONLY)}


def test_an_identifier_comes_from_its_own_servers_lister_not_another_servers():
    tools = [
        _tool("ui", "search_components", "Search UI components by keyword", "keyword"),
        _tool("ui", "get_component_examples", "Examples of one component", "componentName"),
        _tool("other", "list_components", "List the components of a circuit", "circuit"),
    ]
    pairs = _pairs(tools)
    # found by the identifier rule and by the output rule reading 'Search UI components': either may keep it
    assert ("ui::get_component_examples", "ui::search_components", "componentName") in pairs
    assert not any(c == "ui::get_component_examples" and p.startswith("other::") for c, p, _ in pairs)


def test_a_bare_id_names_the_tools_own_object_and_siblings_do_not_feed_each_other():
    tools = [
        _tool("cards", "search_cards", "Search cards", "query"),
        _tool("cards", "get_card_by_id", "One card", "id"),
        _tool("cards", "get_card_price", "Price of a card", "id"),
    ]
    pairs = _pairs(tools)
    assert ("cards::get_card_by_id", "cards::search_cards", "id") in pairs
    assert ("cards::get_card_by_id", "cards::get_card_price", "id") not in pairs  # same verb, same object


def test_a_file_parameter_comes_from_the_creator_or_the_converter_that_writes_its_format():
    tools = [
        _tool("office", "create_document", "Create a new Word document", "filename"),
        _tool("office", "add_table", "Add a table to a document", "filename", "rows"),
        _tool("convert", "docx_to_html", "Convert a DOCX file to HTML", "inputPath"),
        _tool("convert", "html_to_markdown", "Convert an HTML file to Markdown", "inputPath"),
        _tool("convert", "pdf_splitter", "Split a PDF file", "inputPath"),
    ]
    pairs = _pairs(tools)
    assert ("office::add_table", "office::create_document", "filename") in pairs
    assert ("convert::html_to_markdown", "convert::docx_to_html", "inputPath") in pairs
    assert not any(c == "convert::pdf_splitter" for c, _, _ in pairs)  # nobody here writes a PDF


def test_the_one_opener_of_a_server_precedes_its_interaction_tools():
    tools = [
        _tool("browser", "browser_navigate", "Navigate to a URL", "url"),
        _tool("browser", "browser_click", "Click an element on the page", "selector"),
        _tool("browser", "browser_screenshot", "Take a screenshot of the page"),
        _tool("files", "read_file", "Read a file", "path"),
    ]
    pairs = _pairs(tools)
    assert pairs[("browser::browser_click", "browser::browser_navigate", None)] == "session-opener"
    assert ("browser::browser_screenshot", "browser::browser_navigate", None) in pairs
    assert not any(c == "files::read_file" and p == "browser::browser_navigate" for c, p, _ in pairs)
    two = [*tools, _tool("browser", "browser_open_tab", "Open a new tab", "url")]
    assert not any(rule == "session-opener" for rule in _pairs(two).values())  # two openers: no guess


def test_a_server_as_big_as_a_catalog_gets_no_same_server_guesses():
    tools = [_tool("big", "search_cards", "Search cards", "query"), _tool("big", "get_card_by_id", "One card", "id")]
    tools += [_tool("big", f"tool_{i}", "Something else", "x") for i in range(MAX_SERVER_TOOLS)]
    assert not any(rule == "same-server-identifier" for rule in _pairs(tools).values())


def test_unrelated_catalogs_share_no_precondition_and_only_strong_parameter_matches():
    phone = [
        _tool("os", "get_wifi_status", "Check network connectivity: whether Wi-Fi is connected"),
        _tool("os", "book_taxi", "Book a taxi to an address", "address"),
    ]
    servers = [
        _tool("files", "write_file", "Write text to a file", "path", "content"),
        _tool("shop", "get_product_code", "Look up a product code", "product_name"),
        _tool("orders", "place_order", "Order a product", "product_code"),
    ]
    apart = {"os": "/catalogs/phone", "files": "/catalogs/mcp", "shop": "/catalogs/mcp", "orders": "/catalogs/other"}
    together = _pairs([*phone, *servers])
    assert ("files::write_file", "os::get_wifi_status", None) in together  # one catalog: the rule reaches all
    pairs = {(e.consumer, e.producer) for e in infer_dependencies([*phone, *servers], catalogs=apart)}
    assert ("os::book_taxi", "os::get_wifi_status") in pairs  # inside its own catalog it still holds
    assert ("files::write_file", "os::get_wifi_status") not in pairs
    assert ("orders::place_order", "shop::get_product_code") in pairs  # an exact, specific match crosses
