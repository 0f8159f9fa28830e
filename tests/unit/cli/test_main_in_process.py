"""``toolkg.cli.main`` run twice in one process (the in-process ``cli`` fixture, an embedding program) behaves as
two processes would: what one call sets up for itself (the -v traceback handler, the environment, the progress
switch, the working folder) is gone before the next."""

from __future__ import annotations

import concurrent.futures
import logging
import os
import sys
import types
from collections.abc import Coroutine

from tests.support.cli_runner import run_in_process
from toolkg import progress


def test_a_verbose_call_leaves_the_toolkg_logger_as_it_found_it(tmp_path):
    log = logging.getLogger("toolkg")
    before = (list(log.handlers), log.level, log.propagate)
    first = run_in_process("query", "--store", str(tmp_path / "missing"), "-v", "SELECT * WHERE {")
    assert first.returncode != 0
    assert (list(log.handlers), log.level, log.propagate) == before
    # a second -v call gets its own handler on its own stderr, and takes it away again
    second = run_in_process("query", "--store", str(tmp_path / "missing"), "-v", "SELECT * WHERE {")
    assert second.stderr == first.stderr and (list(log.handlers), log.level, log.propagate) == before


def test_the_environment_folder_and_progress_switch_are_put_back(tmp_path, monkeypatch):
    # on, whatever an earlier test of this worker left it at (-q turns it off; the run must turn it back on)
    monkeypatch.setattr(progress._default, "enabled", True)
    environment, folder = dict(os.environ), os.getcwd()
    result = run_in_process("build", str(tmp_path / "none"), "-q", cwd=tmp_path, env={"TOOLKG_X_TEST": "1"})
    assert result.returncode == 2 and "no such file or directory" in result.stderr
    assert dict(os.environ) == environment and os.getcwd() == folder and progress._default.enabled


def test_usage_errors_help_and_version_give_the_exit_codes_a_process_would():
    assert run_in_process("--version").stdout.startswith("toolkg ")
    assert run_in_process("--version").returncode == 0
    bad = run_in_process("query", "--format", "nope", "ASK {}")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr and bad.stdout == ""
    assert run_in_process("query", "--help").returncode == 0


SENDERS = ("EventsWorker", "APILogWorker")
LOGGERS = ("instructor", *SENDERS)


def _levels() -> dict[str, int]:
    return {name: logging.getLogger(name).level for name in LOGGERS}


def _quiet_build(tmp_path, monkeypatch, drained: bool) -> dict[str, dict[str, int]]:
    """A ``build -q`` whose build and drain record the loggers' levels (the drain answering ``drained``), the
    three loggers set to levels of their own first; the levels inside the build, at the drain, and after."""
    import toolkg.cli.build as build_command

    seen: dict[str, dict[str, int]] = {}

    def record_levels(*_args: object) -> int:
        seen["build"] = {**_levels(), "prefect": int(os.environ["PREFECT_LOGGING_LEVEL"] == "CRITICAL")}
        return 0

    def drain(timeout: float = build_command.DRAIN_SECONDS) -> bool:
        seen["drain"] = _levels()
        return drained

    monkeypatch.setattr(build_command, "_run_build", record_levels)
    monkeypatch.setattr(build_command, "_drain_prefect_senders", drain)
    for name, level in zip(LOGGERS, (logging.INFO, logging.NOTSET, logging.WARNING), strict=True):
        monkeypatch.setattr(logging.getLogger(name), "level", level)
    (tmp_path / "tools.json").write_text('{"tools": [{"name": "echo", "description": "Echo the text."}]}')
    result = run_in_process("build", str(tmp_path / "tools.json"), "-q")
    assert result.returncode == 0, result.stderr
    return {**seen, "after": _levels()}


