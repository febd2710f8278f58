"""Word lists and number reading for the output guard (:mod:`core.answer.guard`).

Everything here works on text already passed through
:func:`core.privacy.text.normalise` (NFKC, no zero-width or bidi characters,
confusables folded, case-folded). The lists are written for this project:

* :data:`DRUGS` and :data:`DRUG_CLASSES`: medicines a sentence may not name
  (the knowledge bases' own drug lexicon is added at run time);
* :data:`DOSE_TERMS`: units, routes and frequencies;
* :data:`PROCEDURES` and :data:`MANAGEMENT`: procedures and the verbs of
  instructions to treat;
* :data:`OUTSIDE`: appeals to knowledge outside the bundle;
* :data:`STOPWORDS`: :data:`core.text.STOPWORDS` and the quantity words every answer
  may use;
* :data:`ANSWER_VOCABULARY`: the ordinary words an answer about similar cases
  may use beside the bundle's own words. A word in neither is unsupported.

Word tokens, stems, sentences and number words are the shared toolkit's
(:mod:`core.text`).
"""

from __future__ import annotations

import re

from core import text

__all__ = [
    "ANSWER_VOCABULARY",
    "DEFINITIVE",
    "DOSE_TERMS",
    "DRUGS",
    "DRUG_CLASSES",
    "MANAGEMENT",
    "OUTSIDE",
    "PROCEDURES",
    "RECOMMENDATION_VOCABULARY",
    "STOPWORDS",
]


def _words(block: str) -> list[str]:
    """The whitespace-separated words of a word-list block."""
    return block.split()


