"""Guards for the two tables the app role must UPDATE: log-in attempts and sessions

The app role needs table-level UPDATE on ``login_attempts`` (``LOCK TABLE`` asks for
it, and a pending attempt is settled to ``ok``, ``failed`` or ``locked``), and
UPDATE of ``user_sessions.last_seen_at`` / ``revoked_at``. These triggers keep
that from resetting a lock-out or reviving a session, for every role:

- ``login_attempts``: only a ``pending`` row may change, and only its status; a row
  younger than a day cannot be deleted (old rows may be pruned);
- ``user_sessions``: a revoked session stays revoked (``revoked_at`` never changes
  once set).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27 09:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_PRUNE_AFTER_S = 86_400  # a log-in attempt may be deleted once it is a day old
# IF NOT EXISTS: pysqlite commits each DDL statement on its own (it opens a transaction only before DML),
# so a run cut short after these triggers but before the version stamp must be able to run again

_SQLITE = (
    """CREATE TRIGGER IF NOT EXISTS login_attempts_settle_only BEFORE UPDATE ON login_attempts
       WHEN OLD.status != 'pending' OR NEW.key_hash != OLD.key_hash OR NEW.at != OLD.at OR NEW.id != OLD.id
       BEGIN SELECT RAISE(ABORT, 'casebook-immutable: only a pending log-in attempt is settled'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS login_attempts_no_recent_delete BEFORE DELETE ON login_attempts
       WHEN OLD.at > CAST(strftime('%s', 'now') AS REAL) - {_PRUNE_AFTER_S}
       BEGIN SELECT RAISE(ABORT, 'casebook-immutable: recent log-in attempts cannot be deleted'); END""",
    """CREATE TRIGGER IF NOT EXISTS user_sessions_revoked_stays BEFORE UPDATE ON user_sessions
       WHEN OLD.revoked_at IS NOT NULL AND (NEW.revoked_at IS NULL OR NEW.revoked_at != OLD.revoked_at)
       BEGIN SELECT RAISE(ABORT, 'casebook-immutable: a revoked session stays revoked'); END""",
)
_SQLITE_NAMES = ("login_attempts_settle_only", "login_attempts_no_recent_delete", "user_sessions_revoked_stays")
_PG = (
    f"""CREATE OR REPLACE FUNCTION casebook_guard_login_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'DELETE' THEN
           IF OLD.at > extract(epoch FROM now()) - {_PRUNE_AFTER_S} THEN
             RAISE EXCEPTION 'casebook-immutable: recent log-in attempts cannot be deleted' USING ERRCODE = 'CB001';
           END IF;
           RETURN OLD;
         END IF;
         IF OLD.status <> 'pending' OR NEW.key_hash <> OLD.key_hash OR NEW.at <> OLD.at OR NEW.id <> OLD.id THEN
           RAISE EXCEPTION 'casebook-immutable: only a pending log-in attempt is settled' USING ERRCODE = 'CB001';
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER login_attempts_guard BEFORE UPDATE OR DELETE ON login_attempts
       FOR EACH ROW EXECUTE FUNCTION casebook_guard_login_attempt()""",
    """CREATE OR REPLACE FUNCTION casebook_guard_session() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at THEN
           RAISE EXCEPTION 'casebook-immutable: a revoked session stays revoked' USING ERRCODE = 'CB001';
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER user_sessions_guard BEFORE UPDATE ON user_sessions
       FOR EACH ROW EXECUTE FUNCTION casebook_guard_session()""",
)


def upgrade() -> None:
    """Create the guards."""
    for stmt in _PG if op.get_bind().dialect.name == "postgresql" else _SQLITE:
        op.execute(stmt)


def downgrade() -> None:
    """Drop the guards."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS login_attempts_guard ON login_attempts")
        op.execute("DROP TRIGGER IF EXISTS user_sessions_guard ON user_sessions")
        op.execute("DROP FUNCTION IF EXISTS casebook_guard_login_attempt()")
        op.execute("DROP FUNCTION IF EXISTS casebook_guard_session()")
    else:
        for name in _SQLITE_NAMES:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
