"""What every page shares: the signed-in user, cached runtime and lookups, the scan picker, notices.

Caching rules: the one heavy object is the runtime (:mod:`core.runtime`), from
``st.cache_resource`` keyed by the settings as JSON (so a test or a preset
change never reuses a stale runtime); it builds every part (model, embedder,
indexes, pipelines) once and pages only ask it for them (:func:`runtime_part`).
Per-scan results come from ``st.cache_data`` keyed by the scan id, ``top_k``
and the index version. The URL carries only the opaque scan id.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import streamlit as st

from core.auth import CurrentUser, ScanRow, visible_scans
from core.session_grants import ENV_FLAG, issue
from core.settings import Settings, load_settings
from pages._text import inert

if TYPE_CHECKING:
    from core.contracts import SimilarCasesResult
    from core.llm.base import LLM
    from core.runtime import Runtime


def _route_through_app() -> bool:
    """Make every later run go through ``app.py``'s ``st.navigation``; True if this process had not yet.

    Until a process first runs ``st.navigation``, Streamlit treats a ``pages/``
    folder as an old-style multipage app: the first request of a fresh server
    for a deep link (``/report_draft``) would run that page file directly,
    skipping the session check, with the raw file list as navigation.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a Streamlit without it has no pages-directory mode
        return False
    first = PagesManager.uses_pages_directory is True
    PagesManager.uses_pages_directory = False
    return first


_REROUTE = _route_through_app()
DRAFT_NOTICE = "AI output is a draft for review. Nothing is part of the record until a doctor signs it."
DEMO_NOTICE = "Demo data: invented patients and cases, not for clinical use."
USER_KEY = "user"
SESSION_KEY = "session_token"
SESSION_COOKIE = "casebook_session"
SESSION_NOTICE = "session_notice"


def settings_json() -> str:
    """The effective settings (environment and preset) as JSON: the key of every cached resource."""
    return load_settings().model_dump_json()


@st.cache_resource(show_spinner="Opening the case store…", max_entries=8)
def runtime_for(settings: str) -> Runtime:
    """One runtime per distinct settings (usually one per server process); a remote API key may come from secrets."""
    from core.runtime import open_runtime  # lazy: FAISS loads after the first paint

    return open_runtime(Settings.model_validate_json(settings), secrets=st.secrets)


def get_runtime() -> Runtime:
    """The runtime for the current settings."""
    return runtime_for(settings_json())


def runtime_part(rt: Runtime, name: str, spinner: str) -> Any:
    """``rt``'s part ``name`` (``llm``, ``kb``, ``guideline_qa``...), with ``spinner`` shown while it is first built."""
    if rt.built(name):
        return getattr(rt, name)
    with st.spinner(spinner):
        return getattr(rt, name)


def remote_backend(rt: Runtime) -> str | None:
    """The remote backend to offer when the local model is too slow here: the first with a key set, or None."""
    return rt.remote_backend


def get_remote_llm(rt: Runtime) -> LLM | None:
    """The runtime's :func:`remote_backend` model (names are removed before any request leaves), or None."""
    remote: LLM | None = runtime_part(rt, "remote_llm", "Loading the remote language model…")
    return remote


def get_llm(rt: Runtime) -> LLM | None:
    """The runtime's language model (a remote backend's key may come from Streamlit secrets).

    A backend that cannot be built (model file missing, package absent) shows a warning and
    gives ``None``: answers and drafts then come from the similar cases alone.
    """
    from core.errors import CasebookError

    llm = rt.settings.llm
    try:
        found: LLM | None = runtime_part(rt, "llm", "Loading the language model…")
        return found
    except (CasebookError, ImportError) as exc:
        hint = getattr(exc, "hint", "")
        st.warning(
            f"The language model ({inert(llm.backend)}) is unavailable: {inert(exc)}. {inert(hint)} "
            "Answers come from the similar cases alone.",
            icon="⚠️",
        )
        return None


