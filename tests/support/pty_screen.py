"""Run a command with its stderr on a pseudo-terminal of a given width, and read what a terminal would show.

``run_on_pty`` gives the raw bytes the program wrote to the terminal; ``Screen`` replays them the way a
terminal does for the few controls progress bars use (carriage return, newline, erase line, cursor up,
show/hide cursor, colours), so a test asserts on the lines a person sees, not on escape sequences.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

# The controls a redrawn bar uses: CSI <n> A (up), CSI 2 K (erase line), CSI ?25 l/h (cursor), CSI ... m (SGR).
CSI = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z])")


@dataclass
class Screen:
    """The visible lines after replaying ``text``; ``widest`` the longest line ever drawn (in characters)."""

    lines: list[str] = field(default_factory=lambda: [""])
    row: int = 0
    col: int = 0
    widest: int = 0
    unknown: list[str] = field(default_factory=list)  # controls this replay does not know (a test fails on them)

    @classmethod
    def replay(cls, text: str) -> Screen:
        screen = cls()
        position = 0
        for match in CSI.finditer(text):
            screen._write(text[position : match.start()])
            screen._control(match.group(1), match.group(2))
            position = match.end()
        screen._write(text[position:])
        return screen

    def _write(self, chunk: str) -> None:
        for char in chunk:
            if char == "\r":
                self.col = 0
            elif char == "\n":
                self.row, self.col = self.row + 1, 0
                while len(self.lines) <= self.row:
                    self.lines.append("")
            elif char == "\x1b" or (ord(char) < 32 and char != "\t"):
                self.unknown.append(repr(char))
            else:
                line = self.lines[self.row].ljust(self.col)
                self.lines[self.row] = line[: self.col] + char + line[self.col + 1 :]
                self.col += 1
                self.widest = max(self.widest, self.col)

    def _control(self, params: str, command: str) -> None:
        if command == "A":
            self.row = max(self.row - int(params or 1), 0)
        elif command == "K" and params == "2":
            self.lines[self.row] = ""
        elif command == "m" or (command in "hl" and params == "?25"):
            pass  # colours, cursor shown or hidden: nothing to see in the text
        else:
            self.unknown.append(f"CSI {params}{command}")

    @property
    def text(self) -> str:
        """The screen's lines, trailing blanks and the empty last line dropped."""
        lines = [line.rstrip() for line in self.lines]
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines)


def run_on_pty(
    argv: Sequence[str], columns: int, env: dict[str, str], timeout: float = 300, stdout_on_pty: bool = False
) -> tuple[int, bytes, bytes]:
    """Run ``argv`` with stderr on a pseudo-terminal ``columns`` wide (0: a terminal that reports no size, as
    some containers and CI runners do), stdout a pipe, stdin closed; (exit code, stdout, terminal bytes). With
    ``stdout_on_pty`` the other way round: stdout on the terminal, stderr a pipe; (exit code, stderr, terminal)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24 if columns else 0, columns, 0, 0))
    env = {key: value for key, value in env.items() if key not in ("COLUMNS", "LINES")}
    out, err = (slave, subprocess.PIPE) if stdout_on_pty else (subprocess.PIPE, slave)
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
    os.close(slave)
    received: list[bytes] = []

    def read() -> None:  # drain the terminal while the program runs, or it blocks once the buffer is full
        while True:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if process.poll() is not None:
                    return
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not data:
                return
            received.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        piped = process.communicate(timeout=timeout)[1 if stdout_on_pty else 0]
    finally:
        reader.join(timeout=10)
        os.close(master)
    return process.returncode, piped, b"".join(received)


def terminal_text(raw: bytes) -> str:
    """The terminal's bytes as text, with the line discipline's CR LF (onlcr) back to LF."""
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n")


# A progress line as drawn on a terminal, whole: '[toolkg] ingest ━━━━╸━━━ 32/100 manifests (32%), 210/s, ETA 0s',
# or with no room for a bar 'ingest: 32/100 manifests', the stage's name shortened with '…' when even that is
# too wide. Never a count cut in the middle ('ingest: 2/'), never a clause cut short ('(100').
_DURATION = r"(?:\d+s|\d+m\d\ds|\d+h\d\dm)"
PROGRESS_LINE = re.compile(
    r"\[toolkg\] (?P<name>[\w ,.-]+?…?)(?::|(?P<bar> [━╸╺ ]+?)) (?P<done>\d+)/(?P<total>\d+) (?P<unit>[a-z]+)"
    rf"(?: \(\d+%\))?(?: in {_DURATION})?(?:, [\d.]+/s)?(?:, ETA {_DURATION})?"
)
SGR = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]")


def drawn_lines(text: str) -> list[str]:
    """Every line the program drew, each redraw apart (split at carriage returns, newlines, erase-line and
    cursor-up), colours dropped, trailing blanks stripped, empty ones left out."""
    plain = SGR.sub("", text)
    return [piece.rstrip() for piece in re.split(r"\r|\n|\x1b\[2K|\x1b\[\d*A", plain) if piece.strip()]
