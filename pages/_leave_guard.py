"""Warn before leaving the page while a draft edit is not stored yet (the browser's own "Leave site?" dialog).

Streamlit has no hook for leaving a page, so a few lines of script in the page itself
(``st.html`` with ``unsafe_allow_javascript``) add one ``beforeunload`` listener. It asks the
browser to warn while a draft section is being typed in (Streamlit sends a text area's value
only when the box loses focus or on Ctrl+Enter, and that commit autosaves the draft) and while
the server says the editor holds edits it could not store (``unsaved``). A reload, closing the
tab and following a link all ask first; switching pages inside the app is no unload and needs no
warning, because the text already committed was autosaved.
"""

from __future__ import annotations

import streamlit as st

__all__ = ["leave_guard"]

_SCRIPT = """<script>
(() => {
  const g = window.casebookLeaveGuard || (window.casebookLeaveGuard = {typing: false, unsaved: false});
  g.unsaved = UNSAVED;
  if (g.installed) return;
  g.installed = true;
  const editing = (el) => el && el.tagName === "TEXTAREA" && el.closest('[class*="st-key-draft"]');
  document.addEventListener("input", (e) => { if (editing(e.target)) g.typing = true; }, true);
  document.addEventListener("focusout", (e) => { if (editing(e.target)) g.typing = false; }, true);
  document.addEventListener("keydown", (e) => {
    if (editing(e.target) && e.key === "Enter" && (e.ctrlKey || e.metaKey)) g.typing = false;
  }, true);
  window.addEventListener("beforeunload", (e) => {
    if (g.typing || g.unsaved) { e.preventDefault(); e.returnValue = ""; }
  });
})();
</script>"""


def leave_guard(unsaved: bool) -> None:
    """Install the warning once per browser page; ``unsaved``: edits the server holds but could not store."""
    st.html(_SCRIPT.replace("UNSAVED", "true" if unsaved else "false"), unsafe_allow_javascript=True)