def current_user() -> CurrentUser | None:
    """The signed-in user of this run (set by :func:`resolve_user`, which ``app.py`` calls first)."""
    user = st.session_state.get(USER_KEY)
    return user if isinstance(user, CurrentUser) else None


def _cookie_token() -> str | None:
    try:
        token = st.context.cookies.get(SESSION_COOKIE)
    except (AttributeError, RuntimeError):  # no browser request behind this run (AppTest)
        return None
    return token if isinstance(token, str) and token else None  # AppTest's context is not a browser's


def resolve_user() -> CurrentUser | None:
    """Re-read the signed-in user from the server-side session on every run, role included.

    The token comes from this browser session's state or, after a reload (F5),
    from the session cookie the browser sent. A revoked, idle or expired token
    signs the user out. A user placed in the state without a token (tests) is
    re-read by id, so a changed role still takes effect.
    """
    from core.auth import load_user
    from core.sessions import resolve_session

    token = st.session_state.get(SESSION_KEY) or _cookie_token()
    if token is None:
        held = current_user()
        if held is None:
            return None
        user = load_user(get_runtime().db, held.id)
    else:
        rt = get_runtime()
        user = resolve_session(rt.db, token, idle_s=rt.settings.ui.session_idle_timeout_s)
        if user is None and SESSION_KEY in st.session_state:
            st.session_state[SESSION_NOTICE] = "Your session has ended. Please log in again."
    if user is None:
        st.session_state.pop(USER_KEY, None)
        st.session_state.pop(SESSION_KEY, None)
        return None
    st.session_state[USER_KEY] = user
    if token is not None:
        st.session_state[SESSION_KEY] = token
    return user


_COOKIE_WARNED: list[bool] = []  # once per process: Streamlit re-runs app.py, this module stays imported
COOKIE_WARNING = (
    "Casebook is running without serve.py (streamlit run app.py / make run): the session cookie is set by a "
    "page script and is NOT HttpOnly, so any script in the page can read the session token. Use `make serve` "
    "(streamlit run serve.py) in production."
)


def warn_if_cookie_readable() -> None:
    """Log (and print to stderr) once per process that the session cookie is not HttpOnly outside serve.py.

    A cookie written by ``document.cookie`` can never be HttpOnly, and plain ``streamlit run app.py``
    has no server route that could send a ``Set-Cookie`` header (docs/RELIABILITY.md, class 9).
    """
    if os.environ.get(ENV_FLAG) or _COOKIE_WARNED:
        return
    _COOKIE_WARNED.append(True)
    logging.getLogger("casebook").warning(COOKIE_WARNING)
    print(f"WARNING: {COOKIE_WARNING}", file=sys.stderr)


def sync_session_cookie() -> None:
    """Keep the browser's session cookie equal to this session's token (set after log-in, cleared after log-out).

    Streamlit can read cookies (``st.context.cookies``) but not set them. Under ``serve.py``
    the page POSTs a one-time grant to ``/api/session``, whose answer sets the cookie
    HttpOnly (scripts never see the token); under ``streamlit run app.py`` a one-line script
    sets ``document.cookie`` (not HttpOnly). Either way it is a cookie, not a URL
    parameter, so the token never lands in browser history or a shared link.
    """
    token = st.session_state.get(SESSION_KEY)
    if token == _cookie_token():
        return  # the browser sent this very cookie when the session opened
    if os.environ.get(ENV_FLAG):  # under serve.py: a route sets it HttpOnly, the token never in the page
        held = st.session_state.get("cookie_grant")
        if held is None or held[0] != token:
            max_age = int(get_runtime().settings.ui.session_max_lifetime_s)
            held = st.session_state["cookie_grant"] = (token, issue(token or "", max_age))
        script = ("<script>fetch('/api/session', {method: 'POST', credentials: 'same-origin', "
                  "headers: {'X-Casebook-Grant': '" + held[1] + "'}});</script>")  # fmt: skip
        with st.sidebar:
            st.html(script, unsafe_allow_javascript=True)
        return
    if token is not None:
        max_age = int(get_runtime().settings.ui.session_max_lifetime_s)
        value = f"{SESSION_COOKIE}={token}; path=/; max-age={max_age}; SameSite=Strict"
    else:
        value = f"{SESSION_COOKIE}=; path=/; max-age=0; SameSite=Strict"
    script = "<script>document.cookie = '" + value + "' + (location.protocol === 'https:' ? '; Secure' : '');</script>"
    # emitted on every run until the page is reloaded: a run cut short by a rerun may never render it
    with st.sidebar:
        st.html(script, unsafe_allow_javascript=True)


