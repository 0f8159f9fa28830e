"""How long, and how many, connections may wait for their request: the policy both HTTP servers enforce.

``toolkg serve`` (``toolkg.serve.http_server``, its own selector server) and ``toolkg mcp --transport http``
(``toolkg.toolsearch.uvicorn_limits``, uvicorn) each hold connections that have not yet sent a whole request:
just opened, dripping header lines or a body, or idle between two requests. Each one costs a file descriptor,
so a client that opens them and sends slowly must not keep them for ever, nor take every descriptor:

- a request must be whole within ``REQUEST_DEADLINE_S`` of the connection opening (or of the previous answer):
  a deadline for the whole request, which a drip of bytes cannot push back (a timeout per read could);
- one client address may keep ``MAX_SLOW_PER_CLIENT`` connections that have waited over ``SLOW_AFTER_S``;
  past that its oldest ones are cut (a newcomer is never refused: on loopback every client shares the address);
- all addresses together may keep ``waiting_cap()`` waiting connections; past that the oldest is cut.

The numbers live here, in the core, so that both servers (two stages, neither of which may import the other's)
read the same ones.
"""

from __future__ import annotations

REQUEST_DEADLINE_S = 10.0  # from the connection opening (or the last answer) to the whole request read
SLOW_AFTER_S = 1.0  # a connection still without a whole request after this long is a slow one
MAX_SLOW_PER_CLIENT = 8
MAX_WAITING = 512  # connections waiting for their request, from every client together


def fd_limit() -> int | None:
    """The process's soft limit on open file descriptors, None when it has none (or none is known)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # no such limit here
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def waiting_cap() -> int:
    """``MAX_WAITING``, or half the process's file descriptor limit when that is lower (the other half is kept
    for answering: the connections being answered, and the files answering opens)."""
    soft = fd_limit()
    return MAX_WAITING if soft is None else max(16, min(MAX_WAITING, soft // 2))
