"""The demo case catalogue: diagnoses per anatomy with regions, severities and outcomes.

DEMO DATA, NOT FOR CLINICAL USE. Frequencies and outcome wording are plausible
inventions written for this project, not statistics from any source.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATALOG", "REGIONS", "Condition", "describe"]

REGIONS: dict[str, tuple[str, ...]] = {
    "lung": (
        "right_lung_apex",
        "right_lung_upper",
        "right_lung_middle",
        "right_lung_lower",
        "left_lung_apex",
        "left_lung_upper",
        "left_lung_lower",
        "bilateral_lungs",
    ),
    "brain": ("frontal_lobe", "parietal_lobe", "temporal_lobe", "occipital_lobe", "cerebellum", "brainstem"),
    "spine": ("cervical_spine", "thoracic_spine", "lumbar_spine", "sacrum"),
    "eye": ("right_retina", "left_retina", "right_optic_disc", "left_optic_disc"),
    "breast": (
        "left_breast_upper_outer",
        "left_breast_lower_inner",
        "right_breast_upper_outer",
        "right_breast_lower_inner",
    ),
    "abdomen": ("liver", "gallbladder", "pancreas", "right_kidney", "left_kidney", "appendix", "small_bowel"),
    "skin": ("face", "trunk", "upper_limb", "lower_limb"),
    "pathology": ("lymph_node_biopsy", "colon_biopsy", "prostate_biopsy", "skin_biopsy"),
}

MODALITY = {
    "lung": "chest CT",
    "brain": "brain MRI",
    "spine": "spine MRI",
    "eye": "retinal imaging",
    "breast": "mammography",
    "abdomen": "abdominal CT",
    "skin": "dermoscopy",
    "pathology": "digital pathology slide",
}


@dataclass(frozen=True)
class Condition:
    """One diagnosis as it appears in the demo memory bank."""

    anatomy: str
    diagnosis: str
    findings: str
    regions: tuple[str, ...]
    severity_weights: tuple[float, float, float, float]  # low, moderate, high, critical
    outcomes: dict[str, tuple[str, ...]]  # severity -> possible outcomes
    age_range: tuple[int, int]
    weight: float  # relative frequency within its anatomy
    male_share: float = 0.5


def _o(
    low: tuple[str, ...], mod: tuple[str, ...], high: tuple[str, ...], crit: tuple[str, ...]
) -> dict[str, tuple[str, ...]]:
    return {"low": low, "moderate": mod, "high": high, "critical": crit}


_STABLE = ("Stable at 12-month follow-up", "Resolved on follow-up imaging")
_RECOVERED = ("Full recovery", "Recovered with residual changes on imaging")
_ADMITTED = ("Recovered after hospital admission", "Prolonged admission, recovered")
_CRITICAL = (
    "Recovered after intensive care stay",
    "Long-term disability after intensive care",
    "Died during admission",
)

CATALOG: tuple[Condition, ...] = (
    # lung
    Condition(
        "lung",
        "COPD with emphysema",
        "hyperinflation, upper-lobe bullae, flattened diaphragms, bronchial wall thickening",
        ("bilateral_lungs", "right_lung_upper", "left_lung_upper"),
        (0.15, 0.45, 0.3, 0.1),
        _o(
            ("Stable lung function at 12 months",),
            ("Stable with one exacerbation in 12 months", "Slow decline in lung function"),
            ("Recurrent exacerbations requiring admission", "Progressive decline in lung function"),
            ("Respiratory failure requiring intensive care", "Died of respiratory failure"),
        ),
        (50, 85),
        3.0,
        0.62,
    ),
    Condition(
        "lung",
        "Community-acquired pneumonia",
        "lobar consolidation with air bronchograms",
        ("right_lung_lower", "left_lung_lower", "right_lung_middle"),
        (0.2, 0.45, 0.25, 0.1),
        _o(_RECOVERED, (*_RECOVERED, "Recovered, consolidation cleared at 6 weeks"), _ADMITTED, _CRITICAL),
        (18, 90),
        2.5,
    ),
    Condition(
        "lung",
        "Tension pneumothorax",
        "absent lung markings, mediastinal shift away from the affected side, depressed hemidiaphragm",
        ("left_lung_upper", "right_lung_upper", "left_lung_apex", "right_lung_apex"),
        (0.0, 0.0, 0.15, 0.85),
        _o(
            (),
            (),
            ("Recovered after chest drain, no recurrence",),
            ("Recovered after emergency intervention", "Recurrence within 12 months", "Died before intervention"),
        ),
        (16, 75),
        0.8,
        0.75,
    ),
    Condition(
        "lung",
        "Spontaneous pneumothorax",
        "visible visceral pleural line without mediastinal shift",
        ("left_lung_apex", "right_lung_apex", "left_lung_upper", "right_lung_upper"),
        (0.3, 0.5, 0.2, 0.0),
        _o(
            ("Resolved spontaneously on follow-up imaging",),
            ("Resolved, no recurrence at 12 months", "Recurrence within 12 months"),
            ("Recurrence within 12 months", "Recovered after admission"),
            (),
        ),
        (16, 45),
        1.2,
        0.8,
    ),
    Condition(
        "lung",
        "Pulmonary tuberculosis",
        "upper-lobe cavitation with tree-in-bud nodularity",
        ("right_lung_apex", "left_lung_apex", "right_lung_upper", "left_lung_upper"),
        (0.1, 0.5, 0.3, 0.1),
        _o(
            _RECOVERED,
            ("Cured, residual fibrosis on imaging",),
            ("Cured after prolonged course, residual cavity",),
            ("Died during admission", "Chronic lung damage"),
        ),
        (18, 80),
        1.0,
        0.6,
    ),
    Condition(
        "lung",
        "Lung adenocarcinoma",
        "spiculated mass with pleural retraction",
        ("right_lung_upper", "left_lung_upper", "right_lung_lower"),
        (0.05, 0.25, 0.45, 0.25),
        _o(
            ("No progression at 24 months",),
            ("No progression at 24 months", "Local recurrence at 18 months"),
            ("Disease progression at 12 months", "Alive with disease at 24 months"),
            ("Died within 12 months", "Disease progression at 6 months"),
        ),
        (45, 85),
        1.0,
    ),
    Condition(
        "lung",
        "Pulmonary embolism",
        "filling defects in segmental pulmonary arteries",
        ("right_lung_lower", "left_lung_lower", "bilateral_lungs"),
        (0.1, 0.35, 0.35, 0.2),
        _o(_RECOVERED, _RECOVERED, _ADMITTED, _CRITICAL),
        (30, 90),
        1.0,
    ),
    Condition(
        "lung",
        "Benign pulmonary nodule",
        "small smooth solid nodule under 6 mm",
        REGIONS["lung"][:-1],
        (0.85, 0.15, 0.0, 0.0),
        _o(_STABLE, ("Stable at 24-month follow-up",), (), ()),
        (30, 80),
        1.5,
    ),
    Condition(
        "lung",
        "Pleural effusion",
        "dependent fluid with meniscus sign",
        ("right_lung_lower", "left_lung_lower"),
        (0.3, 0.45, 0.2, 0.05),
        _o(_STABLE, _RECOVERED, _ADMITTED, _CRITICAL),
        (40, 90),
        0.9,
    ),
    Condition(
        "lung",
        "Idiopathic pulmonary fibrosis",
        "basal subpleural reticulation with honeycombing",
        ("bilateral_lungs", "right_lung_lower", "left_lung_lower"),
        (0.05, 0.35, 0.45, 0.15),
        _o(
            ("Stable at 12 months",),
            ("Slow decline in lung function",),
            ("Progressive decline in lung function",),
            ("Died of respiratory failure",),
        ),
        (55, 88),
        0.6,
        0.7,
    ),
    # brain
    Condition(
        "brain",
        "Ischemic stroke",
        "restricted diffusion in a vascular territory",
        ("parietal_lobe", "frontal_lobe", "temporal_lobe", "cerebellum"),
        (0.1, 0.35, 0.35, 0.2),
        _o(
            ("Full neurological recovery",),
            ("Mild residual weakness at 3 months",),
            ("Moderate disability at 3 months",),
            ("Severe disability at 3 months", "Died during admission"),
        ),
        (45, 92),
        2.0,
    ),
    Condition(
        "brain",
        "Glioblastoma",
        "ring-enhancing mass with necrotic centre and surrounding oedema",
        ("frontal_lobe", "temporal_lobe", "parietal_lobe"),
        (0.0, 0.1, 0.4, 0.5),
        _o((), ("Alive with disease at 12 months",), ("Disease progression at 9 months",), ("Died within 12 months",)),
        (40, 80),
        0.8,
    ),
    Condition(
        "brain",
        "Meningioma",
        "extra-axial dural-based enhancing mass",
        ("frontal_lobe", "parietal_lobe", "occipital_lobe"),
        (0.5, 0.4, 0.1, 0.0),
        _o(_STABLE, ("No growth at 24 months",), ("Regrowth at 36 months",), ()),
        (35, 85),
        1.0,
        0.3,
    ),
    Condition(
        "brain",
        "Multiple sclerosis",
        "periventricular ovoid white-matter lesions",
        ("frontal_lobe", "parietal_lobe", "brainstem"),
        (0.3, 0.5, 0.2, 0.0),
        _o(
            ("No new lesions at 12 months",),
            ("One relapse in 24 months", "New lesions at 12 months"),
            ("Increasing disability at 24 months",),
            (),
        ),
        (20, 55),
        1.0,
        0.3,
    ),
    Condition(
        "brain",
        "Subdural haematoma",
        "crescentic extra-axial collection",
        ("frontal_lobe", "parietal_lobe", "temporal_lobe"),
        (0.1, 0.3, 0.35, 0.25),
        _o(_RECOVERED, _RECOVERED, _ADMITTED, _CRITICAL),
        (50, 95),
        0.9,
        0.6,
    ),
    # spine
    Condition(
        "spine",
        "Lumbar disc herniation",
        "posterolateral disc extrusion compressing the nerve root",
        ("lumbar_spine",),
        (0.3, 0.5, 0.2, 0.0),
        _o(
            ("Symptoms resolved at 6 weeks",),
            ("Symptoms resolved at 3 months", "Persistent radicular pain at 6 months"),
            ("Persistent weakness at 6 months",),
            (),
        ),
        (25, 70),
        2.0,
    ),
    Condition(
        "spine",
        "Cervical spondylotic myelopathy",
        "multilevel canal narrowing with cord signal change",
        ("cervical_spine",),
        (0.1, 0.4, 0.4, 0.1),
        _o(_STABLE, ("Stable neurology at 12 months",), ("Neurological decline at 12 months",), ("Severe disability",)),
        (45, 85),
        1.0,
    ),
    Condition(
        "spine",
        "Vertebral compression fracture",
        "wedge deformity of a vertebral body",
        ("thoracic_spine", "lumbar_spine"),
        (0.3, 0.4, 0.25, 0.05),
        _o(
            ("Pain resolved at 3 months",),
            ("Pain resolved at 3 months", "Further fracture within 12 months"),
            ("Chronic pain at 12 months",),
            ("Cord compression, long-term disability",),
        ),
        (55, 95),
        1.5,
        0.3,
    ),
    Condition(
        "spine",
        "Spinal metastasis",
        "destructive vertebral lesion with epidural extension",
        ("thoracic_spine", "lumbar_spine", "cervical_spine", "sacrum"),
        (0.0, 0.2, 0.4, 0.4),
        _o(
            (),
            ("Alive with disease at 12 months",),
            ("Disease progression at 6 months",),
            ("Died within 12 months", "Paraplegia"),
        ),
        (45, 85),
        0.8,
    ),
    # eye
    Condition(
        "eye",
        "Diabetic retinopathy",
        "microaneurysms, dot-blot haemorrhages and hard exudates",
        ("right_retina", "left_retina"),
        (0.3, 0.4, 0.2, 0.1),
        _o(
            ("Stable at 12 months",),
            ("Stable at 12 months", "Progression at 24 months"),
            ("Vision reduced at 24 months",),
            ("Severe vision loss",),
        ),
        (35, 80),
        2.0,
    ),
    Condition(
        "eye",
        "Age-related macular degeneration",
        "drusen with pigmentary change at the macula",
        ("right_retina", "left_retina"),
        (0.3, 0.4, 0.25, 0.05),
        _o(
            ("Stable at 12 months",),
            ("Slow visual decline",),
            ("Vision reduced at 24 months",),
            ("Severe vision loss",),
        ),
        (60, 95),
        1.5,
        0.4,
    ),
    Condition(
        "eye",
        "Glaucomatous optic neuropathy",
        "increased cup-to-disc ratio with rim thinning",
        ("right_optic_disc", "left_optic_disc"),
        (0.3, 0.45, 0.2, 0.05),
        _o(
            ("Stable visual field at 12 months",),
            ("Stable visual field at 12 months", "Field progression at 24 months"),
            ("Field progression at 12 months",),
            ("Severe field loss",),
        ),
        (40, 90),
        1.5,
    ),
    Condition(
        "eye",
        "Retinal detachment",
        "elevated retina with a visible tear",
        ("right_retina", "left_retina"),
        (0.0, 0.2, 0.5, 0.3),
        _o((), ("Retina attached at 3 months",), ("Retina attached, reduced acuity",), ("Permanent vision loss",)),
        (30, 80),
        0.7,
        0.6,
    ),
    # breast
    Condition(
        "breast",
        "Invasive ductal carcinoma",
        "irregular spiculated mass with microcalcifications",
        REGIONS["breast"],
        (0.05, 0.4, 0.4, 0.15),
        _o(
            ("No recurrence at 5 years",),
            ("No recurrence at 5 years", "Local recurrence at 3 years"),
            ("Distant recurrence at 3 years", "No recurrence at 5 years"),
            ("Died within 3 years", "Metastatic disease at diagnosis"),
        ),
        (35, 85),
        2.0,
        0.01,
    ),
    Condition(
        "breast",
        "Fibroadenoma",
        "oval circumscribed mass parallel to the skin",
        REGIONS["breast"],
        (0.9, 0.1, 0.0, 0.0),
        _o(_STABLE, ("Stable at 24 months",), (), ()),
        (18, 50),
        1.5,
        0.0,
    ),
    Condition(
        "breast",
        "Simple breast cyst",
        "anechoic well-circumscribed lesion",
        REGIONS["breast"],
        (0.95, 0.05, 0.0, 0.0),
        _o(_STABLE, _STABLE, (), ()),
        (30, 60),
        1.2,
        0.0,
    ),
    Condition(
        "breast",
        "Ductal carcinoma in situ",
        "segmental fine pleomorphic calcifications",
        REGIONS["breast"],
        (0.2, 0.6, 0.2, 0.0),
        _o(
            ("No recurrence at 5 years",),
            ("No recurrence at 5 years", "Ipsilateral recurrence at 4 years"),
            ("Invasive recurrence at 3 years",),
            (),
        ),
        (40, 80),
        1.0,
        0.0,
    ),
    # abdomen
    Condition(
        "abdomen",
        "Acute appendicitis",
        "dilated non-compressible appendix with periappendiceal fat stranding",
        ("appendix",),
        (0.1, 0.5, 0.3, 0.1),
        _o(
            _RECOVERED,
            _RECOVERED,
            ("Recovered after complicated course",),
            ("Perforation with abscess, recovered", "Died of sepsis"),
        ),
        (8, 70),
        1.5,
    ),
    Condition(
        "abdomen",
        "Acute cholecystitis",
        "distended gallbladder with wall thickening and gallstones",
        ("gallbladder",),
        (0.1, 0.5, 0.3, 0.1),
        _o(_RECOVERED, _RECOVERED, _ADMITTED, _CRITICAL),
        (30, 85),
        1.2,
        0.4,
    ),
    Condition(
        "abdomen",
        "Hepatocellular carcinoma",
        "arterially enhancing liver lesion with washout",
        ("liver",),
        (0.0, 0.2, 0.45, 0.35),
        _o((), ("No recurrence at 2 years",), ("Disease progression at 12 months",), ("Died within 12 months",)),
        (45, 85),
        0.8,
        0.75,
    ),
    Condition(
        "abdomen",
        "Acute pancreatitis",
        "pancreatic enlargement with peripancreatic fluid",
        ("pancreas",),
        (0.1, 0.5, 0.25, 0.15),
        _o(_RECOVERED, _RECOVERED, _ADMITTED, _CRITICAL),
        (25, 85),
        1.0,
        0.6,
    ),
    Condition(
        "abdomen",
        "Renal calculus",
        "hyperdense calculus with mild hydronephrosis",
        ("right_kidney", "left_kidney"),
        (0.4, 0.45, 0.15, 0.0),
        _o(
            ("Passed spontaneously",),
            ("Passed spontaneously", "Recurrence within 2 years"),
            ("Recovered after admission",),
            (),
        ),
        (25, 75),
        1.5,
        0.65,
    ),
    Condition(
        "abdomen",
        "Small bowel obstruction",
        "dilated small-bowel loops with a transition point",
        ("small_bowel",),
        (0.0, 0.4, 0.4, 0.2),
        _o((), _RECOVERED, _ADMITTED, _CRITICAL),
        (30, 90),
        0.8,
    ),
    # skin
    Condition(
        "skin",
        "Melanoma",
        "asymmetric pigmented lesion with irregular border and colour variegation",
        REGIONS["skin"],
        (0.1, 0.4, 0.35, 0.15),
        _o(
            ("No recurrence at 5 years",),
            ("No recurrence at 5 years",),
            ("Nodal recurrence at 2 years",),
            ("Died within 3 years", "Metastatic disease at diagnosis"),
        ),
        (25, 85),
        1.2,
    ),
    Condition(
        "skin",
        "Basal cell carcinoma",
        "pearly papule with arborising vessels",
        ("face", "trunk", "upper_limb"),
        (0.6, 0.35, 0.05, 0.0),
        _o(
            ("No recurrence at 3 years",),
            ("No recurrence at 3 years", "Local recurrence at 2 years"),
            ("Local recurrence at 2 years",),
            (),
        ),
        (45, 95),
        1.5,
    ),
    Condition(
        "skin",
        "Seborrhoeic keratosis",
        "stuck-on waxy lesion with milia-like cysts",
        REGIONS["skin"],
        (1.0, 0.0, 0.0, 0.0),
        _o(("Benign, no change at 12 months",), (), (), ()),
        (40, 95),
        1.5,
    ),
    Condition(
        "skin",
        "Benign melanocytic naevus",
        "symmetric pigmented lesion with regular network",
        REGIONS["skin"],
        (1.0, 0.0, 0.0, 0.0),
        _o(("Benign, no change at 12 months",), (), (), ()),
        (15, 70),
        1.5,
    ),
    # pathology
    Condition(
        "pathology",
        "Prostate adenocarcinoma",
        "infiltrating small glands with nuclear atypia",
        ("prostate_biopsy",),
        (0.3, 0.4, 0.2, 0.1),
        _o(
            ("No progression at 5 years",),
            ("No progression at 5 years", "Biochemical recurrence at 3 years"),
            ("Biochemical recurrence at 2 years",),
            ("Metastatic disease at 2 years",),
        ),
        (50, 85),
        1.5,
        1.0,
    ),
    Condition(
        "pathology",
        "Colorectal adenocarcinoma",
        "invasive glandular tumour with dirty necrosis",
        ("colon_biopsy",),
        (0.05, 0.35, 0.4, 0.2),
        _o(
            ("No recurrence at 5 years",),
            ("No recurrence at 5 years",),
            ("Liver recurrence at 2 years",),
            ("Died within 2 years",),
        ),
        (40, 90),
        1.5,
    ),
    Condition(
        "pathology",
        "Tubular adenoma",
        "dysplastic tubular glands without invasion",
        ("colon_biopsy",),
        (0.8, 0.2, 0.0, 0.0),
        _o(("No new polyps at 3 years",), ("New polyp at 3 years",), (), ()),
        (40, 85),
        1.5,
    ),
    Condition(
        "pathology",
        "Diffuse large B-cell lymphoma",
        "sheets of large atypical lymphoid cells",
        ("lymph_node_biopsy",),
        (0.0, 0.3, 0.45, 0.25),
        _o(
            (),
            ("Complete remission at 2 years",),
            ("Relapse at 18 months", "Complete remission at 2 years"),
            ("Died within 12 months",),
        ),
        (35, 85),
        1.0,
    ),
    Condition(
        "pathology",
        "Reactive lymphadenopathy",
        "preserved architecture with follicular hyperplasia",
        ("lymph_node_biopsy",),
        (0.9, 0.1, 0.0, 0.0),
        _o(("Resolved at 3 months",), ("Resolved at 6 months",), (), ()),
        (15, 70),
        1.0,
    ),
)


def describe(anatomy: str, region: str | None, diagnosis: str, severity: str | None, findings: str) -> str:
    """The text the simulated imaging encoder embeds for a case or a scan."""
    where = (region or anatomy).replace("_", " ")
    sev = f", {severity} severity" if severity else ""
    return f"{MODALITY[anatomy]}, {where}: {diagnosis}{sev}. {findings}."