def logout() -> None:
    """Revoke the server-side session (audited) and forget everything this browser session held."""
    from core.sessions import revoke_session

    token = st.session_state.get(SESSION_KEY) or _cookie_token()
    if token:
        revoke_session(get_runtime().db, token)
    st.session_state.clear()


def login_form() -> None:
    """The log-in form: username and password checked against the stored bcrypt hash; success opens a session."""
    from core.auth import authenticate
    from core.errors import RateLimitedError
    from core.sessions import create_session

    st.title("Casebook")
    st.caption(DEMO_NOTICE)
    if notice := st.session_state.pop(SESSION_NOTICE, None):
        st.info(inert(notice), icon="⏱️")
    with st.form("login", border=True, width=420):
        username = st.text_input("Username", autocomplete="username")
        password = st.text_input("Password", type="password", autocomplete="current-password")
        submitted = st.form_submit_button("Log in", type="primary")
    if submitted:
        rt = get_runtime()
        ui = rt.settings.ui
        try:
            user = authenticate(
                rt.db,
                username,
                password,
                max_failures=ui.max_failed_logins,
                window_s=ui.login_lockout_s,
                source=_client_address(),
                max_source_failures=ui.max_failed_logins_per_source,
                max_global_failures=ui.max_failed_logins_global,
            )
        except RateLimitedError as exc:
            st.error(inert(exc), icon="🔒")
            return
        if user is None:
            st.error("Unknown username or wrong password.")
        else:
            held = st.session_state.get(SESSION_KEY) or _cookie_token()  # a pre-set token is revoked, never reused
            st.session_state[SESSION_KEY] = create_session(
                rt.db, user.id, lifetime_s=ui.session_max_lifetime_s, replaces=held
            )
            st.session_state[USER_KEY] = user
            st.rerun()  # the same URL: a deep link (page and ?scan=) opens once signed in
    st.caption("Demo logins: `dr.chen` (doctor) or `rahul.mehta` (patient); password `casebook-demo`.")


def _client_address() -> str | None:
    try:
        address = st.context.ip_address
    except (AttributeError, RuntimeError):
        return None
    return address if isinstance(address, str) and address else None


def require_user(*, doctor: bool = False) -> CurrentUser:
    """The signed-in user; shows the log-in form instead when nobody is signed in."""
    global _REROUTE
    if _REROUTE:  # this run may have skipped app.py (see _route_through_app): run again through it
        _REROUTE = False
        st.rerun()
    user = current_user()
    if user is None:
        login_form()
        st.stop()
    if doctor and not user.is_doctor:
        st.warning("This page is for doctors.", icon="🔒")
        st.stop()
    return user


@st.cache_data(ttl=60, show_spinner=False, max_entries=256)
def list_scans(user_id: int, role: str, settings: str) -> list[ScanRow]:
    """The scans a user may open (all for doctors, their own for patients)."""
    rt = runtime_for(settings)
    return visible_scans(rt.db, CurrentUser(user_id, "doctor" if role == "doctor" else "patient", ""))


@st.cache_data(show_spinner="Finding similar cases…", max_entries=2048)
def similar_cases(scan_id: str, top_k: int, index_version: str, settings: str) -> SimilarCasesResult:
    """Similar cases, cached per scan, ``top_k``, index version and settings."""
    return runtime_for(settings).case_search.similar_cases(scan_id, top_k)


