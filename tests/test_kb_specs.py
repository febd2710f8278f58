"""The KB registry (core.kb.specs) is the one list of knowledge bases: everything that names them reads it."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from core.config.guideline import GuidelineQASettings
from core.errors import InvalidInputError
from core.guideline.types import Route, RouteDecision
from core.kb import KnowledgeBase
from core.kb import types as kb_types
from core.kb.demo.build import DEMO_SOURCES
from core.kb.index.ingest import PARSERS, upload_suffixes
from core.kb.spaces import UPLOAD_TYPES
from core.kb.specs import KB_NAMES, KB_SPECS, LABEL_KB, ROUTED_KBS, kb_spec, kbs_for_kind, kbs_for_route
from core.settings import load_settings
from tests.conftest import make_settings

REPO = Path(__file__).resolve().parents[1]


def test_names_kinds_and_routes_come_from_the_specs() -> None:
    assert KB_NAMES == ("guidelines", "druglabels", "user") and kb_types.KB_NAMES is KB_NAMES
    assert all(kb_types.is_kb_name(n) for n in KB_NAMES) and not kb_types.is_kb_name("pathways")
    assert LABEL_KB == "druglabels" and kb_spec(LABEL_KB).kinds == ("spl",)
    with pytest.raises(KeyError):
        kb_spec("pathways")
    for spec in KB_SPECS:
        assert spec.kinds and set(spec.kinds) <= set(PARSERS), spec  # every kind has a parser
        assert set(spec.routes) <= set(get_args(Route)) - {"out_of_domain"}, spec
    assert kbs_for_kind("guideline") == ("guidelines", "user") and kbs_for_kind("spl") == ("druglabels", "user")
    assert ROUTED_KBS == ("guidelines", "druglabels")
    for route in get_args(Route):
        assert RouteDecision(route=route, reason="test").kbs == kbs_for_route(route)
    assert kbs_for_route("mixed") == ("guidelines", "druglabels") and kbs_for_route("out_of_domain") == ()


def test_demo_sources_and_upload_types_follow_the_specs() -> None:
    settings = load_settings("test")
    assert set(DEMO_SOURCES) == {s.name for s in KB_SPECS if s.demo}
    for kb, (folder, kind, suffixes) in DEMO_SOURCES.items():
        assert kind in kb_spec(kb).kinds and suffixes == PARSERS[kind][1]
        demo = REPO / settings.paths.assets_dir / settings.kb.demo_subdir / folder
        assert demo.is_dir() and any(p.suffix.lower() in suffixes for p in demo.iterdir()), demo
    # What the My documents page accepts: every suffix a document space's parsers read, plus zips.
    assert UPLOAD_TYPES == ("md", "markdown", "html", "htm", "pdf", "xml", "zip")
    assert {f".{t}" for t in UPLOAD_TYPES} - {".zip"} == set(upload_suffixes("user"))


def test_a_kind_goes_only_into_the_kbs_that_accept_it(tmp_path: Path) -> None:
    kb = KnowledgeBase(make_settings(tmp_path))
    with pytest.raises(InvalidInputError, match="spl documents go to druglabels or user or a document space"):
        kb.ingest([tmp_path / "label.xml"], "spl", "guidelines")
    with pytest.raises(InvalidInputError, match="guideline documents go to guidelines or user"):
        kb.ingest([tmp_path / "note.md"], "guideline", LABEL_KB)


def test_a_kb_the_settings_do_not_list_gets_the_default_thresholds() -> None:
    cfg = GuidelineQASettings()
    assert cfg.threshold("pathways") == cfg.default_threshold
    assert cfg.calibration("pathways") == (cfg.calib_midpoint["default"], cfg.calib_scale["default"])
    assert cfg.confidence_model("pathways") is None  # the logistic curve on the cosine instead
    for kb in ROUTED_KBS:  # the routed KBs are fitted
        assert kb in cfg.thresholds and kb in cfg.calib_midpoint and cfg.confidence_model(kb)
