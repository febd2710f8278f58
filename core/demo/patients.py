"""Demo patients, their scans and prior signed reports.

DEMO DATA, NOT FOR CLINICAL USE. Every person here is invented. The two named
in the product's acceptance tests keep their roles: a chronic-COPD patient with
serial lung scans and a critical tension-pneumothorax patient.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DEMO_DOCTORS", "DEMO_PASSWORD", "DEMO_PATIENTS", "DemoPatient", "DemoReport", "DemoScan"]

DEMO_PASSWORD = "casebook-demo"  # documented in the README; demo accounts only


@dataclass(frozen=True)
class DemoReport:
    """A signed report on a demo scan."""

    findings: str
    impression: str
    recommendations: str = "Compare with prior imaging at follow-up. Correlate with clinical findings."


@dataclass(frozen=True)
class DemoScan:
    """One demo scan; ``days_ago`` counts back from the fixed demo date."""

    key: str
    anatomy: str
    region: str | None
    diagnosis: str
    severity: str
    confidence: float
    days_ago: int
    has_embedding: bool = True
    report: DemoReport | None = None


@dataclass(frozen=True)
class DemoPatient:
    """A demo patient with context and scans."""

    username: str
    name: str
    age: int
    sex: str
    past_conditions: tuple[str, ...]
    scans: tuple[DemoScan, ...] = field(default_factory=tuple)


DEMO_DOCTORS: tuple[tuple[str, str], ...] = (("dr.chen", "Dr. Sarah Chen"), ("dr.hassan", "Dr. Ahmed Hassan"))

_COPD_1 = DemoReport(
    "Hyperinflated lungs with upper-lobe predominant centrilobular emphysema and scattered bullae. "
    "Mild bronchial wall thickening. No consolidation or effusion.",
    "Emphysematous COPD, moderate. No acute process.",
)
_COPD_2 = DemoReport(
    "Progression of upper-lobe emphysema compared with the prior study; new 2 cm apical bulla on the right. "
    "Flattened hemidiaphragms. No focal consolidation.",
    "Progressive emphysematous COPD. No pneumothorax.",
)

DEMO_PATIENTS: tuple[DemoPatient, ...] = (
    DemoPatient(
        "rahul.mehta",
        "Rahul Mehta",
        66,
        "M",
        ("COPD", "Hypertension", "Former smoker, 40 pack-years"),
        (
            DemoScan(
                "copd-2024", "lung", "bilateral_lungs", "COPD with emphysema", "moderate", 0.84, 720, report=_COPD_1
            ),
            DemoScan("copd-2025", "lung", "bilateral_lungs", "COPD with emphysema", "high", 0.88, 360, report=_COPD_2),
            DemoScan("copd-2026", "lung", "bilateral_lungs", "COPD with emphysema", "high", 0.91, 3),
        ),
    ),
    DemoPatient(
        "imran.khan",
        "Imran Khan",
        29,
        "M",
        ("Smoker",),
        (DemoScan("ptx", "lung", "left_lung_upper", "Tension pneumothorax", "critical", 0.94, 1),),
    ),
    DemoPatient(
        "priya.nair",
        "Priya Nair",
        34,
        "F",
        ("Asthma",),
        (DemoScan("cap", "lung", "right_lung_lower", "Community-acquired pneumonia", "moderate", 0.87, 2),),
    ),
    DemoPatient(
        "tomas.novak",
        "Tomas Novak",
        51,
        "M",
        (),
        (DemoScan("nodule-lowconf", "lung", "right_lung_middle", "Benign pulmonary nodule", "low", 0.22, 6),),
    ),
    DemoPatient(
        "maria.gonzalez",
        "Maria Gonzalez",
        72,
        "F",
        ("Atrial fibrillation", "Hypertension"),
        (DemoScan("stroke", "brain", "parietal_lobe", "Ischemic stroke", "high", 0.83, 1),),
    ),
    DemoPatient(
        "hannah.schmidt",
        "Hannah Schmidt",
        27,
        "F",
        ("Optic neuritis",),
        (
            DemoScan(
                "ms",
                "brain",
                "frontal_lobe",
                "Multiple sclerosis",
                "moderate",
                0.71,
                14,
                report=DemoReport(
                    "Several ovoid periventricular T2 hyperintensities perpendicular to the ventricles. No enhancement.",
                    "Appearances compatible with demyelination.",
                ),
            ),
            DemoScan("ms-follow", "brain", "frontal_lobe", "Multiple sclerosis", "moderate", 0.78, 2),
        ),
    ),
    DemoPatient(
        "james.oconnor",
        "James O'Connor",
        46,
        "M",
        ("Lower back pain",),
        (DemoScan("disc", "spine", "lumbar_spine", "Lumbar disc herniation", "moderate", 0.81, 5),),
    ),
    DemoPatient(
        "li.wei",
        "Li Wei",
        59,
        "M",
        ("Type 2 diabetes",),
        (DemoScan("retina", "eye", "right_retina", "Diabetic retinopathy", "moderate", 0.76, 10),),
    ),
    DemoPatient(
        "ananya.iyer",
        "Ananya Iyer",
        53,
        "F",
        ("Family history of breast cancer",),
        (DemoScan("breast", "breast", "left_breast_upper_outer", "Invasive ductal carcinoma", "high", 0.78, 4),),
    ),
    DemoPatient(
        "fatima.zahra",
        "Fatima Zahra",
        36,
        "F",
        (),
        (DemoScan("appendix", "abdomen", "appendix", "Acute appendicitis", "moderate", 0.89, 1),),
    ),
    DemoPatient(
        "george.miller",
        "George Miller",
        78,
        "M",
        ("Cirrhosis",),
        (DemoScan("liver", "abdomen", "liver", "Hepatocellular carcinoma", "high", 0.69, 8),),
    ),
    DemoPatient(
        "olivia.brown",
        "Olivia Brown",
        41,
        "F",
        ("Multiple naevi",),
        (DemoScan("melanoma", "skin", "trunk", "Melanoma", "moderate", 0.72, 7),),
    ),
    DemoPatient(
        "ewa.kowalska",
        "Ewa Kowalska",
        68,
        "F",
        (),
        (DemoScan("bcc-noembed", "skin", "face", "Basal cell carcinoma", "low", 0.8, 9, has_embedding=False),),
    ),
    DemoPatient(
        "samuel.okafor",
        "Samuel Okafor",
        68,
        "M",
        ("Raised PSA",),
        (DemoScan("prostate", "pathology", "prostate_biopsy", "Prostate adenocarcinoma", "moderate", 0.8, 12),),
    ),
)
