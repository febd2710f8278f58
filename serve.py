"""Casebook under Streamlit's ASGI server (``st.App``), with the session cookie HttpOnly.

``streamlit run serve.py`` (``make serve``) runs ``app.py`` as ``streamlit run app.py`` does,
plus one route, ``/api/session``: the page POSTs a one-time grant (core.session_grants)
and the route answers with ``Set-Cookie: casebook_session=…; HttpOnly; SameSite=Strict``
(``Secure`` over https), or an expired cookie on log-out. Page scripts never see the token.
"""

from __future__ import annotations

import os

import streamlit as st
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from core.session_grants import ENV_FLAG, redeem

os.environ[ENV_FLAG] = "1"  # the pages' cookie sync uses the route (same process)
COOKIE = "casebook_session"


async def session_cookie(request: Request) -> Response:
    """Exchange a one-time grant for the session cookie (HttpOnly); an empty token clears it."""
    found = redeem(request.headers.get("x-casebook-grant", ""))
    if found is None:
        return Response(status_code=403)
    token, max_age = found
    response = Response(status_code=204)
    secure = request.url.scheme == "https"
    if token:
        response.set_cookie(COOKIE, token, max_age=max_age, path="/", httponly=True, samesite="strict", secure=secure)
    else:
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=secure)
    return response


app = st.App("app.py", routes=[Route("/api/session", session_cookie, methods=["POST"])])
