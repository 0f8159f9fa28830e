"""The house rules, checked on every import statement (module top and function bodies alike).

Each stage is one package that imports only the core and the stages before it; the store imports no
stage; no two modules import each other, directly or round a loop. A function-level import counts:
hiding a loop inside a function keeps Python happy, not the reader.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.support.layout import import_cycles, parsed
from tests.support.layout import module_imports as _imports
from tests.support.layout import modules as _modules  # a name the checker test swaps for a fake tree

# Packages of the core: any package may import them, and they import no stage.
CORE = ("toolkg", "toolkg.text", "toolkg.llm", "toolkg.embeddings", "toolkg.ontology", "toolkg.prompts")
# Stages in pipeline order: a stage may import the core and the stages before it, never one after it.
STAGES = (
    "toolkg.extractors",
    "toolkg.canonicalize",
    "toolkg.store",
    "toolkg.retrieval",
    "toolkg.live",
    "toolkg.flows",
    "toolkg.toolsearch",
    "toolkg.serve",
    "toolkg.cli",
)
ISOLATED = {"toolkg.store"}  # imports the core only, whatever comes before it
# The pipeline's core: build (flows/pipeline.py) and incremental sync (flows/sync/) run the same steps and
# stages without Prefect; only the wrappers (flows/build.py, flows/sync/flow.py, flows/scale.py) import it.
PIPELINE_CORE = ("toolkg.flows.pipeline", "toolkg.flows.sync.catalog", "toolkg.flows.sync.servers")
PREFECT = ("prefect", "prefect_dask", "dask", "distributed")


def _package_of(module: str, modules: dict[str, Path]) -> str:
    """The stage or core package a module belongs to (the longest listed prefix)."""
    for package in sorted((*CORE, *STAGES), key=len, reverse=True):
        if module == package or module.startswith(package + "."):
            if package == "toolkg" and modules[module].name != "__init__.py" and "." in module[7:]:
                continue
            return package
    raise AssertionError(f"{module} belongs to no package the layering knows: add it to CORE or STAGES")


def _violations() -> list[str]:
    modules = _modules()
    out = []
    for module, targets in sorted(_imports(modules).items()):
        mine = _package_of(module, modules)
        for target in sorted(targets):
            theirs = _package_of(target, modules)
            if theirs in CORE or theirs == mine:
                continue
            if mine in CORE:
                out.append(f"{module} (core) imports the stage module {target}")
            elif mine in ISOLATED:
                out.append(f"{module} ({mine} imports no stage) imports {target}")
            elif STAGES.index(theirs) > STAGES.index(mine):
                out.append(f"{module} ({mine}) imports the later stage module {target}")
    return out


def _cycles() -> list[list[str]]:
    return import_cycles(_imports(_modules()))


def test_every_module_belongs_to_a_layer():
    modules = _modules()
    assert "toolkg.store.oxigraph_store" in modules and "toolkg.cli" in modules
    for module in modules:
        _package_of(module, modules)


def test_no_stage_imports_a_later_stage_and_the_store_imports_none():
    assert _violations() == []


def test_no_import_loops_between_modules():
    assert _cycles() == []


def test_the_checker_sees_violations(tmp_path):
    """The rules are not vacuous: a store module importing a stage, and two modules importing each
    other inside functions, are both caught."""
    modules = _modules()
    fake_store = tmp_path / "store_mod.py"
    fake_store.write_text("def f():\n    from toolkg.extractors.manifests.reading import discover\n")
    loop_a, loop_b = tmp_path / "a.py", tmp_path / "b.py"
    loop_a.write_text("def f():\n    from toolkg.store.loop_b import g\n")
    loop_b.write_text("from toolkg.store.loop_a import f\n")
    extra = {"toolkg.store.store_mod": fake_store, "toolkg.store.loop_a": loop_a, "toolkg.store.loop_b": loop_b}
    globals_ = globals()
    original = globals_["_modules"]
    globals_["_modules"] = lambda: modules | extra
    try:
        assert any(v.startswith("toolkg.store.store_mod") for v in _violations())
        assert ["toolkg.store.loop_a", "toolkg.store.loop_b"] in _cycles()
    finally:
        globals_["_modules"] = original


def _third_party(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the top-level names of everything outside toolkg it imports anywhere in its body."""
    out: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Import):
                out[name] |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                out[name].add(node.module.partition(".")[0])
    return out


def _reached(start: tuple[str, ...], modules: dict[str, Path]) -> set[str]:
    """Every toolkg module ``start`` imports, directly or through others (and the packages on the way,
    whose ``__init__`` Python runs first)."""
    edges = _imports(modules)
    seen: set[str] = set()
    todo = list(start)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in modules]
        todo += edges.get(module, ())
    return seen


def _prefect_in_core(modules: dict[str, Path]) -> list[str]:
    external = _third_party(modules)
    return sorted(f"{m} imports {x}" for m in _reached(PIPELINE_CORE, modules) for x in external[m] & set(PREFECT))


def test_the_pipeline_core_imports_no_prefect():
    modules = _modules()
    assert set(PIPELINE_CORE) <= modules.keys()
    assert _prefect_in_core(modules) == []


def test_the_prefect_check_sees_a_core_module_that_imports_prefect(tmp_path):
    modules = _modules()
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text("def f():\n    from prefect import task\n")
    core = tmp_path / "core.py"
    core.write_text("from toolkg.flows.sneaky import f\n")
    fake = modules | {"toolkg.flows.pipeline": core, "toolkg.flows.sneaky": sneaky}
    assert _prefect_in_core(fake) == ["toolkg.flows.sneaky imports prefect"]
