"""A signed report enters the table only by signing a draft or amending the current version

Migration 0003 refuses UPDATE and DELETE of a signed report; the app role still needs INSERT
(signing is an INSERT), so before this revision it could insert a report that claims to be
signed by any doctor, caught only afterwards by the record key (``reports verify``). The
database now refuses, on INSERT, a signed report that is not one of:

- **the signing of a draft**: version 1, superseding nothing, and the same author holds a
  draft of the same scan that is claimed (``status = 'signed'``) and not yet linked to a report
  (``sign_draft`` claims the draft, inserts the report, then links it, in one transaction);
- **an amendment**: it supersedes a signed report of the same scan, its version is one more,
  and it gives a reason.

In both cases the author must be a doctor and the row must carry its hash and its seal
(``content_hash``, ``record_mac``). On PostgreSQL the signing time must also be the server's
present (within ten minutes), so a report cannot be back-dated, and the rule binds every role
that cannot already alter the table (``pg_has_role(current_user, owner, 'USAGE')``): the app
role is bound; the owner (migrations, the demo seed, a restore) is not, since it could drop the
trigger anyway. SQLite has no roles, and its demo seed writes the demo's signed reports without
drafts, so there the rule is the author, the seal and the amendment's shape; whoever can write
the database file can also drop a trigger, and the record key is what catches them.

A forger holding the app role can still create a draft in another doctor's name and sign it
(the database cannot tell one doctor from another when one role acts for all of them): the
record key's seal still fails ``reports verify``, and the draft row it needed stays behind.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 12:20:00
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_CLOCK_SKEW = "10 minutes"  # the app's clock against the database server's (NTP keeps them far closer)

_SQLITE = """CREATE TRIGGER IF NOT EXISTS reports_signed_insert_guard BEFORE INSERT ON reports
   WHEN NEW.signed_at IS NOT NULL AND (
        NEW.content_hash IS NULL OR NEW.record_mac IS NULL
     OR NOT EXISTS (SELECT 1 FROM users u WHERE u.id = NEW.author_id AND u.role = 'doctor')
     OR (NEW.supersedes_id IS NULL AND coalesce(NEW.version, 0) != 1)
     OR (NEW.supersedes_id IS NOT NULL AND (
            trim(coalesce(NEW.amend_reason, '')) = ''
         OR NOT EXISTS (SELECT 1 FROM reports o WHERE o.id = NEW.supersedes_id AND o.scan_id = NEW.scan_id
                          AND o.signed_at IS NOT NULL AND NEW.version = o.version + 1))))
   BEGIN SELECT RAISE(ABORT, 'casebook-immutable: a signed report enters only by signing or amending'); END"""

_PG_FUNCTION = f"""CREATE OR REPLACE FUNCTION casebook_guard_signed_report_insert() RETURNS trigger
   LANGUAGE plpgsql AS $$
   DECLARE
     owner oid;
     why text;
   BEGIN
     IF NEW.signed_at IS NULL THEN RETURN NEW; END IF;
     SELECT relowner INTO owner FROM pg_class WHERE oid = TG_RELID;
     IF pg_has_role(current_user, owner, 'USAGE') THEN RETURN NEW; END IF;
     IF NEW.content_hash IS NULL OR NEW.record_mac IS NULL THEN
       why := 'it carries no hash or seal';
     ELSIF NOT EXISTS (SELECT 1 FROM users u WHERE u.id = NEW.author_id AND u.role = 'doctor') THEN
       why := 'its author is not a doctor';
     ELSIF NEW.signed_at NOT BETWEEN now() - interval '{_CLOCK_SKEW}' AND now() + interval '{_CLOCK_SKEW}' THEN
       why := 'it is not signed now';
     ELSIF NEW.supersedes_id IS NULL THEN
       IF coalesce(NEW.version, 0) <> 1 OR NOT EXISTS (
            SELECT 1 FROM report_drafts d WHERE d.author_id = NEW.author_id AND d.scan_id = NEW.scan_id
               AND d.status = 'signed' AND d.report_id IS NULL) THEN
         why := 'it signs no draft of its author';
       END IF;
     ELSIF trim(coalesce(NEW.amend_reason, '')) = '' OR NOT EXISTS (
            SELECT 1 FROM reports o WHERE o.id = NEW.supersedes_id AND o.scan_id = NEW.scan_id
               AND o.signed_at IS NOT NULL AND NEW.version = o.version + 1) THEN
       why := 'it amends no signed version of its scan';
     END IF;
     IF why IS NOT NULL THEN
       RAISE EXCEPTION 'casebook-immutable: a signed report enters only by signing or amending (%)', why
         USING ERRCODE = 'CB001';
     END IF;
     RETURN NEW;
   END $$"""
_PG_TRIGGER = """CREATE TRIGGER reports_signed_insert_guard BEFORE INSERT ON reports
   FOR EACH ROW EXECUTE FUNCTION casebook_guard_signed_report_insert()"""


def upgrade() -> None:
    """Create the guard."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        op.execute(_PG_TRIGGER)
    else:
        op.execute(_SQLITE)


def downgrade() -> None:
    """Drop the guard."""
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS reports_signed_insert_guard ON reports")
        op.execute("DROP FUNCTION IF EXISTS casebook_guard_signed_report_insert()")
    else:
        op.execute("DROP TRIGGER IF EXISTS reports_signed_insert_guard")