def test_a_quiet_build_puts_back_the_logger_levels_it_lowers(tmp_path, monkeypatch):
    """Without -v a build silences instructor's logger and Prefect's two senders' for itself only: the next call in
    the process (a -v build, an embedding program's own logging) finds them at the levels it left them. The senders
    are drained first, while their loggers are still lowered: they say "Still processing items" as they flush,
    which undrained they do at interpreter exit, after the levels are back (test_local_server checks a real
    build's stderr has none of it). The environment the build sets is put back by ``cmd_build`` too; the
    in-process runner restores it as well, so only the loggers are checked here."""
    lowered = {"instructor": logging.CRITICAL, "EventsWorker": logging.ERROR, "APILogWorker": logging.ERROR}
    seen = _quiet_build(tmp_path, monkeypatch, drained=True)
    assert seen["build"] == {**lowered, "prefect": 1}
    assert seen["drain"] == lowered
    assert seen["after"] == {
        "instructor": logging.INFO,
        "EventsWorker": logging.NOTSET,
        "APILogWorker": logging.WARNING,
    }


def test_senders_not_drained_in_time_stay_lowered(tmp_path, monkeypatch):
    """Past the drain's bound the senders are still sending: they will speak at exit, so their loggers stay
    lowered; instructor's is put back all the same."""
    seen = _quiet_build(tmp_path, monkeypatch, drained=False)
    assert seen["after"] == {"instructor": logging.INFO, "EventsWorker": logging.ERROR, "APILogWorker": logging.ERROR}


class _Sender:
    """A stand-in for Prefect's EventsWorker / APILogWorker: ``drain_all`` answers ``answer`` (or raises it)."""

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.timeouts: list[float | None] = []

    def drain_all(self, timeout: float | None = None, at_exit: bool = True) -> object:
        self.timeouts.append(timeout)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer() if callable(self.answer) else self.answer


def _with_senders(monkeypatch, events: _Sender, logs: _Sender) -> None:
    """Prefect's modules as the drain imports them, without importing Prefect (seconds of start-up, which no unit
    test pays)."""
    monkeypatch.setitem(sys.modules, "prefect._internal.concurrency.services", types.ModuleType("services"))
    monkeypatch.setitem(sys.modules, "prefect.events.worker", types.SimpleNamespace(EventsWorker=events))
    monkeypatch.setitem(sys.modules, "prefect.logging.handlers", types.SimpleNamespace(APILogWorker=logs))


def test_the_drain_says_whether_the_senders_are_done_within_its_bound(monkeypatch):
    from toolkg.cli.build import DRAIN_SECONDS, _drain_prefect_senders

    done: object = concurrent.futures.wait([])  # (done, not done), as drain_all gives outside an event loop
    events, logs = _Sender(done), _Sender(done)
    _with_senders(monkeypatch, events, logs)
    assert _drain_prefect_senders() is True
    first, second = events.timeouts[0], logs.timeouts[0]
    assert first is not None and second is not None
    assert 0 <= second <= first <= DRAIN_SECONDS  # one bound for both
    pending: concurrent.futures.Future[bool] = concurrent.futures.Future()
    for answer in (concurrent.futures.wait([pending], timeout=0), RuntimeError("not started")):
        _with_senders(monkeypatch, _Sender(answer), _Sender(done))
        assert _drain_prefect_senders() is False

    async def waiting() -> None:  # what drain_all gives inside a running event loop: it cannot be waited for
        pass

    coroutines: list[Coroutine[None, None, None]] = []

    def inside_a_loop() -> Coroutine[None, None, None]:
        coroutines.append(waiting())
        return coroutines[-1]

    _with_senders(monkeypatch, _Sender(inside_a_loop), _Sender(done))
    assert _drain_prefect_senders() is False
    assert getattr(coroutines[0], "cr_frame", 0) is None  # closed, not left to warn "never awaited"


def test_no_prefect_imported_is_nothing_to_drain(monkeypatch):
    from toolkg.cli.build import _drain_prefect_senders

    for name in [n for n in sys.modules if n == "prefect" or n.startswith("prefect.")]:
        monkeypatch.delitem(sys.modules, name)
    assert _drain_prefect_senders() is True
    assert "prefect.events.worker" not in sys.modules