DRUGS = frozenset(
    _words(
        """
    amoxicillin amoxycillin co-amoxiclav augmentin penicillin benzylpenicillin ampicillin flucloxacillin
    clarithromycin azithromycin erythromycin doxycycline tetracycline ciprofloxacin levofloxacin moxifloxacin
    ceftriaxone cefuroxime cefalexin cephalexin cefotaxime ceftazidime meropenem imipenem ertapenem piperacillin
    tazobactam vancomycin teicoplanin linezolid gentamicin amikacin tobramycin metronidazole clindamycin
    trimethoprim co-trimoxazole sulfamethoxazole nitrofurantoin isoniazid rifampicin rifampin pyrazinamide
    ethambutol bedaquiline prednisolone prednisone dexamethasone hydrocortisone methylprednisolone budesonide
    fluticasone beclometasone salbutamol albuterol ipratropium tiotropium salmeterol formoterol montelukast
    theophylline aminophylline roflumilast heparin enoxaparin dalteparin tinzaparin warfarin apixaban
    rivaroxaban dabigatran edoxaban alteplase tenecteplase streptokinase aspirin clopidogrel ticagrelor
    prasugrel atorvastatin simvastatin rosuvastatin metformin insulin gliclazide empagliflozin dapagliflozin
    lisinopril ramipril enalapril losartan candesartan amlodipine nifedipine bisoprolol metoprolol atenolol
    propranolol furosemide frusemide bumetanide spironolactone digoxin amiodarone adenosine morphine oxycodone
    fentanyl codeine tramadol paracetamol acetaminophen ibuprofen naproxen diclofenac omeprazole lansoprazole
    pantoprazole ondansetron metoclopramide levetiracetam phenytoin valproate carbamazepine lamotrigine
    mannitol nimodipine cisplatin carboplatin pemetrexed docetaxel paclitaxel gemcitabine etoposide
    pembrolizumab nivolumab atezolizumab durvalumab osimertinib erlotinib gefitinib tamoxifen letrozole
    anastrozole trastuzumab methotrexate cyclophosphamide rituximab tocilizumab remdesivir oseltamivir
    acyclovir aciclovir valaciclovir fluconazole voriconazole itraconazole amphotericin nintedanib pirfenidone
    interferon natalizumab ocrelizumab ranibizumab bevacizumab aflibercept latanoprost timolol acetazolamide
    levothyroxine alendronate zoledronate denosumab lidocaine lignocaine ketamine propofol midazolam
    lorazepam diazepam haloperidol sertraline fluoxetine citalopram amitriptyline gabapentin pregabalin
    sumatriptan allopurinol colchicine hydroxychloroquine azathioprine mycophenolate tacrolimus ciclosporin
    adalimumab infliximab etanercept terbinafine isotretinoin imiquimod fluorouracil
    """
    )
)
DRUG_CLASSES = re.compile(
    r"\b(antibiotics?|antibacterials?|antivirals?|antifungals?|antimicrobials?|steroids?|corticosteroids?|"
    r"anticoagula\w*|antiplatelets?|thromboly\w*|chemotherap\w*|immunotherap\w*|radiotherap\w*|"
    r"bronchodilators?|diuretics?|analgesi\w*|opioids?|opiates?|nebuli[sz]\w*|inhalers?|vaccin\w*|"
    r"statins?|beta[- ]blockers?|ace inhibitors?|sedat\w*|anaesthe\w*|anesthe\w*|antihypertensives?|"
    r"antiepileptics?|anticonvulsants?|medicines?|medications?|medicat\w*|drugs?|pharmac\w*|tablets?|"
    r"capsules?|pills?|injections?|infusions?|oxygen)\b"
)
DOSE_TERMS = re.compile(
    r"\b(mg|milligrams?|mcg|micrograms?|µg|grams?|ml|millilitres?|milliliters?|iu|mmol|mg/kg|"
    r"doses?|dosage|dosing|dosed|daily|twice|thrice|times (?:a|per) (?:day|week)|per day|a day|bd|bid|tds|"
    r"tid|qds|qid|od|nocte|prn|hourly|every \S+ hours?|orally|oral|intravenous\w*|iv|im|subcutaneous\w*|"
    r"bolus|loading|regimen|course of)\b|\d\s*(?:g|u|units?)\b"
)
PROCEDURES = re.compile(
    r"\b(thoracostom\w*|thoracotom\w*|thora[cs]o?centes\w*|pleurodes\w*|chest (?:tube|drain)s?|drains?|"
    r"drainage|aspirat\w*|needle|decompress\w*|intubat\w*|ventilat\w*|tracheostom\w*|bronchoscop\w*|"
    r"biops\w*|lobectom\w*|pneumonectom\w*|resect\w*|excis\w*|surger\w*|surgical\w*|operat\w*|craniotom\w*|"
    r"craniectom\w*|thrombectom\w*|embolectom\w*|embolis\w*|stent\w*|angioplast\w*|catheter\w*|dialys\w*|"
    r"transfus\w*|laser|vitrectom\w*|ablat\w*|appendic\w*tom\w*|appendectom\w*|cholecystectom\w*|"
    r"laparotom\w*|laparoscop\w*|endoscop\w*|colonoscop\w*|mastectom\w*|lumpectom\w*|physiotherap\w*|"
    r"rehabilitat\w*|cpap|bipap|niv|ecmo|suction|lavage|implant\w*|transplant\w*|amputat\w*|fixation|"
    r"splint\w*|sutur\w*|procedures?|interventions?|therap(?:y|ies|eutic)|treat\w*|manage(?:ment)?|"
    r"cure[sd]?)\b"
)
MANAGEMENT = re.compile(
    r"\b(give|giving|gave|administer\w*|commence\w*|start(?:s|ed|ing)?|initiat\w*|begin|prescri\w*|"
    r"arrange\w*|refer(?:red|ral)?|admit(?:s)?|discharge|insert\w*|perform\w*|undergo\w*|"
    r"advisabl\w*|advis\w*|recommend\w*|"
    r"should (?:be|receive|take|undergo|have|get|start)|ought|needs? (?:to|a|an)|warrant\w*|urgent\w*|"
    r"immediate\w*|emergen\w*|stat|escalat\w*|consult\w*|plan (?:to|for)|offer\w*|continu\w* (?:on|with))\b"
)
OUTSIDE = re.compile(
    r"\b(stud(?:y|ies) (?:show|suggest|found|indicate)\w*|studies|research\w*|literature|published|"
    r"publications?|cohorts?|trials?|guidelines?|meta-analys\w*|systematic review|registr(?:y|ies)|"
    r"epidemiolog\w*|statistic\w*|according to|well[- ]known|it is known|known to|textbooks?|"
    r"in general|generally|in the general population|population|worldwide|nationally|incidence|prevalence|"
    r"(?:data|evidence) (?:indicate|suggest|show)\w*|evidence suggests|reported in|widely|experts?|"
    r"internet|online)\b"
)
DEFINITIVE = re.compile(
    r"\b(must|definitely|certainly|undoubtedly|guaranteed?|always|never|will (?:recover|die|survive|progress)|"
    r"(?:i|we) recommend|is recommended|the patient has|diagnosis is confirmed|confirms?)\b"
)

# Function words an answer may always use: the shared English ones, and quantity words beside them.
STOPWORDS = text.STOPWORDS | frozenset(_words("among another either least less many much neither one ones versus via vs"))

