"""`toolkg demo` (and so `make demo`) builds the shipped samples whole, in a checkout as in an installed wheel:
in the checkout the sample files are links into data/, which a folder read does not follow out of its folder."""

from __future__ import annotations

from toolkg.extractors.manifests.reading import discover_all
from toolkg.samples import sample_paths


def test_the_samples_are_named_files_a_build_reads_with_nothing_skipped():
    paths = sample_paths()
    assert paths and all(p.is_file() and not p.is_symlink() for p in paths)
    found = discover_all(paths)
    assert not found.skipped and len(found.files) == len(paths) == 3  # LiveMCPBench, ToolLinkOS core + regular
