"""What a new user hit first (issue 43), through the installed `toolkg` in a subprocess, on a store built once.

- `toolkg query`: a syntax error's line and column are the query's own (the project's prefixes are no longer
  lines in front of it), and an undeclared prefix is named in one line instead of Oxigraph's grammar dump;
- `toolkg deps --tool` naming no stored tool is a usage error (exit 2) with the closest ids, not an empty answer;
- `toolkg retrieve`: every `why` can be read whole (after the table where the table cut it, and in --json);
- `toolkg serve` and `toolkg mcp --transport http` on a busy port: one line naming the port, exit 2, no banner
  (a real socket on 127.0.0.1 holds the port);
- a mistyped command or choice names the closest (`toolkg biuld`: did you mean build?);
- `query --json` is JSON whatever the query form (ASK: the SPARQL JSON results; CONSTRUCT: JSON-LD);
- a table's IRIs paste back into SPARQL, and a table is cut to the window only on a terminal, whole when piped.

Bare `toolkg` printing the help is in tests/e2e/test_cli_help.py. No Prefect server: none of these starts a flow.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CASES, TOOLKG
from tests.support.cli_runner import run_in_process
from tests.support.pty_screen import run_on_pty, terminal_text
from toolkg.ontology import TK_NS as TK


@pytest.fixture(scope="module")
def store(built_store) -> Path:
    return built_store(CASES / "inference" / "shop.json", links=False)  # shared: these tests only read it


def toolkg(*args: str, columns: int | None = None) -> subprocess.CompletedProcess:
    # no width asked unless ``columns`` asks one ($COLUMNS cuts even a pipe; a test runner may have set it)
    return run_in_process(*args, env={"COLUMNS": str(columns) if columns else None})


def test_query_errors_point_into_the_query_as_written(store):
    bad = toolkg("query", "--store", str(store), "SELECT ?n WHERE {\n  ?t tk:name ?n\n  FILTR }")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("toolkg: error: invalid SPARQL: error at 3:") and bad.stderr.count("\n") == 1


def test_an_undeclared_prefix_is_named(store):
    bad = toolkg("query", "--store", str(store), "SELECT ?n WHERE { ?t tk:name ?n ; foo:bar ?x }")
    assert bad.returncode == 2
    assert bad.stderr == (
        "toolkg: error: invalid SPARQL: error at 1:35: undefined prefix 'foo:' (declare it with PREFIX foo: <IRI>)\n"
    )
    typo = toolkg("query", "--store", str(store), "ASK { ?t tks:name 'x' }")
    assert typo.returncode == 2 and "undefined prefix 'tks:' (did you mean tk:?" in typo.stderr


def test_deps_of_a_tool_the_store_lacks_is_a_usage_error(store):
    missing = toolkg("deps", "--store", str(store), "--tool", "nosuch::tool")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == f"toolkg: error: --tool 'nosuch::tool': no such tool in {store}\n"
    typo = toolkg("deps", "--store", str(store), "--tool", "shop::acme_place_ordr")
    assert typo.returncode == 2 and typo.stderr.endswith("; did you mean shop::acme_place_order?\n")
    bare = toolkg("deps", "--store", str(store), "--tool", "acme_place_ordr")
    assert bare.returncode == 2 and bare.stderr.endswith("; did you mean acme_place_order?\n")
    known = toolkg("deps", "--store", str(store), "--tool", "shop::acme_place_order")
    assert known.returncode == 0 and "shop::acme_place_order depends transitively on" in known.stdout


def test_every_why_of_retrieve_can_be_read_whole(store):
    query = ("retrieve", "--store", str(store), "-k", "4", "--method", "grtf", "place an order", "--step", "log in")
    ranked = json.loads(toolkg(*query, "--json").stdout)["tools"]
    whys = [t["why"] for t in ranked]
    assert len(whys) == 4 and all(whys) and any(" of " in why for why in whys)  # a prerequisite's reason
    narrow = toolkg(*query, columns=60)
    assert narrow.returncode == 0, narrow.stderr
    lines = narrow.stdout.splitlines()
    assert all(len(line) <= 60 for line in lines[1 : 3 + len(whys)])  # the header line and the table fit
    cut = lines.index("why, in full where cut above:")
    assert cut == 3 + len(whys) and lines[-1].startswith("servers: ")
    shown = {line[:4].strip(): line[6:] for line in lines[cut + 1 : -1]}
    assert shown and all(shown[rank] == whys[int(rank) - 1] for rank in shown)
    cells = {str(rank): line for rank, line in enumerate(lines[3 : 3 + len(whys)], start=1)}
    assert {rank for rank, line in cells.items() if line.endswith("…")} == set(shown)
    wide = toolkg(*query, columns=200)  # the table is at most 120 wide; these reasons fit it
    assert "why, in full" not in wide.stdout and all(why in wide.stdout for why in whys)


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--transport", "http", "--no-auth"]])
def test_a_busy_port_is_one_line_and_a_usage_error(store, command):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        busy = toolkg(*command, "--store", str(store), "--bind", f"127.0.0.1:{port}")
    assert (busy.returncode, busy.stdout) == (2, ""), busy.stderr
    pick = "pick another with --bind 127.0.0.1:PORT"
    assert busy.stderr == f"toolkg: error: port {port} on 127.0.0.1 is in use; {pick}\n"


def test_a_mistyped_command_or_choice_names_the_closest():
    typo = toolkg("biuld", "x.json")
    assert typo.returncode == 2 and typo.stdout == "" and typo.stderr.count("\n") == 1
    assert "invalid choice: 'biuld'; did you mean build?" in typo.stderr
    choice = toolkg("query", "--format", "jsno", "ASK {}")
    assert choice.returncode == 2 and "invalid choice: 'jsno'; did you mean json?" in choice.stderr
    unlike = toolkg("zzzz")
    assert unlike.returncode == 2 and "did you mean" not in unlike.stderr


def test_query_json_is_json_for_every_query_form(store):
    ask = toolkg("query", "--store", str(store), "--json", "ASK { ?t a tk:Tool }")
    assert ask.returncode == 0 and json.loads(ask.stdout) == {"head": {}, "boolean": True}
    construct = "CONSTRUCT { ?t tk:name ?n } WHERE { ?t a tk:Tool ; tk:name ?n FILTER(?n = 'acme_place_order') }"
    graph = json.loads(toolkg("query", "--store", str(store), "--json", construct).stdout)  # JSON-LD
    assert [node[TK + "name"] for node in graph] == [[{"@value": "acme_place_order"}]]
    assert graph[0]["@id"].startswith("https://w3id.org/toolkg/id/tool/")
    rows = toolkg("query", "--store", str(store), "--format", "csv", construct).stdout.splitlines()
    assert rows[0] == "subject,predicate,object" and rows[1].endswith(f",{TK}name,acme_place_order")
    described = json.loads(toolkg("query", "--store", str(store), "--json", f"DESCRIBE <{graph[0]['@id']}>").stdout)
    assert described and described[0]["@id"] == graph[0]["@id"]


def test_a_table_iri_pastes_back_into_a_query(store):
    shown = toolkg("query", "--store", str(store), "SELECT ?t ?c WHERE { ?t tk:name 'acme_place_order' ; a ?c }")
    assert shown.returncode == 0, shown.stderr
    tool, kind = shown.stdout.split("\n")[2].split()
    assert tool.startswith("<https://w3id.org/toolkg/id/tool/") and kind == "tk:Tool"
    again = toolkg("query", "--store", str(store), f"SELECT ?n WHERE {{ {tool} a {kind} ; tk:name ?n }}")
    assert again.returncode == 0 and again.stdout.split("\n")[2] == "acme_place_order", again.stderr


def test_a_table_is_cut_on_a_terminal_only(store):
    long = "word " * 60  # 300 characters
    query = (
        "query",
        "--store",
        str(store),
        f'SELECT ?id ?long WHERE {{ ?t tk:identifier ?id BIND("{long}" AS ?long) }}',
    )
    piped = toolkg(*query)
    assert piped.returncode == 0 and "…" not in piped.stdout and long.strip() in piped.stdout
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    code, stderr, screen = run_on_pty([str(TOOLKG), *query], 80, env, stdout_on_pty=True)
    lines = terminal_text(screen).split("\n")
    assert code == 0, stderr
    assert "…" in lines[2] and all(len(line) <= 80 for line in lines)
