"""One-time grants that let a server route set the session cookie HttpOnly.

A Streamlit script cannot send a ``Set-Cookie`` header, and a cookie written by a page
script (``document.cookie``) cannot be HttpOnly. Under the ASGI launcher (``serve.py``,
Streamlit's ``st.App``) a route can: after a log-in the page calls ``issue`` for the new
token and asks the browser to POST the returned grant to ``/api/session``; the route
``redeem``s it (once, within 60 s) and answers with the cookie, HttpOnly. The token
itself never appears in the page. The registry lives in the server process, which
runs both the scripts and the routes.
"""

from __future__ import annotations

import secrets
import threading
import time

__all__ = ["ENV_FLAG", "issue", "redeem"]

ENV_FLAG = "CASEBOOK_HTTPONLY_SESSION"  # set by serve.py: the /api/session route exists in this process
_TTL_S = 60.0
_lock = threading.Lock()
_grants: dict[str, tuple[str, int, float]] = {}


def issue(token: str, max_age_s: int, *, now: float | None = None) -> str:
    """A one-time grant for ``token`` (``""`` clears the cookie) and its lifetime, valid for 60 s."""
    t = time.time() if now is None else now
    grant = secrets.token_urlsafe(24)
    with _lock:
        for key in [k for k, (_, _, at) in _grants.items() if t - at > _TTL_S]:
            del _grants[key]
        _grants[grant] = (token, max_age_s, t)
    return grant


def redeem(grant: str, *, now: float | None = None) -> tuple[str, int] | None:
    """``(token, max_age_s)`` of a live grant (the grant is used up), else ``None``."""
    t = time.time() if now is None else now
    with _lock:
        found = _grants.pop(grant, None)
    if found is None or t - found[2] > _TTL_S:
        return None
    return found[0], found[1]
