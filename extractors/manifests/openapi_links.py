"""OpenAPI 3 ``links``: dependencies an API description declares itself.

A link on an operation's response says which later operation can be called with a value the response
returned (``GetUserByUserId`` with ``userId = $response.body#/id``). That is a declared dependency of the
*linked* operation on the one whose response carries the link: ``parameterDirectlyDependsOn`` for each
parameter the link fills, ``toolDirectlyDependsOn`` for a link that fills only the request body. Its reason
names the link, the response and the runtime expression, so a reader sees where the edge came from.

A link names its target by ``operationId`` or by ``operationRef`` (a local JSON pointer to the operation);
links into other documents, to operations nobody defines, or to parameters the target does not have are left
out with a notice, never the tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolkg.extractors.manifests.laxities import Notes, Refs, shown
from toolkg.models import DeclaredDependency, Tool

_LOCATIONS = ("path.", "query.", "header.", "cookie.")
MAX_LINKS = 10_000  # a description's links are read up to this many (each costs a lookup, no recursion)


def referenced_operation(ref: str) -> tuple[str, str] | None:
    """(METHOD, route) of a local ``operationRef`` such as ``#/paths/~1users~1{userId}/get``."""
    if not ref.startswith("#/paths/"):
        return None
    route, _, method = ref[len("#/paths/") :].rpartition("/")
    if not route or not method:
        return None
    return method.upper(), route.replace("~1", "/").replace("~0", "~")


def declared_links(
    operations: Sequence[tuple[Tool, Mapping[str, Any]]], refs: Refs, source: str = ""
) -> tuple[list[Tool], list[tuple[str, str]]]:
    """The tools, each with the dependencies the response links of the description declare on it, and (tool id,
    note) for each link left out. ``operations``: each tool the parser read with its operation (``$ref``s
    followed), in the parser's order: the links are read from what it walked, not from a walk of their own.
    ``source``: the description's file name, which each reason names with the link's JSON pointer."""
    tools = [tool for tool, _ in operations]
    by_route = {tool.route: tool for tool in tools if tool.route}
    by_key: dict[str, Tool] = {}
    for tool, operation in operations:
        if isinstance(operation.get("operationId"), str):
            by_key.setdefault(operation["operationId"], tool)
    added: dict[str, list[DeclaredDependency]] = {}
    notes: list[tuple[str, str]] = []
    seen = 0
    for producer, operation in operations:
        responses = operation.get("responses")
        for code, response in responses.items() if isinstance(responses, Mapping) else ():
            response = refs.follow(response, "response", Notes(), "")
            links = response.get("links") if isinstance(response, Mapping) else None
            for name, link in links.items() if isinstance(links, Mapping) else ():
                seen += 1
                if seen > MAX_LINKS:
                    return _with(tools, added), [*notes, (producer.id, f"links past {MAX_LINKS}: not read")]
                link = refs.follow(link, f"link {shown(name)}", Notes(), "")
                where = f"{source}{_pointer(producer.route, str(code), str(name))}"
                found = _dependencies(link, str(name), str(code), producer, by_key, by_route, where)
                if isinstance(found, str):
                    notes.append((producer.id, found))
                else:
                    consumer, deps = found
                    added.setdefault(consumer.name, []).extend(deps)
    return _with(tools, added), notes


def _dependencies(
    link: Any,
    name: str,
    code: str,
    producer: Tool,
    by_key: Mapping[str, Tool],
    by_route: Mapping[str, Tool],
    at: str = "",
) -> tuple[Tool, list[DeclaredDependency]] | str:
    """The consumer a link names and the dependencies it declares, or why it is left out."""
    where = f"response {code!r} link {shown(name)}"
    if not isinstance(link, Mapping):
        return f"{where} is no object: ignored"
    consumer: Tool | None = None
    if isinstance(link.get("operationId"), str):
        consumer = by_key.get(link["operationId"])
    elif isinstance(link.get("operationRef"), str) and (target := referenced_operation(link["operationRef"])):
        consumer = by_route.get(f"{target[0]} {target[1]}")
    if consumer is None or consumer.id == producer.id:
        return f"{where} names no other operation of this description: ignored"
    reason = f"OpenAPI link {name!r} on the {code} response of {producer.name}"
    description = link.get("description")
    if isinstance(description, str) and description.strip():
        reason += f": {description.strip()}"
    own = {p.name for p in consumer.parameters}
    parameters = link.get("parameters")
    deps = []
    for key, expression in parameters.items() if isinstance(parameters, Mapping) else ():
        parameter = str(key)
        for prefix in _LOCATIONS:
            parameter = parameter.removeprefix(prefix)
        if parameter not in own:
            continue
        deps.append(
            DeclaredDependency(
                target=producer.name,
                kind="parameterDirectlyDependsOn",
                parameter=parameter,
                reason=f"{reason} ({parameter} = {str(expression)[:200]}) [{at}]",
            )
        )
    if not deps and "requestBody" in link:
        deps.append(DeclaredDependency(target=producer.name, kind="toolDirectlyDependsOn", reason=f"{reason} [{at}]"))
    if not deps:
        return f"{where} fills no parameter {consumer.name} has: ignored"
    return consumer, deps


def json_pointer(*parts: object) -> str:
    """``#/a/b``: a JSON pointer (RFC 6901: ``~`` and ``/`` in a part escaped) to the parts, in document order."""
    return "#/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _pointer(route: str | None, code: str, name: str) -> str:
    """The JSON pointer of a response link, from the operation's route."""
    method, _, path = (route or "").partition(" ")
    return json_pointer("paths", path, method.lower(), "responses", code, "links", name)


def with_dependencies(tool: Tool, added: Iterable[DeclaredDependency]) -> Tool:
    """``tool`` with the ``added`` dependencies it does not declare yet (each once, in order)."""
    extra = [d for d in dict.fromkeys(added) if d not in tool.depends_on]
    return tool.model_copy(update={"depends_on": (*tool.depends_on, *extra)}) if extra else tool


def _with(tools: list[Tool], added: Mapping[str, list[DeclaredDependency]]) -> list[Tool]:
    return [with_dependencies(tool, added.get(tool.name, ())) for tool in tools]
