"""Arazzo 1.0 workflow documents: the dependencies a workflow declares between the operations it calls.

An Arazzo document (https://spec.openapis.org/arazzo/v1.0.1) names the API descriptions it uses
(``sourceDescriptions``: a name, a ``url``, ``type: openapi``) and lists workflows of steps; each step calls one
operation (``operationId``, or ``operationPath`` as ``{$sourceDescriptions.<name>.url}#/paths/~1pets/get``),
passes it ``parameters`` and a ``requestBody``, and names ``outputs`` of what it got back. A later step that
passes ``$steps.<stepId>.outputs.<name>`` (alone or inside a string, ``Bearer {$steps.login.outputs.token}``)
uses a value the earlier step's operation returned: a declared dependency of the later operation on the
earlier one, ``parameterDirectlyDependsOn`` for the parameter it fills (a request body property that is a
parameter of the tool counts), ``toolDirectlyDependsOn`` for the rest of a request body.

A document is read as a manifest of its own, **in place of** the OpenAPI files it names: each local source (a
relative ``url`` inside the Arazzo file's folder; remote ones are never fetched) is read and parsed as
``openapi.py`` reads any description, and its tools gain the workflows' dependencies, each with its reason: the
workflow, the step, the expression, and where it is (the Arazzo file and the JSON pointer of the parameter or
body). Building an OpenAPI file and an Arazzo document that names it defines its server twice: the second is
refused as any duplicate server is. Steps that call workflows, operations no source defines, or operations of
two different sources are left out with a notice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from toolkg.errors import ManifestError
from toolkg.extractors.manifests.formats import ParsedServers
from toolkg.extractors.manifests.openapi import parse_openapi
from toolkg.extractors.manifests.openapi_links import json_pointer, referenced_operation, with_dependencies
from toolkg.extractors.manifests.reading import fingerprint_file, load_document, local_sources
from toolkg.limits import Limits
from toolkg.models import DeclaredDependency, Notice, Server, Tool

_STEP_OUTPUT = re.compile(r"\$steps\.([A-Za-z0-9_\-]+)\.outputs\.([A-Za-z0-9_.\-]+)")
_SOURCE_PREFIX = re.compile(r"^\$sourceDescriptions\.([A-Za-z0-9_\-]+)\.(.+)$")
_OPERATION_PATH = re.compile(r"^\{\$sourceDescriptions\.([A-Za-z0-9_\-]+)\.url\}#(/paths/.+)$")
MAX_STEPS = 10_000  # steps read in all (each costs a lookup and a walk of its parameters)


def parse_arazzo(path: str, document: Any, server: str | None, limits: Limits | None = None) -> ParsedServers:
    """The OpenAPI sources of an Arazzo document, each a server as ``parse_openapi`` reads it, with the
    dependencies its workflows declare."""
    limits = limits or Limits()
    version = str(document.get("arazzo", "")).strip() if isinstance(document, Mapping) else ""
    if not version.startswith("1."):
        raise ManifestError(path, f"unsupported Arazzo version {version[:20]!r} (1.0 is supported)")
    sources = local_sources(path, document)
    parsed: dict[str, ParsedServers] = {}
    for name, file in sources:
        info, data = fingerprint_file(file, limits)
        parsed[name] = parse_openapi(
            info.path, load_document(info.path, data, limits), server if len(sources) == 1 else None, limits
        )
    found: dict[tuple[str, str], list[DeclaredDependency]] = {}  # (source, consumer name) -> its dependencies
    notices: list[Notice] = []
    for dependency in _workflow_dependencies(path, document, parsed, notices):
        source, consumer, declared = dependency
        found.setdefault((source, consumer), []).append(declared)
    out = ParsedServers()
    for name, result in parsed.items():
        out.quarantined += result.quarantined
        out.notices += result.notices
        for s in result.servers:
            tools = tuple(with_dependencies(t, found.get((name, t.name), [])) for t in s.tools)
            out.servers.append(Server(**{**dict(s), "tools": tools}))
    out.notices += notices
    return out


def _operation_of(step: Mapping[str, Any], parsed: Mapping[str, ParsedServers]) -> tuple[str, Tool] | None:
    """(source name, tool) of the operation a step calls; None for a workflow step or an unknown operation."""
    operation_id, operation_path = step.get("operationId"), step.get("operationPath")
    if isinstance(operation_id, str):
        named = _SOURCE_PREFIX.match(operation_id)
        wanted = named.group(2) if named else operation_id
        for source, result in parsed.items():
            if named and source != named.group(1):
                continue
            for s in result.servers:
                for tool in s.tools:
                    if tool.name == wanted:
                        return source, tool
        return None
    if isinstance(operation_path, str) and (m := _OPERATION_PATH.match(operation_path)):
        target = referenced_operation("#" + m.group(2))
        if target is None or m.group(1) not in parsed:
            return None
        for s in parsed[m.group(1)].servers:
            for tool in s.tools:
                if tool.route == f"{target[0]} {target[1]}":
                    return m.group(1), tool
    return None


def _listed(value: Any) -> list:
    return value if isinstance(value, list) else []


def _expressions(value: Any, depth: int = 0) -> Iterator[tuple[str, str, str]]:
    """(step id, output name, the expression as written) of each ``$steps.<id>.outputs.<name>`` in a value."""
    if depth > 16:
        return
    if isinstance(value, str):
        for m in _STEP_OUTPUT.finditer(value):
            yield m.group(1), m.group(2), value[:200]
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _expressions(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _expressions(item, depth + 1)


def _workflow_dependencies(
    path: str, document: Mapping[str, Any], parsed: Mapping[str, ParsedServers], notices: list[Notice]
) -> Iterator[tuple[str, str, DeclaredDependency]]:
    """(source, consumer tool name, dependency) for each later step input an earlier step's output feeds."""
    file = Path(path).name
    workflows = document.get("workflows")
    read = 0
    for w, workflow in enumerate(workflows if isinstance(workflows, list) else ()):
        if not isinstance(workflow, Mapping):
            continue
        workflow_id = str(workflow.get("workflowId", w))
        steps = workflow.get("steps")
        calls: dict[str, tuple[str, Tool]] = {}  # step id -> the operation it called, in step order
        for s, step in enumerate(steps if isinstance(steps, list) else ()):
            read += 1
            if read > MAX_STEPS or not isinstance(step, Mapping):
                continue
            step_id = str(step.get("stepId", s))
            called = _operation_of(step, parsed)
            where = f"workflow {workflow_id!r} step {step_id!r}"
            if called is None:
                if "workflowId" not in step:
                    what = "calls no operation of its sources: ignored"
                    notices.append(Notice(source=path, item=where, what=what))
                continue
            source, consumer = called
            own = {p.name: p for p in consumer.parameters}
            inputs: list[tuple[str | None, Any, str]] = []  # (parameter or None for the body, value, pointer)
            for i, parameter in enumerate(_listed(step.get("parameters"))):
                if isinstance(parameter, Mapping):
                    name = parameter.get("name")
                    inputs.append(
                        (
                            name if isinstance(name, str) else None,
                            parameter.get("value"),
                            json_pointer("workflows", w, "steps", s, "parameters", i),
                        )
                    )
            body = step.get("requestBody")
            if isinstance(body, Mapping):
                payload = body.get("payload")
                if isinstance(payload, Mapping):
                    for key, value in payload.items():
                        inputs.append(
                            (str(key), value, json_pointer("workflows", w, "steps", s, "requestBody", "payload", key))
                        )
                elif payload is not None:
                    inputs.append((None, payload, json_pointer("workflows", w, "steps", s, "requestBody", "payload")))
                for r, replacement in enumerate(_listed(body.get("replacements"))):
                    if isinstance(replacement, Mapping):
                        target = str(replacement.get("target", "")).lstrip("/").split("/")[0] or None
                        inputs.append(
                            (
                                target,
                                replacement.get("value"),
                                json_pointer("workflows", w, "steps", s, "requestBody", "replacements", r),
                            )
                        )
            for parameter, value, pointer in inputs:
                for earlier, output, expression in _expressions(value):
                    if earlier not in calls:
                        continue  # a later step, or one that called no operation
                    producer_source, producer = calls[earlier]
                    if producer_source != source or producer.name == consumer.name:
                        notices.append(
                            Notice(
                                source=path,
                                item=consumer.id,
                                what=f"{where}: {expression} comes from another source or the same operation: ignored",
                            )
                        )
                        continue
                    reason = (
                        f"Arazzo workflow {workflow_id!r}: step {step_id!r} passes {expression} "
                        f"(output {output!r} of step {earlier!r}) [{file}{pointer}]"
                    )
                    if parameter in own:
                        yield (
                            source,
                            consumer.name,
                            DeclaredDependency(
                                target=producer.name,
                                kind="parameterDirectlyDependsOn",
                                parameter=parameter,
                                reason=reason,
                            ),
                        )
                    else:
                        yield (
                            source,
                            consumer.name,
                            DeclaredDependency(target=producer.name, kind="toolDirectlyDependsOn", reason=reason),
                        )
            calls[step_id] = called
