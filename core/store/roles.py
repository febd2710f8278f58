"""PostgreSQL grants for a separate application role that cannot rewrite the record.

The database triggers of migration 0003 refuse UPDATE and DELETE of a signed
report and of any audit row for every role, but a table owner (or a
superuser) can disable a trigger. In production, therefore, migrations run as
the owner and the app connects as its own role holding only what it needs:
SELECT everywhere, INSERT everywhere, UPDATE and DELETE on working tables, and
on ``reports`` and ``audit_log`` no UPDATE, DELETE or TRUNCATE at all. Such a
role can neither change a signed report nor touch a trigger.

``python -m core store app-role casebook_app`` prints the statements;
``--apply`` runs them as the configured (owner) connection.
"""

from __future__ import annotations

import re

from core.errors import InvalidInputError

__all__ = ["APPEND_ONLY_TABLES", "app_role_sql"]

APPEND_ONLY_TABLES = ("reports", "audit_log")
_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def app_role_sql(role: str) -> list[str]:
    """The GRANT/REVOKE statements that make ``role`` the app's least-privilege role (existing tables)."""
    if not _ROLE.match(role):
        raise InvalidInputError(f"{role!r} is not a plain PostgreSQL role name (lower-case letters, digits, _)")
    tables = ", ".join(APPEND_ONLY_TABLES)
    return [
        f"GRANT USAGE ON SCHEMA public TO {role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
        f"REVOKE UPDATE, DELETE, TRUNCATE ON {tables} FROM {role}",
    ]
