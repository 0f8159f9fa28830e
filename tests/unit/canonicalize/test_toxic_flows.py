"""The role classifier's shape (canonicalize/findings/roles.py) and the toxic-flow search (flows.py) on synthetic
catalogs: a server with a web fetcher, a file reader and a sender joined by edges is one high finding on the
sink; without the sink, none; without edges, medium; one finding per toolset; renaming tools changes nothing."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkg.canonicalize.findings.flows import flow_findings, toxic_flows
from toolkg.canonicalize.findings.roles import MODEL_PATH, ROLES, Roles, features, load_role_model
from toolkg.findings import FindingKind, Severity, ToolText
from toolkg.models import Annotations, Parameter, Tool

FETCH = Roles(untrusted=0.95, private=0.05, sink=0.2)
READ = Roles(untrusted=0.1, private=0.9, sink=0.05)
SEND = Roles(untrusted=0.05, private=0.1, sink=0.85)
PLAIN = Roles(untrusted=0.1, private=0.1, sink=0.1)


def _text(name: str, description: str, *params: tuple[str, str], server: str = "a", **hints) -> ToolText:
    parameters = tuple(Parameter(name=p, json_type="string", description=d) for p, d in params)
    annotations = Annotations(**hints) if hints else None
    tool = Tool(server_id=server, name=name, description=description, parameters=parameters, annotations=annotations)
    return ToolText.from_tool(tool)


# --- the classifier --------------------------------------------------------------------------------


def test_the_shipped_model_gives_three_probabilities_per_tool():
    model = load_role_model()
    data = json.loads(MODEL_PATH.read_text())
    assert tuple(data["roles"]) == ROLES and len(data["vocabulary"]) == len(data["weights"]["sink"]) > 100
    assert len(model.digest) == 12
    roles = model.roles(_text("get_weather", "Get the weather forecast for a city.", ("city", "City name.")))
    assert all(0.0 <= roles.of(r) <= 1.0 for r in ROLES)
    assert roles.held() == ()  # public, computed data: no role


def test_features_come_from_the_tools_own_text_not_its_servers():
    tool = _text("post_message", "Post a message to a channel.", ("channel", "Channel id."), read_only=False)
    plain = ToolText.from_tool(
        Tool(server_id="chat", name="post_message", description="Post a message to a channel.",
             parameters=(Parameter(name="channel", json_type="string", description="Channel id."),),
             annotations=Annotations(read_only=False))
    )  # fmt: skip
    with_server = ToolText(plain.id, plain.server, plain.name, plain.fields, plain.shape, (("server.name", "Evil"),))
    got = features(tool)
    assert {"name:post", "name:message", "param:channel", "text:post", "pair:post_message", "type:string"} <= got
    assert "hint:readOnly=false" in got and "params:1" in got
    assert features(with_server) == features(plain)  # the server's name is not the tool's text


def test_the_model_reads_roles_a_reader_would():
    model = load_role_model()
    fetcher = _text("fetch_webpage", "Fetch a web page from any URL and return its text.", ("url", "The URL."))
    reader = _text("read_file", "Read the complete contents of a file from the local file system.", ("path", "Path."))
    poster = _text("post_message", "Post a message to a public channel.", ("channel", "Channel."), ("text", "Text."))
    assert "untrusted" in model.roles(fetcher).held()
    assert "private" in model.roles(reader).held()
    assert "sink" in model.roles(poster).held()


# --- the flow search -------------------------------------------------------------------------------


SERVERS = {"a::fetch": "a", "a::read_file": "a", "a::send_email": "a", "a::add": "a"}
ROLES_OF = {"a::fetch": FETCH, "a::read_file": READ, "a::send_email": SEND, "a::add": PLAIN}
EDGES = [("a::read_file", "a::fetch"), ("a::send_email", "a::read_file")]  # (consumer, producer)


def test_fetcher_reader_and_sender_joined_by_edges_are_one_high_finding_on_the_sink():
    found = flow_findings(toxic_flows(SERVERS, ROLES_OF, EDGES))
    assert list(found) == ["a::send_email"]
    (finding,) = found["a::send_email"]
    assert finding.kind == FindingKind.TOXIC_FLOW and finding.severity == Severity.HIGH
    assert [(p.role, p.tool) for p in finding.flow] == [
        ("untrusted", "a::fetch"), ("private", "a::read_file"), ("sink", "a::send_email")
    ]  # fmt: skip
    assert finding.path == ("a::fetch", "a::read_file", "a::send_email")
    assert finding.where == "toolset server a" and "joined by 2 edges" in finding.evidence
    assert finding.score == round(0.95 * 0.9 * 0.85, 4)
    short = finding.short()
    assert short["flow"][2] == {"role": "sink", "tool": "a::send_email", "probability": 0.85} and short["path"]


def test_without_a_sink_there_is_no_flow():
    servers = {k: v for k, v in SERVERS.items() if k != "a::send_email"}
    assert toxic_flows(servers, ROLES_OF, EDGES) == []


def test_without_edges_the_flow_is_medium():
    (finding,) = flow_findings(toxic_flows(SERVERS, ROLES_OF, []))["a::send_email"]
    assert finding.severity == Severity.MEDIUM and finding.path == () and "only present together" in finding.evidence


def test_one_finding_per_toolset_however_many_triples():
    servers = {f"a::t{i}": "a" for i in range(30)}
    roles = {f"a::t{i}": (FETCH, READ, SEND)[i % 3] for i in range(30)}
    found = flow_findings(toxic_flows(servers, roles, []))
    assert sum(len(v) for v in found.values()) == 1


def test_a_flow_across_servers_is_the_stores_finding():
    servers = {"web::fetch": "web", "disk::read_file": "disk", "mail::send_email": "mail"}
    roles = {"web::fetch": FETCH, "disk::read_file": READ, "mail::send_email": SEND}
    (flow,) = toxic_flows(servers, roles, [])
    assert flow.toolset == "store" and not flow.connected
    (flow,) = toxic_flows(servers, roles, [("mail::send_email", "disk::read_file"), ("disk::read_file", "web::fetch")])
    assert flow.connected and flow.path == ("web::fetch", "disk::read_file", "mail::send_email")


def test_a_connected_example_beats_a_stronger_co_present_one():
    servers = {**SERVERS, "a::shout": "a"}
    roles = {**ROLES_OF, "a::shout": Roles(untrusted=0.05, private=0.05, sink=0.99)}  # stronger, but unjoined
    (flow,) = toxic_flows(servers, roles, EDGES)
    assert flow.connected and flow.parts[2].tool == "a::send_email"


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.sampled_from([FETCH, READ, SEND, PLAIN])), min_size=1, max_size=12),
    st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=10),
    st.lists(names, min_size=15, max_size=15, unique=True),
)
def test_renaming_tools_and_servers_keeps_the_findings(tools, edge_picks, new_names):
    ids = [f"s{server}::t{i}" for i, (server, _) in enumerate(tools)]
    servers = {tool_id: tool_id.partition("::")[0] for tool_id in ids}
    roles = {tool_id: r for tool_id, (_, r) in zip(ids, tools, strict=True)}
    edges = [(ids[a], ids[b]) for a, b in edge_picks if a < len(ids) and b < len(ids)]
    server_names = {f"s{k}": new_names[12 + k] for k in range(3)}
    rename = {i: f"{server_names[servers[i]]}::{new_names[n]}" for n, i in enumerate(ids)}

    def seen(flows, toolset_name):
        return sorted((toolset_name(f.toolset), f.connected, round(f.strength, 6)) for f in flows)

    before = seen(toxic_flows(servers, roles, edges), lambda t: t.replace("server ", "").replace("store", "*"))
    after = toxic_flows(
        {rename[i]: server_names[s] for i, s in servers.items()},
        {rename[i]: r for i, r in roles.items()},
        [(rename[a], rename[b]) for a, b in edges],
    )
    back = {v: k for k, v in server_names.items()}
    assert seen(after, lambda t: back.get(t.replace("server ", ""), "*")) == before


def test_a_long_chain_of_edges_is_no_more_than_co_presence():
    chain = [f"a::hop{i}" for i in range(6)]
    servers = {**SERVERS, **{c: "a" for c in chain}}
    roles = {**ROLES_OF, **{c: PLAIN for c in chain}}
    hops = ["a::fetch", *chain, "a::read_file"]  # seven edges from the fetcher to the reader
    edges = [(hops[i + 1], hops[i]) for i in range(len(hops) - 1)] + [("a::send_email", "a::read_file")]
    (flow,) = toxic_flows(servers, roles, edges)
    assert not flow.connected


def test_one_tool_playing_all_three_roles_is_high_without_edges():
    shell = Roles(untrusted=0.9, private=0.9, sink=0.9)
    (finding,) = flow_findings(toxic_flows({"a::run": "a", "a::add": "a"}, {"a::run": shell, "a::add": PLAIN}, []))[
        "a::run"
    ]
    assert finding.severity == Severity.HIGH and "one tool plays all three roles" in finding.evidence
