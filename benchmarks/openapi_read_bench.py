"""OpenAPI descriptions as toolkg reads them: how many operations of each file become tools.

For every OpenAPI 3 file under the paths given, the operations in the file (each method of each path item)
against the tools read, then the quarantine reasons and the notices over all files, grouped with names,
numbers and quoted values folded to '…' so that the same laxity in a thousand places is one line. Files
that are not OpenAPI 3, or that YAML or JSON cannot parse, are listed with why.

    python -m benchmarks.openapi_read_bench tests/cases/real/openapi FOLDER_OF_PUBLIC_DESCRIPTIONS

Files short of operations are listed (`-v`: every file). On 2026-11-27, over the 118 public OpenAPI 3
descriptions of the dlt-hub/openapi-specs collection that parse (files under 4 MiB) and GitHub's
(tests/cases/real/openapi): 11,226 of 11,226 operations read; 10,592 before extractors/manifests/laxities.py
(DigitalOcean 30 of 290: pointers with list indices; Brex 26 of 54: percent-encoded pointers; Chargify 6 of
232: $refs into other files; OSF 152 of 167: duplicate operationIds). apideck-libraries/openapi-specs: 434 of
434. Nine files of the collection are not parsed at all: YAML that PyYAML refuses (one of them is RAML).
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from pathlib import Path

from toolkg.extractors.manifests.ingest import ingest_manifest
from toolkg.extractors.manifests.openapi import HTTP_METHODS
from toolkg.extractors.manifests.reading import MANIFEST_SUFFIXES, fingerprint_file, load_document
from toolkg.limits import Limits

_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")  # names, values and numbers: folded so alike lines group


def _files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        candidates = sorted(path.rglob("*")) if path.is_dir() else [path]
        found += [p for p in candidates if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="OpenAPI files or folders of them")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every file, not only those short")
    args = parser.parse_args()
    limits = Limits(max_file_mb=64)
    reasons: Counter[str] = Counter()
    notices: Counter[str] = Counter()
    operations = read = files = 0
    for path in _files(args.paths):
        try:
            file, data = fingerprint_file(path, limits)
            document = load_document(str(path), data, limits)
        except Exception as exc:  # any reading failure is a line of this report, not its end
            print(f"{path.name}\tnot parsed: {str(exc)[:120]}")
            continue
        if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith("3"):
            if args.verbose:
                print(f"{path.name}\tnot OpenAPI 3")
            continue
        paths = document.get("paths")
        items = paths.values() if isinstance(paths, dict) else ()
        in_file = sum(1 for item in items if isinstance(item, dict) for m in HTTP_METHODS if m in item)
        started = time.perf_counter()
        result = ingest_manifest(file, data, format="openapi", limits=limits)
        tools = sum(len(s.tools) for s in result.manifest.servers) if result.manifest else 0
        files, operations, read = files + 1, operations + in_file, read + tools
        reasons.update(_VARYING.sub("…", q.reason)[:110] for q in result.quarantined)
        notices.update(_VARYING.sub("…", n.what)[:110] for n in result.notices)
        if args.verbose or tools < in_file:
            seconds = time.perf_counter() - started
            print(f"{path.name}\t{tools}/{in_file} operations read\t{len(result.notices)} notices\t{seconds:.1f}s")
    print(f"operations read: {read:,} of {operations:,} in {files} OpenAPI 3 files")
    for title, counts in (("quarantine reasons", reasons), ("notices", notices)):
        print(f"{title}:")
        for text, count in counts.most_common(40):
            print(f"  {count:6,} {text}")


if __name__ == "__main__":
    main()
