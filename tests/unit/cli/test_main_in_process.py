"""``toolkg.cli.main`` run twice in one process (the in-process ``cli`` fixture, an embedding program) behaves as
two processes would: what one call sets up for itself (the -v traceback handler, the environment, the progress
switch, the working folder) is gone before the next."""

from __future__ import annotations

import logging
import os

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


def test_a_quiet_build_puts_back_the_logger_levels_it_lowers(tmp_path, monkeypatch):
    """Without -v a build silences instructor's logger for itself only: the next call in the process (a -v build,
    an embedding program's own logging) finds it at the level it left it. Prefect's event sender stays lowered: it
    speaks as it flushes at interpreter exit, after the command returned (test_local_server checks a real
    process's stderr has nothing of it). The environment the build sets is put back by ``cmd_build`` too; the
    in-process runner restores it as well, so only the loggers are checked here."""
    import toolkg.cli.build as build_command

    seen: dict[str, int] = {}

    def record_levels(*_args: object) -> int:
        seen.update({name: logging.getLogger(name).level for name in ("instructor", "EventsWorker")})
        seen["prefect"] = int(os.environ["PREFECT_LOGGING_LEVEL"] == "CRITICAL")
        return 0

    monkeypatch.setattr(build_command, "_run_build", record_levels)
    (tmp_path / "tools.json").write_text('{"tools": [{"name": "echo", "description": "Echo the text."}]}')
    instructor, senders = logging.getLogger("instructor"), logging.getLogger("EventsWorker")
    monkeypatch.setattr(instructor, "level", logging.INFO)
    monkeypatch.setattr(senders, "level", logging.NOTSET)
    result = run_in_process("build", str(tmp_path / "tools.json"), "-q")
    assert result.returncode == 0, result.stderr
    # inside the build they were lowered; after it, put back
    assert seen == {"instructor": logging.CRITICAL, "EventsWorker": logging.ERROR, "prefect": 1}
    assert (instructor.level, senders.level) == (logging.INFO, logging.ERROR)
