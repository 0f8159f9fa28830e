"""Strays the issue tracker found on the demo store: a write depending on another server's listing, and the
path a tool writes taken from a search (the caller chooses where a file goes)."""

from __future__ import annotations

import pytest

from toolkg.canonicalize.inference.infer import infer_dependencies
from toolkg.canonicalize.inference.profiles import is_destination
from toolkg.models import Parameter, Tool


def _tool(server: str, name: str, description: str, *params: str) -> Tool:
    return Tool(
        server_id=server,
        name=name,
        description=description,
        parameters=tuple(Parameter(name=p, required=True, description=f"the {p}") for p in params),
    )


FILESYSTEM = [
    _tool("fs", "search_files", "Search files by a pattern; returns the full paths of the matches", "pattern"),
    _tool("fs", "read_file", "Read the contents of a file", "path"),
    _tool("fs", "edit_file", "Make line edits to a text file", "path", "edits"),
    _tool("fs", "write_file", "Create a new file or overwrite a file with new content", "path", "content"),
    _tool("fs", "create_directory", "Create a new directory", "path"),
]
SLIDES = [
    _tool("slides", "list_files", "List the presentation files in the workspace"),
    _tool("slides", "add_slide", "Add a slide to a presentation file", "file_path", "layout"),
]


def test_a_write_never_depends_on_another_servers_listing_of_the_same_word():
    edges = infer_dependencies(FILESYSTEM + SLIDES)
    strays = [e for e in edges if e.consumer.startswith("fs::") and e.producer.startswith("slides::")]
    assert strays == []


def test_where_a_tool_writes_is_the_callers_choice_and_what_it_reads_is_not():
    edges = {(e.consumer, e.parameter) for e in infer_dependencies(FILESYSTEM)}
    assert ("fs::write_file", "path") not in edges
    assert ("fs::create_directory", "path") not in edges
    assert ("fs::read_file", "path") in edges  # a search's paths are what a read takes


@pytest.mark.parametrize(
    ("tool", "parameter", "expected"),
    [
        ("write_file", "path", True),
        ("create_directory", "path", True),
        ("git_create_branch", "branch_name", True),  # the new branch's name
        ("git_create_branch", "base_branch", False),  # an existing branch
        ("save_presentation", "presentation_id", False),  # saves one that exists
        ("create_slide_from_template", "template_id", False),  # made from a template, not one
        ("pulls/create-review-comment", "path", False),  # the file commented on
        ("export_report", "output_dir", True),
        ("edit_file", "path", False),
    ],
)
def test_destinations(tool, parameter, expected):
    assert is_destination(tool, parameter) is expected
