"""``toolkg.memory_guard`` on real processes: ``limit_data`` refuses memory past the limit (a ``MemoryError`` in
Python, what pyoxigraph's allocator aborts on), and ``RssWatchdog`` kills a process whose resident memory grows
past its limit where no ``RLIMIT_DATA`` was set. Each child allocates at most a few hundred MiB."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

from toolkg.memory_guard import RssWatchdog, exceeded, ran_out_of_memory

MIB = 2**20


def _child(code: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_limit_data_turns_an_allocation_past_the_limit_into_memory_error():
    child = _child(
        """
        from toolkg.memory_guard import limit_data
        assert limit_data(64 * 2**20)
        kept = [bytearray(8 * 2**20) for _ in range(4)]  # 32 MiB: under the limit
        try:
            kept += [bytearray(8 * 2**20) for _ in range(16)]  # 160 MiB more: over it
        except MemoryError:
            print("refused at", len(kept) * 8, "MiB")
        """
    )
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    refused_at = int(out.split()[2])
    assert 32 <= refused_at <= 64, out


def test_the_watchdog_kills_a_process_past_its_limit_and_only_then():
    child = _child(
        """
        import sys, time
        print("ready", flush=True)
        kept = []
        time.sleep(0.5)
        for _ in range(40):  # 8 MiB every 25 ms, up to 320 MiB
            kept.append(bytearray(8 * 2**20))
            time.sleep(0.025)
        print("survived", flush=True)
        """
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    killed_at: list[int] = []
    watchdog = RssWatchdog(child.pid, 96 * MIB, on_kill=killed_at.append)
    started = time.monotonic()
    child.wait(60)
    watchdog.stop()
    assert child.returncode == -signal.SIGKILL and watchdog.killed
    assert killed_at and killed_at[0] < watchdog.limit + 64 * MIB  # caught within a few polls of the limit
    assert time.monotonic() - started < 5


def test_the_watchdog_leaves_a_process_under_its_limit_alone():
    child = _child("import time; kept = bytearray(16 * 2**20); time.sleep(0.6)")
    time.sleep(0.2)
    watchdog = RssWatchdog(child.pid, 256 * MIB)
    child.wait(60)
    watchdog.stop()
    assert child.returncode == 0 and not watchdog.killed


def test_what_the_parent_reads_and_says():
    assert ran_out_of_memory("memory allocation of 360 bytes failed\nstack backtrace:\nskipping backtrace")
    assert ran_out_of_memory("terminate called after throwing an instance of 'std::bad_alloc'")
    assert not ran_out_of_memory("thread 'sparql' has overflowed its stack\nfatal runtime error: stack overflow")
    assert exceeded(512) == "query exceeded its memory limit (512 MiB): narrow it"
