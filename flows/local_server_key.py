"""The shared local Prefect server's key: Prefect's basic-auth string (``PREFECT_SERVER_API_AUTH_STRING`` for
the server, ``PREFECT_API_AUTH_STRING`` for its clients), made once per user in toolkg's config folder.

Every request to the server but its health check must carry it (``local_server_process``); toolkg's commands
read it from ``AUTH_FILE`` (mode 0600, this user's), a web page or another user of the machine cannot.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from stat import S_ISREG

from toolkg.errors import ToolkgError

AUTH_FILE = "prefect-api-auth"  # in toolkg's config folder: the shared server's basic-auth "user:password", 0600


class ServerKeyError(ToolkgError):
    """The key file cannot be made or is not this user's own."""


def api_auth_string() -> str:
    """The shared server's basic-auth string, made once per user in toolkg's config folder (``AUTH_FILE``, 0600).

    A web page that finds the server's port cannot read it (the Host and Origin checks refuse it anyway), nor
    can another user of the machine; every toolkg command of this user reads it from there."""
    from toolkg.paths import config_dir, private_folder

    path = config_dir() / AUTH_FILE
    try:
        private_folder(path.parent)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return _read_auth(path)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(f"toolkg:{secrets.token_urlsafe(32)}\n")
        return _read_auth(path)
    except OSError as exc:
        raise ServerKeyError(f"cannot keep the local Prefect server's key in {path}: {exc.strerror or exc}") from None


def _read_auth(path: Path) -> str:
    """The key, from a file only this user may read (looser permissions are tightened: it is ours to keep)."""
    info = path.lstat()
    if not S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        raise ServerKeyError(f"{path} is not a file of this user's: remove it and toolkg makes a new key")
    if info.st_mode & 0o077:
        os.chmod(path, 0o600)
    text = path.read_text(encoding="utf-8").strip()
    if not text.startswith("toolkg:") or len(text) < 24:
        raise ServerKeyError(f"{path} does not hold a toolkg key: remove it and toolkg makes a new one")
    return text


def auth_digest(auth: str) -> str:
    """Which key a server was started with, as its state file says it (never the key itself)."""
    return hashlib.sha256(auth.encode()).hexdigest()[:16]