def index_version() -> str:
    """Current case index version (part of every per-scan cache key)."""
    return get_runtime().case_search.index.version


def similar_for(scan_id: str, top_k: int | None = None) -> SimilarCasesResult:
    """Similar cases for ``scan_id`` through the per-scan cache."""
    k = top_k or get_runtime().settings.search.top_k
    return similar_cases(scan_id, k, index_version(), settings_json())


def _scan_label(s: ScanRow) -> str:
    return f"{s.created_at:%Y-%m-%d} · {s.anatomy} · {s.diagnosis}"


def pick_scan(user: CurrentUser) -> ScanRow | None:
    """Patient search (doctors) and scan picker in the sidebar; the opaque scan id lives in the URL."""
    scans = list_scans(user.id, user.role, settings_json())
    if not scans:
        st.info(
            "No scans yet. Run `python -m core seed-demo` to load the demo patients."
            if user.is_doctor
            else "You have no scans yet."
        )
        return None
    # the URL wins (a shared link); else the scan picked on another page of this session
    wanted = st.query_params.get("scan") or st.session_state.get("scan_id")
    if wanted and all(s.scan_id != wanted for s in scans):
        st.warning("That scan link does not name a scan you can open; showing your first scan instead.")
    current = next((s for s in scans if s.scan_id == wanted), None)
    own = scans
    if user.is_doctor:
        query = st.sidebar.text_input("Search patients", placeholder="Name…", help="Filters the patient list by name.")
        patients = sorted({s.patient for s in scans if query.strip().lower() in s.patient.lower()})
        if not patients:
            st.sidebar.warning("No patient matches that name.")
            return None
        default_patient = current.patient if current and current.patient in patients else patients[0]
        patient = st.sidebar.selectbox("Patient", patients, index=patients.index(default_patient))
        own = [s for s in scans if s.patient == patient]
    default_scan = next((i for i, s in enumerate(own) if s.scan_id == wanted), 0)
    label = "Scan" if user.is_doctor else "Your scans"
    choice = st.sidebar.selectbox(label, range(len(own)), index=default_scan, format_func=lambda i: _scan_label(own[i]))
    scan = own[choice]
    if st.query_params.get("scan") != scan.scan_id:
        st.query_params["scan"] = scan.scan_id
    st.session_state["scan_id"] = scan.scan_id
    if user.is_doctor:
        _audit_scan_read(user, scan.scan_id)
    return scan


def _audit_scan_read(user: CurrentUser, scan_id: str) -> None:
    """One ``scan.read`` audit row per doctor, scan and browser session (not one per rerun)."""
    from core import audit

    seen: set[str] = st.session_state.setdefault("audited_scans", set())
    if scan_id not in seen:
        audit.record(get_runtime().db, audit.SCAN_READ, user.id, scan_id)
        seen.add(scan_id)


@contextmanager
def feature_limit(feature: str) -> Iterator[None]:
    """The signed-in user's rate limit on ``feature`` for the block (``ui.feature_rate_limits``); a refusal is free."""
    from core.limits import limited

    rt, user = get_runtime(), current_user()
    ui = rt.settings.ui
    if user is None:
        yield
        return
    with limited(rt.db, user.id, feature, limit=ui.feature_rate_limits.get(feature, 10), window_s=ui.feature_rate_window_s):
        yield


def show_error(what: str, exc: Exception) -> None:
    """An error panel with the error's hint; the rest of the page stays up."""
    hint = getattr(exc, "hint", None)
    st.error(f"{inert(what)}: {inert(exc)}" + (f"\n\n{inert(hint)}" if hint else ""), icon="⚠️")


def not_yet(title: str, what: str) -> None:
    """A clear placeholder for a page whose core has not landed yet."""
    st.title(inert(title))
    st.info(f"Not yet available. {inert(what)}", icon="🚧")
