"""Casebook: clinical review workbench. Start with `make run`.

A log-in form comes first; doctors then land on their worklist with every review
page beside it, patients get a reduced navigation (their own scans, no Ask AI, no drafts). The signed-in user
is re-read from the server-side session on every run (core.sessions): a reload
(F5) keeps the session through its cookie, and a deep link opens its page and
scan once signed in, because every page stays routable while logged out.
"""

from __future__ import annotations

import streamlit as st

from core.auth import CurrentUser
from pages._shared import login_form, logout, resolve_user, sync_session_cookie, warn_if_cookie_readable
from pages._text import inert

st.set_page_config(page_title="Casebook", page_icon="🩺", layout="wide")
warn_if_cookie_readable()  # plain `streamlit run app.py`: the session cookie cannot be HttpOnly; use `make serve`
# captions and shortcut hints dark enough for WCAG AA contrast (4.5:1; Streamlit's faded captions give 2.95:1)
st.html(
    "<style>[data-testid='stCaptionContainer'] { opacity: 1 !important; }"
    " [data-testid='stCaptionContainer'], [data-testid='stCaptionContainer'] p { color: #4b5060 !important; }"
    " kbd { opacity: 1 !important; color: #3d4250 !important; }</style>"
)

HOME = "pages/scan_review.py"  # a patient's home (My scans)
DOCTOR_HOME = "pages/worklist.py"  # where a doctor lands after log-in
SECTIONS: dict[str, list[tuple[str, str, str]]] = {
    "Review": [
        (DOCTOR_HOME, "Worklist", "📋"),
        (HOME, "Scan Review", "🩻"),
        ("pages/similar_cases.py", "Similar Cases", "🧭"),
        ("pages/patient_explorer.py", "Patient Explorer", "🗺️"),
        ("pages/report_draft.py", "Report Draft", "📝"),
        ("pages/import_images.py", "Import images", "📥"),
        ("pages/pacs.py", "PACS", "🏥"),
    ],
    "Knowledge": [
        ("pages/guideline_qa.py", "Guideline QA", "📚"),
        ("pages/evaluation.py", "Self-reflective RAG", "🔬"),
    ],
    "System": [("pages/settings_status.py", "Settings / Status", "⚙️")],
}


def pages_for(user: CurrentUser | None) -> dict[str, list[st.Page]] | list[st.Page]:
    """The navigation a user gets.

    Logged out and patients: the home page plus every other page registered but
    hidden, so a deep link never meets "Page not found"; each page shows the
    log-in form (or "for doctors") itself.
    """
    if user is not None and user.is_doctor:
        return {
            section: [st.Page(path, title=title, icon=icon, default=path == DOCTOR_HOME) for path, title, icon in rows]
            for section, rows in SECTIONS.items()
        }
    if user is None:
        home = st.Page(login_form, title="Log in", icon="🔒", url_path="login", default=True)
    else:
        home = st.Page(HOME, title="My scans", icon="🩻", default=True)
    hidden = [
        st.Page(path, title=title, icon=icon, visibility="hidden")
        for rows in SECTIONS.values()
        for path, title, icon in rows
        if user is None or path != HOME
    ]
    return [home, *hidden]


user = resolve_user()
if user is not None:
    st.sidebar.markdown(f"Signed in as **{inert(user.display_name)}** ({inert(user.role)})")
    st.sidebar.button("Log out", on_click=logout, icon="🚪")
st.sidebar.caption("Casebook · demo data, not for clinical use")
sync_session_cookie()
st.navigation(pages_for(user)).run()
