"""What every page shares: the signed-in user, cached runtime and lookups, the scan picker, notices.

Caching rules: heavy objects come from ``st.cache_resource`` with every input an
argument (the settings as JSON, so a test or a preset change never reuses a
stale runtime); per-scan results come from ``st.cache_data`` keyed by the scan
id, ``top_k`` and the index version. The URL carries only the opaque scan id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from core.auth import CurrentUser, ScanRow, visible_scans
from core.settings import Settings, load_settings

if TYPE_CHECKING:
    from core.contracts import SimilarCasesResult
    from core.llm.base import LLM
    from core.runtime import Runtime

DRAFT_NOTICE = "AI output is a draft for review. Nothing is part of the record until a doctor signs it."
DEMO_NOTICE = "Demo data: invented patients and cases, not for clinical use."
USER_KEY = "user"


def settings_json() -> str:
    """The effective settings (environment and preset) as JSON: the key of every cached resource."""
    return load_settings().model_dump_json()


@st.cache_resource(show_spinner="Opening the case store…", max_entries=8)
def runtime_for(settings: str) -> Runtime:
    """One runtime per distinct settings (usually one per server process)."""
    from core.runtime import open_runtime  # lazy: FAISS loads after the first paint

    return open_runtime(Settings.model_validate_json(settings))


def get_runtime() -> Runtime:
    """The runtime for the current settings."""
    return runtime_for(settings_json())


@st.cache_resource(show_spinner="Loading the language model…", max_entries=4)
def llm_for(settings: str, api_key: str | None) -> LLM | None:
    """The configured language model, built once (``None`` for the extractive backend)."""
    from core.llm.factory import make_llm

    return make_llm(Settings.model_validate_json(settings), api_key=api_key)


def llm_key(rt: Runtime) -> str | None:
    """A remote backend's API key from Streamlit secrets, if set there (else the backend reads the environment)."""
    llm = rt.settings.llm
    env = {"groq": llm.groq_api_key_env, "openai": llm.openai_api_key_env}.get(llm.backend)
    if not env:
        return None
    try:
        key = st.secrets.get(env)
    except FileNotFoundError:  # no secrets file
        return None
    return str(key) if key else None


def get_llm(rt: Runtime) -> LLM | None:
    """The language model for ``rt`` (a remote backend's key may come from Streamlit secrets).

    A backend that cannot be built (model file missing, package absent) shows a warning and
    gives ``None``: answers and drafts then come from the similar cases alone.
    """
    from core.errors import CasebookError

    llm = rt.settings.llm
    try:
        return llm_for(settings_json(), llm_key(rt))
    except (CasebookError, ImportError) as exc:
        hint = getattr(exc, "hint", "")
        st.warning(
            f"The language model ({llm.backend}) is unavailable: {exc}. {hint} "
            "Answers come from the similar cases alone.",
            icon="⚠️",
        )
        return None


def current_user() -> CurrentUser | None:
    """The signed-in user of this browser session, if any."""
    user = st.session_state.get(USER_KEY)
    return user if isinstance(user, CurrentUser) else None


def login_form() -> None:
    """The log-in form: username and password checked against the stored bcrypt hash."""
    from core.auth import authenticate
    from core.errors import RateLimitedError

    st.title("Casebook")
    st.caption(DEMO_NOTICE)
    with st.form("login", border=True, width=420):
        username = st.text_input("Username", autocomplete="username")
        password = st.text_input("Password", type="password", autocomplete="current-password")
        submitted = st.form_submit_button("Log in", type="primary")
    if submitted:
        rt = get_runtime()
        try:
            user = authenticate(
                rt.db,
                username,
                password,
                max_failures=rt.settings.ui.max_failed_logins,
                window_s=rt.settings.ui.login_lockout_s,
            )
        except RateLimitedError as exc:
            st.error(str(exc), icon="🔒")
            return
        if user is None:
            st.error("Unknown username or wrong password.")
        else:
            st.session_state[USER_KEY] = user
            st.rerun()
    st.caption("Demo logins: `dr.chen` (doctor) or `rahul.mehta` (patient); password `casebook-demo`.")


def require_user(*, doctor: bool = False) -> CurrentUser:
    """The signed-in user; shows the log-in form instead when nobody is signed in."""
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
    return runtime_for(settings).search.similar_cases(scan_id, top_k)


def index_version() -> str:
    """Current case index version (part of every per-scan cache key)."""
    return get_runtime().search.index.version


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
    return scan


def show_error(what: str, exc: Exception) -> None:
    """An error panel with the error's hint; the rest of the page stays up."""
    hint = getattr(exc, "hint", None)
    st.error(f"{what}: {exc}" + (f"\n\n{hint}" if hint else ""), icon="⚠️")


def not_yet(title: str, what: str) -> None:
    """A clear placeholder for a page whose core has not landed yet."""
    st.title(title)
    st.info(f"Not yet available. {what}", icon="🚧")
