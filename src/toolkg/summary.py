"""The run summary: what a build did, printed, saved as JSON and as a Prefect artifact."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError, computed_field

from toolkg.atomic import atomic_output, write_atomically
from toolkg.display import one_line
from toolkg.errors import NotFoundError, StoreError
from toolkg.models import Notice, QuarantinedItem, StageInfo, ToolChange
from toolkg.usage import Confirmation, ExtractionUsage, OrEmpty

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_QUARANTINED = 3

Info = TypeVar("Info", bound=StageInfo)

TOOLS_SHOWN = 20  # tool changes a printed summary names (summary.json names them all)


def _extraction_line(usage: ExtractionUsage) -> str:
    """'llm (model, prompt): 12 tools extracted, 500 cache hits, 14 HTTP requests (...)'."""
    what = usage.extractor
    if usage.model:
        what += f" ({usage.model}, prompt {usage.prompt or '?'})"
    if usage.http_requests is None:  # the offline extractor writes ontology predicates only
        return f"{what}: {usage.tools} tools; predicates: ontology terms by construction, none to map"
    line = (
        f"{what}: {usage.tools} tools extracted, {usage.cache_hits} cache hits, {usage.failed} failed; "
        f"{usage.http_requests} HTTP requests ({usage.retries} retries, {usage.reasks} re-asks)"
    )
    if usage.structured_output:  # empty when every tool came from the cache: nothing was probed
        probes = usage.probes or 0
        line += f"; structured output {usage.structured_output} ({probes} probe request{'s' * (probes != 1)})"
    line += f"; tokens {usage.prompt_tokens} in / {usage.completion_tokens} out"
    if usage.cost is not None:
        line += f"; cost {usage.cost:.4f}"
    mapped, unmapped = usage.predicates_mapped or {}, usage.predicates_unmapped or {}
    line += f"; predicates mapped onto the ontology {sum(mapped.values())}, unmapped {sum(unmapped.values())}"
    if unmapped:
        line += " (" + ", ".join(one_line(p, 60) for p in sorted(unmapped)[:5]) + ")"
    return line


# JSON leaves these raw inside strings, but Python's str.splitlines() and some editors break lines at them.
_LINE_BREAKING = {c: f"\\u{c:04x}" for c in (*range(0x7F, 0xA0), 0x2028, 0x2029)}


def jsonl_line(value: object) -> str:
    """One JSON Lines record: readable UTF-8, with every character that could split a line escaped.

    >>> jsonl_line({"item": "a\u2028b\x85c"})
    '{"item": "a\\\\u2028b\\\\u0085c"}\\n'
    """
    return json.dumps(value, ensure_ascii=False).translate(_LINE_BREAKING) + "\n"


def _live_lines(servers: list[dict], bullet: str) -> list[str]:
    """'live MCP servers: 6 listed (1 new, 1 changed, 4 unchanged), 1 failed' and what changed per server."""
    if not servers:
        return []
    count = Counter(s["status"] for s in servers)
    listed = sum(count[k] for k in ("new", "changed", "unchanged"))
    states = ", ".join(f"{count[k]} {k}" for k in ("new", "changed", "unchanged") if count[k])
    line = f"live MCP servers: {listed} listed" + (f" ({states})" if states else "")
    line += "".join(f", {count[k]} {k}" for k in ("failed", "not listable") if count[k])
    lines = [line]
    for s in servers:
        name = one_line(s["server"], 80)
        if s["status"] in ("new", "changed"):
            what = [f"{s['tools']} tools"] if s["status"] == "new" else []
            for label in ("added", "removed", "changed"):
                if s[label]:
                    shown = ", ".join(one_line(t, 60) for t in s[label][:8])
                    what.append(f"{label} {len(s[label])} ({shown}{', ...' if len(s[label]) > 8 else ''})")
            lines.append(f"{bullet}{name} [{s['status']}, {s['reached']}, {s['seconds']:.2f}s]: {'; '.join(what)}")
    return lines


def sync_line(op: dict) -> str:
    """'update-server shop: 1 tool(s) changed, ...' for one sync operation (``flows.sync.SyncResult``, as a dict)."""
    line = (
        f"{op['operation']} {one_line(op['target'], 120)}: {len(op['tools_changed'])} tool(s) changed, "
        f"{op['neighbourhood']} consumer(s) re-inferred, "
        f"{op['triples_deleted']} triples deleted / {op['triples_inserted']} inserted, dependency edges "
        f"+{op['edges_added']}/-{op['edges_removed']}, links +{op['links_added']}/-{op['links_removed']} "
        f"in {op['seconds']:.2f}s"
    )
    return line


def tool_change_lines(changes: list[ToolChange], bullet: str, more: str) -> list[str]:
    """'tools: 1 added, 2 changed, 0 removed' and one line per tool, the first ``TOOLS_SHOWN``; ``more``
    says where the rest are."""
    if not changes:
        return []
    count = Counter(c.change for c in changes)
    lines = [f"tools: {count['added']} added, {count['changed']} changed, {count['removed']} removed"]
    lines += [f"{bullet}{change}" for change in changes[:TOOLS_SHOWN]]
    if len(changes) > TOOLS_SHOWN:
        lines.append(f"{bullet}... {len(changes) - TOOLS_SHOWN} more in {more}")
    return lines


def kept_line(kept: list[str]) -> str:
    """The servers a run kept although the paths it read no longer define them, and the flag that removes them."""
    shown = ", ".join(one_line(s, 80) for s in kept[:10]) + (f" (+{len(kept) - 10} more)" if len(kept) > 10 else "")
    return (
        f"kept {len(kept)} server(s) no manifest under the paths defines: {shown}; "
        "rerun with --prune to remove them from the store"
    )


def skipped_live_line(entry: dict) -> str:
    """'skipped live configuration vendor/x/settings.json (3 servers): found in ., not named: name the file...'
    for a ``toolkg.live.SkippedConfiguration`` (as a dict)."""
    count = entry["servers"]
    return (
        f"skipped live configuration {one_line(entry['configuration'], 200)} "
        f"({count} server{'s' * (count != 1)}): {one_line(entry['reason'], 300)}"
    )


class BuildSummary(BaseModel):
    run_id: str
    store: str
    started: str
    ended: str = ""
    manifests_seen: int = 0
    new: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    reprocessed: list[str] = Field(default_factory=list)  # unchanged, but a missing dependency target appeared
    rebuilt: list[str] = Field(default_factory=list)  # read again with bytes unchanged (--force, other options)
    # Every tool added, changed (with the fields that changed) or removed, sorted by tool id.
    tools: list[ToolChange] = Field(default_factory=list)
    # Servers the paths no longer define that stay in the store (no --prune): removed only when asked.
    kept: list[str] = Field(default_factory=list)
    only: list[str] = Field(default_factory=list)  # a sync's servers (build --only): the run read no whole manifest
    operations: list[dict] = Field(default_factory=list)  # what the sync did to each (flows.sync.SyncResult)
    loaded_servers: int = 0
    loaded_tools: int = 0
    loaded_triples: int = 0
    totals: dict[str, int] = Field(default_factory=dict)  # whole store after the run
    quarantined: list[QuarantinedItem] = Field(default_factory=list)
    notices: list[Notice] = Field(default_factory=list)  # inputs kept but trimmed to fit a limit or read leniently
    stage_seconds: dict[str, float] = Field(default_factory=dict)  # seconds per stage
    stage_peak_mb: dict[str, float] = Field(default_factory=dict)  # peak RSS over all processes, per stage
    pipeline_seconds: float = 0.0  # wall time of the flow body (Prefect start-up excluded)
    extraction: OrEmpty[ExtractionUsage] = None  # extractor, model, prompt, calls, tokens, cost; {} when none ran
    # Each catalog-wide stage's figures and printed lines, by stage name (StageInfo.figures, .lines).
    stages: dict[str, dict[str, Any]] = Field(default_factory=dict)
    stage_lines: dict[str, list[str]] = Field(default_factory=dict)
    workers: list[str] = Field(default_factory=list)  # Dask worker processes that ran extraction (--dask)
    snapshot: str = ""  # the read-only snapshot published for the endpoint (snapshots/<name>)
    live: list[dict] = Field(default_factory=list)  # live MCP servers listed (toolkg.live.ServerReport)
    # configurations found in folders, not named, so not listed (toolkg.live.SkippedConfiguration)
    live_skipped: list[dict] = Field(default_factory=list)
    orphans_dropped: int = 0  # graphs an interrupted build wrote without their manifest record, dropped
    stopped: str = ""  # why the run stopped before its end (one line; a full disk, ...): nothing was published

    # The figures readers ask for most, named as the summary's JSON has always named them.
    @computed_field  # type: ignore[prop-decorator]
    @property
    def inferred(self) -> dict[str, int]:
        """Inferred dependency edges by kind, and total."""
        return self._figure("inferred") or {}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def confirmation(self) -> OrEmpty[Confirmation]:
        """The LLM's review of the inferred edges, when one ran."""
        review = self._figure("confirmation")
        return Confirmation.model_validate(review) if review else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def links(self) -> dict[str, int]:
        """Structural links by type, total, and texts embedded this run."""
        return self._figure("links") or {}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def canonical(self) -> dict[str, Any]:
        """Entities, fuzzy clusters, the largest clusters."""
        return self._figure("canonical") or {}

    def _figure(self, key: str) -> Any:
        """The figure ``key`` of whichever stage reports it (None when none ran): the summary's top-level
        fields name figures, not stages, so renaming or moving a stage leaves them as they read."""
        found = [figures[key] for figures in self.stages.values() if key in figures]
        assert len(found) <= 1, f"two stages report the figure {key!r}"
        return found[0] if found else None

    def result(self, kind: type[Info]) -> Info | None:
        """A catalog-wide stage's typed result read back from its figures (``stages[kind.stage]``), e.g.
        ``summary.result(AuditInfo).findings.by_kind``; None when the stage did not run."""
        figures = self.stages.get(kind.stage)
        return None if figures is None else kind.model_validate(figures)

    @property
    def exit_code(self) -> int:
        return EXIT_QUARANTINED if self.quarantined else EXIT_OK

    def add_time(self, stage: str, seconds: float) -> None:
        self.stage_seconds[stage] = round(self.stage_seconds.get(stage, 0.0) + seconds, 4)

    def fold(self, info: StageInfo) -> None:
        """Add what one step did: its seconds, quarantine entries, notices and summary fields. The one way a
        stage's result enters the summary (the pipeline sets only the run's own fields: times, peaks, why it
        stopped, the extractor's usage)."""
        for stage, seconds in info.seconds.items():
            self.add_time(stage, seconds)
        self.quarantined += info.quarantined
        self.notices += info.notices
        if info.stage:
            self.stages[info.stage] = info.figures()
            self.stage_lines[info.stage] = info.lines()
        for name, value in info.summary_fields().items():
            current = getattr(self, name)
            if isinstance(current, list) and value and isinstance(value[0], dict):
                current.extend(value)  # reports (a live server's, as a dict): each comes once, kept as given
            elif isinstance(current, list):  # e.g. the Dask workers that ran extraction: each once
                seen = set(current)  # (a set: a catalog's tool changes are thousands)
                current.extend(v for v in value if v not in seen)
            elif isinstance(current, dict):
                current.update(value)
            elif isinstance(current, int | float) and not isinstance(current, bool):
                setattr(self, name, current + value)
            else:
                setattr(self, name, value)

    def _lines(self, bullet: str) -> list[str]:
        def names(paths: list[str]) -> str:
            shown = ", ".join(one_line(Path(p).name, 120) for p in paths[:5])
            return shown + (f" (+{len(paths) - 5} more)" if len(paths) > 5 else "")

        totals = self.totals
        lines = [
            f"store: {one_line(self.store)}",
            "graph: "
            + ", ".join(
                f"{totals.get(k, 0)} {k}"
                for k in ("servers", "tools", "parameters", "outputs", "dependencies", "quads")
            ),
        ]
        if self.only:  # a sync (--only) reads no manifest as a whole: it says what it did to each server
            lines.append(f"synced (--only): {', '.join(one_line(s, 80) for s in self.only)}")
        else:
            rebuilt = f", {len(self.rebuilt)} rebuilt (bytes unchanged)" if self.rebuilt else ""
            lines += [
                f"manifests: {self.manifests_seen} seen, {len(self.new)} new, {len(self.changed)} changed{rebuilt}, "
                f"{len(self.skipped)} unchanged (skipped), {len(self.removed)} removed",
                f"this run loaded: {self.loaded_servers} servers, {self.loaded_tools} tools, "
                f"{self.loaded_triples} triples",
            ]
        lines += [sync_line(op) for op in self.operations]
        lines += _live_lines(self.live, bullet)
        lines += [skipped_live_line(entry) for entry in self.live_skipped]
        for label, paths in (
            ("new", self.new),
            ("changed", self.changed),
            ("removed", self.removed),
            ("reprocessed", self.reprocessed),
            ("rebuilt, bytes unchanged", self.rebuilt),
        ):
            if paths:
                lines.append(f"{bullet}{label}: {names(paths)}")
        lines += tool_change_lines(self.tools, bullet, f"runs/{self.run_id}/summary.json")
        if self.kept:
            lines.append(kept_line(self.kept))
        if self.extraction is not None:
            lines.append("extraction: " + _extraction_line(self.extraction))
        for stage_lines in self.stage_lines.values():
            lines += stage_lines
        if self.workers:
            lines.append(f"extraction fanned out over {len(self.workers)} Dask worker process(es)")
        if self.snapshot:
            lines.append(f"snapshot for 'toolkg serve': snapshots/{self.snapshot}")
        if self.notices:  # one line each, as the quarantine: what was trimmed or read leniently, and where
            kept = "inputs kept but changed: trimmed to fit a limit, or read leniently"
            lines.append(f"notices: {len(self.notices)} ({kept})")
            lines += [f"{bullet}{one_line(str(notice), 300)}" for notice in self.notices[:50]]
            if len(self.notices) > 50:
                lines.append(f"{bullet}... {len(self.notices) - 50} more in runs/{self.run_id}/summary.json")
        if self.orphans_dropped:
            lines.append(
                f"repaired: dropped {self.orphans_dropped} graph(s) an interrupted build left without a manifest record"
            )
        timing = ", ".join(f"{stage} {seconds:.2f}s" for stage, seconds in self.stage_seconds.items()) or "none"
        lines.append(f"timings: {timing} (pipeline wall {self.pipeline_seconds:.2f}s)")
        if self.stage_peak_mb:
            stage, peak = max(self.stage_peak_mb.items(), key=lambda item: item[1])
            lines.append(f"memory: peak {peak:,.0f} MiB over the build's processes (during {stage})")
        if self.quarantined:
            lines.append(f"quarantined: {len(self.quarantined)} item(s)")
            for item in self.quarantined[:50]:
                lines.append(f"{bullet}{item}")
            if len(self.quarantined) > 50:
                lines.append(f"{bullet}... {len(self.quarantined) - 50} more in runs/{self.run_id}/quarantine.jsonl")
        else:
            lines.append("quarantined: none")
        if self.stopped:
            lines.append(f"stopped: {one_line(self.stopped, 300)} (its snapshot was not published)")
        return lines

    def __str__(self) -> str:
        return f"toolkg build {self.run_id}\n" + "\n".join("  " + line for line in self._lines("  - "))

    def to_markdown(self) -> str:
        return f"# toolkg build `{self.run_id}`\n\n" + "\n".join(
            line if line.startswith("- ") else f"- {line}" for line in self._lines("- ")
        )

    def save(self, runs_dir: Path) -> Path:
        """Write quarantine.jsonl (with the raw inputs) and then summary.json under runs/<run_id>/, each whole
        or not at all (a full disk leaves no half file: ``toolkg.atomic``)."""
        folder = runs_dir / self.run_id
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_output(folder / "quarantine.jsonl") as out:
            for item in self.quarantined:
                out.write(jsonl_line(item.model_dump()))
        write_atomically(folder / "summary.json", self.model_dump_json(indent=2))
        return folder

    @classmethod
    def load(cls, path: Path) -> BuildSummary:
        """A saved summary.json; one that is missing, unreadable, empty or corrupt is one line naming it."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"no run summary at {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"cannot read the run summary {path}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            return cls.model_validate_json(text)
        except ValidationError:
            what = "empty" if not text.strip() else "not a valid run summary"
            raise StoreError(
                f"run summary {path} is {what} (its build stopped while writing it?): rerun the build, "
                "or choose another run"
            ) from None