# Ordinary words of an answer about similar cases; medical terms come only from the bundle.
ANSWER_VOCABULARY = frozenset(
    _words(
        """
    interval intervals based similar similarity similarities case cases closest nearest neighbour neighbours neighbor neighbors
    match matches matched matching compare compared comparing comparison comparisons comparable show shows
    showed shown showing suggest suggests suggested suggesting indicate indicates indicated indicating consistent
    inconsistent agree agrees agreed agreement disagree disagreement share shares shared sharing common
    commonly frequent frequently often sometimes rarely rare occasional occasionally several few majority
    minority most mostly all none some remaining rest others another other retrieved retrieve stored memory
    record records recorded historical history past prior previous earlier later latest recent recently
    newest oldest current currently present presents presented presenting appear appears appeared appearance
    appearances look looks looked resemble resembles resembled resemblance likely unlikely likelihood possible
    possibly possibility probable probably perhaps may might uncertain uncertainty certain certainty limited
    limit limits limitation limitations caution cautious cautiously careful carefully interpret interpreted
    interpretation review reviewed reviewing reviewer doctor doctors radiologist radiologists clinician
    clinicians clinical clinically correlate correlation correlated confirm confirmation confirmed pending
    draft drafts decision decisions judgement judgment assessment assess assessed overall together
    alone single individual individually patient patients person scan scans image images imaging study
    reading readings read reads reported report reports finding findings feature features pattern patterns
    region regions area areas side left right upper lower middle bilateral both anatomy anatomical location
    located site sites diagnosis diagnoses diagnosed diagnostic reading ai model system confidence confident
    score scores scored high higher highest low lower lowest moderate moderately mild mildly severe severity
    serious seriously critical critically grade level levels degree range ranged ranging between varied vary
    varies variable outcome outcomes course courses result results resulted resulting recover recovered
    progressed progression progressive progressing worsen worsened worsening improve improved improvement
    improving stable
    stability unchanged change changes changed changing resolved resolution resolve persist persisted persistent
    remained remain remains follow followed following follow-up followup time times period later year years
    month months week weeks day days percent per cent percentage proportion fraction ratio number numbers count
    counts total totals out evidence data available availability information insufficient enough sufficient
    answer answers question questions question's mention mentions mentioned note notes noted noting describe
    describes described description summary summarise summarize summarised summarized overall highlight
    highlights important importance relevant relevance support supports supported supporting basis reason
    reasons because therefore thus hence however although though whereas while yet still even also further
    furthermore additionally addition moreover instead rather than similarly likewise contrast unlike like
    alike different difference differences differ differs differed same identical close closer closely
    distant near nearly approximately about around roughly almost exactly precise precisely range strongly
    strong weak weakly clear clearly unclear apparent apparently evident direct directly indirectly cited cite
    cites citing citation citations listed list lists include includes included including contain contains
    contained given based top best first second third last next former latter respective respectively
    case-based single-case whose which whom what where when who how why this that these those there here
    its their them they it we our us you your one two three four five six seven eight nine ten eleven twelve
    zero none no not nor only just per each every either neither any can could would should may might must
    will shall do does did done doing be is are was were been being have has had having make makes made
    making find finds found seen see seeing observe observed observation observations note suggestive
    compatible typical typically usual usually unusual atypical classic classical characteristic
    characteristics known unknown recorded unrecorded documented undocumented available unavailable missing
    absent absence presence present sign signs evidence age aged ages older younger old young year-old male
    female man woman men women sex years-old adult adults elderly middle-aged group groups subset set sets
    bundle provided provide provides context contextual similarity-weighted weighted weight share proportion
    scan's patient's case's cases' draft's possible suggestive equivocal indeterminate nonspecific non-specific
    reassuring concerning concern concerns worrying favourable favorable unfavourable unfavorable good poor
    better worse worst best mixed variety varied range spectrum typical prediction predict predicts predicted
    predictive prognosis prognostic signed unsigned earliest bundle's long-term short-term term long short
    full fully partial partially complete
    completely slow slowly rapid rapidly gradual gradually recurrent recurrence recurred relapse relapsed
    episode episodes new old acute chronic ongoing active inactive previous compared real really genuine
    true truly actual actually remains considerable considerably substantial substantially marked markedly
    slight slightly small smaller large larger larger extent extensive overall meaningful meaningfully
    signal signals picture pictures story broadly broad narrow narrower whole part parts portion portions
    point points aspect aspects element elements factor factors detail details specific specifically general
    particular particularly especially notable notably noteworthy interesting interestingly worth caveat
    caveats nevertheless nonetheless otherwise instance example examples e.g i.e etc namely including like
    seem seems seemed seemingly appear suggestive reflect reflects reflected reflecting represent represents
    representing represented group grouped cluster clustered align aligns aligned alignment overlap overlaps
    overlapping comparable consistency inconsistency weigh weighs weighed weighing toward towards favour favor
    favours favors neither either whether cannot can't don't doesn't isn't aren't wasn't weren't won't
    compute computes computed computing calculate calculated search searched searching retrieval judge judged
    judging judgement decide decided decides reading's nearest-neighbour ranked rank ranks ranking order ordered
    first-ranked listed alone based-on drawn draw draws taken take takes derived derive measure measured
    measures measurement estimate estimated
    need needs needed needing require requires required requiring illness ill sick sicker unwell context
    contexts score scored similarly-scored percent-similar
        """
    )
)

# Draft RECOMMENDATIONS may only suggest follow-up imaging, comparison with priors or clinical correlation.
RECOMMENDATION_VOCABULARY = frozenset(
    _words(
        """
    compare comparison compared with prior previous earlier imaging images studies study scan scans where
    available if correlate correlation correlated clinical clinically findings finding history symptoms
    follow-up followup follow up as indicated appropriate appropriately interval repeat repeated further
    consider considered review reviewed radiologist radiologists doctor suggested suggest may be the a an
    and or of to in for on any other relevant recommended is are this these be by at according local practice
    when necessary needed if required warranted short-term short term routine dedicated assessment assess
    """
    )
)
