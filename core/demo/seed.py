"""``python -m core seed-demo``: the deterministic demo data set.

DEMO DATA, NOT FOR CLINICAL USE. It fills an empty database with demo users,
patients, scans, signed reports and ``settings.demo.n_cases`` historical cases.
A database that already holds users is left alone: seeding never overwrites
what a doctor saved.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

import bcrypt
import numpy as np
from sqlalchemy import func, select
from sqlalchemy import text as sql

from core import audit
from core.demo.catalog import CATALOG
from core.demo.images import case_images, demo_encoder, scan_image
from core.demo.patients import DEMO_DOCTORS, DEMO_PASSWORD, DEMO_PATIENTS
from core.imaging.demo import DemoImage, attach_demo_images
from core.imaging.encoders import ImageEncoder
from core.imaging.store import ImageStore, StagedImport
from core.settings import Settings
from core.store.db import Database
from core.store.models import SEVERITIES, HistoricalCase, PatientContext, Report, Scan, User

__all__ = ["DEMO_DATE", "SeedSummary", "case_rows", "scan_id_for", "seed_demo"]

log = logging.getLogger(__name__)
DEMO_DATE = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.UTC)
ANATOMY_WEIGHTS = {
    "lung": 0.3,
    "brain": 0.12,
    "spine": 0.1,
    "eye": 0.08,
    "breast": 0.1,
    "abdomen": 0.14,
    "skin": 0.08,
    "pathology": 0.08,
}
Progress = Callable[[str], None]


@dataclass(frozen=True)
class SeedSummary:
    """What a seeding run did."""

    seeded: bool
    users: int
    scans: int
    cases: int
    message: str


def case_rows(settings: Settings) -> list[dict[str, object]]:
    """``settings.demo.n_cases`` historical case rows (no embedding yet), identical for identical settings."""
    rng = np.random.default_rng(settings.demo.seed)
    anatomies = list(ANATOMY_WEIGHTS)
    a_p = np.array([ANATOMY_WEIGHTS[a] for a in anatomies])
    by_anatomy = {a: [c for c in CATALOG if c.anatomy == a] for a in anatomies}
    rows: list[dict[str, object]] = []
    for i in range(settings.demo.n_cases):
        anatomy = anatomies[rng.choice(len(anatomies), p=a_p / a_p.sum())]
        conds = by_anatomy[anatomy]
        w = np.array([c.weight for c in conds])
        cond = conds[rng.choice(len(conds), p=w / w.sum())]
        region = cond.regions[rng.integers(len(cond.regions))]
        sw = np.array(cond.severity_weights)
        severity = SEVERITIES[rng.choice(4, p=sw / sw.sum())]
        outcomes = cond.outcomes[severity]
        outcome = outcomes[rng.integers(len(outcomes))] if outcomes else None
        age = int(rng.integers(cond.age_range[0], cond.age_range[1] + 1))
        sex = "M" if rng.random() < cond.male_share else "F"
        rows.append(
            dict(
                case_id=f"HC-{i + 1:05d}",
                anatomy=anatomy,
                region=region,
                diagnosis=cond.diagnosis,
                outcome=outcome,
                severity=severity,
                age=age,
                sex=sex,
            )
        )
    return rows


def scan_id_for(seed: int, username: str, key: str) -> str:
    """Opaque, stable scan id: reveals neither the patient nor the date."""
    return "scan_" + hashlib.sha256(f"{seed}:{username}:{key}".encode()).hexdigest()[:12]


def _hash(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10)).decode()


def seed_demo(settings: Settings, db: Database, *, progress: Progress | None = None) -> SeedSummary:
    """Fill an empty database with the demo data set; leave a non-empty one untouched.

    Every embedding (cases and scans) is computed from the demo images' pixels by the image encoder.
    """
    say = progress or (lambda msg: log.info(msg))
    db.migrate()
    with db.session() as s:
        existing = s.scalar(select(func.count()).select_from(User)) or 0
    if existing:
        return SeedSummary(False, existing, 0, 0, "Database already holds users; demo data not added.")
    encoder = demo_encoder(settings)
    staged = ImageStore.from_settings(settings).stage()
    try:
        rows = case_rows(settings)
        say(f"Drawing and embedding {len(rows)} historical case images ({encoder.encoder_id})")
        images = case_images(settings, encoder, staged, rows, DEMO_DATE, say)
        cases = [
            HistoricalCase(id=i + 1, embedding=images[str(row["case_id"])].embedding, **row)
            for i, row in enumerate(rows)
        ]
        n_scans, scan_imgs = _seed_people(settings, db, encoder, staged, cases)
    except BaseException:
        staged.discard()
        raise
    attach_demo_images(settings, db, staged, scan_imgs, images, progress=say)
    users = len(DEMO_DOCTORS) + len(DEMO_PATIENTS)
    return SeedSummary(True, users, n_scans, len(cases), f"Seeded {users} users, {n_scans} scans, {len(cases)} cases.")


def _seed_people(
    settings: Settings, db: Database, encoder: ImageEncoder, staged: StagedImport, cases: list[HistoricalCase]
) -> tuple[int, dict[str, DemoImage]]:
    """Users, patients, their scans (embedded from their rendered images), signed reports and the cases."""
    pw = _hash(DEMO_PASSWORD)
    n_scans = 0
    scan_imgs: dict[str, DemoImage] = {}
    with db.session() as s:
        doctors = [User(username=u, display_name=n, role="doctor", password_hash=pw) for u, n in DEMO_DOCTORS]
        s.add_all(doctors)
        s.flush()
        for p_idx, p in enumerate(DEMO_PATIENTS):
            user = User(username=p.username, display_name=p.name, role="patient", password_hash=pw)
            user.context = PatientContext(age=p.age, sex=p.sex, past_conditions=list(p.past_conditions))
            s.add(user)
            s.flush()
            for s_idx, sc in enumerate(p.scans):
                sid = scan_id_for(settings.demo.seed, p.username, sc.key)
                img = scan_image(
                    settings,
                    encoder,
                    staged,
                    sc.anatomy,
                    sc.diagnosis,
                    sc.severity,
                    p_idx * 100 + s_idx,
                    sc.has_embedding,
                )
                scan_imgs[sid] = img
                created = DEMO_DATE - dt.timedelta(days=sc.days_ago)
                scan = Scan(
                    id=sid,
                    patient_id=user.id,
                    anatomy=sc.anatomy,
                    region=sc.region,
                    ai_diagnosis=sc.diagnosis,
                    ai_confidence=sc.confidence,
                    embedding=img.embedding,
                    created_at=created,
                )
                s.add(scan)
                n_scans += 1
                if sc.report:
                    s.flush()
                    report = Report(
                        scan_id=scan.id,
                        author_id=doctors[0].id,
                        findings=sc.report.findings,
                        impression=sc.report.impression,
                        recommendations=sc.report.recommendations,
                        is_ai_corrected=False,
                        signed_at=created + dt.timedelta(days=1),
                    )
                    s.add(report)
                    s.flush()  # a signed report enters the record with its audit row (reports verify cross-checks)
                    audit.record_in(
                        s, audit.REPORT_SEAL, report.author_id, scan.id, report_id=report.id,
                        content_hash=report.content_hash, via="demo-seed",
                    )  # fmt: skip
        s.add_all(cases)
        if s.bind is not None and s.bind.dialect.name == "postgresql":
            # Cases carry explicit ids; move the serial past them so later imports do not collide.
            s.flush()
            s.execute(
                sql(
                    "SELECT setval(pg_get_serial_sequence('historical_cases', 'id'), "
                    "(SELECT max(id) FROM historical_cases))"
                )
            )
    return n_scans, scan_imgs
