"""A model trained with reflection tokens (Self-BioRAG 7B and alike), read directly through transformers.

The reflection tokens are added special tokens of such a model, so each one is a single vocabulary id and
its log-probability is read from the full next-token distribution (``log_softmax`` of the logits) at the
positions listed in :mod:`core.selfrag.prompts`.

Batched critic (:meth:`ReflectionModel.read_documents`): the shared prefix
``### Instruction:\\n{q}\\n\\n### Response:\\n[Retrieval]<paragraph>`` runs once; its KV cache is repeated
over a batch of documents; one forward pass over ``{doc}</paragraph>[Relevant][Fully supported]``
(right-padded) gives relevance (logits after ``</paragraph>``), support (after ``[Relevant]``) and utility
(after ``[Fully supported]``) for every document. The reference code instead generates 20 tokens per
document (:meth:`ReflectionModel.read_documents_by_generation`, kept as the measured baseline).

Every critic call and generation runs through :func:`core.llm.call.run_call`: it returns when the stage's
time is up, in wall time (a forward pass under way finishes unwatched; generation stops between tokens).

The model and every tensor live on ``selfrag.native_device`` in ``selfrag.native_dtype`` (:func:`resolve_device`);
log-softmax runs in float32 and the label columns come back to the host in one transfer per pass.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import ConfigError
from core.llm.budget import current_token
from core.llm.call import run_call
from core.selfrag import prompts
from core.selfrag.tokens import (
    FULLY_SUPPORTED,
    NO_SUPPORT,
    NO_SUPPORT_SHORT,
    PARAGRAPH_CLOSE,
    PARAGRAPH_OPEN,
    RELEVANCE_TOKENS,
    RELEVANT,
    RETRIEVAL,
    RETRIEVAL_TOKENS,
    SUPPORT_TOKENS,
    UTILITY_TOKENS,
)
from core.selfrag.types import CriticReading, Passage

if TYPE_CHECKING:
    from core.config.selfrag import SelfRagSettings

__all__ = ["NativeCritic", "ReflectionModel", "resolve_device"]

_GROUPS: dict[str, tuple[str, ...]] = {
    "retrieval": RETRIEVAL_TOKENS,
    "relevance": RELEVANCE_TOKENS,
    "support": SUPPORT_TOKENS,
    "utility": UTILITY_TOKENS,
}


def resolve_device(torch: Any, name: str) -> Any:
    """The ``torch.device`` that ``selfrag.native_device`` names.

    ``auto`` is the first CUDA GPU when torch sees one, else the CPU; ``cuda`` or ``cuda:N`` without such a
    GPU is a :class:`ConfigError`, never a silent fall-back to a CPU run that would be tens of times slower.
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(
                f"selfrag.native_device={name} but torch {torch.__version__} sees no CUDA GPU",
                hint="Set selfrag.native_device=cpu (or auto), or install a CUDA build of torch on a machine "
                "with an NVIDIA GPU (make setup installs the CPU build).",
            )
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ConfigError(
                f"selfrag.native_device={name} but torch sees {torch.cuda.device_count()} CUDA GPU(s)",
                hint="Use cuda:0 .. cuda:N-1, or auto.",
            )
    return torch.device(name)


class ReflectionModel:
    """A local causal LM with reflection tokens in its vocabulary (``local_files_only``; never downloads).

    Device and dtype (``selfrag.native_device``, ``native_dtype``) are fixed at construction; the rest may change.
    """

    def __init__(self, model_dir: Path, settings: SelfRagSettings, seed: int) -> None:
        from core.llm.hf_transformers import load_local_causal_lm

        torch, tokenizer, lm = load_local_causal_lm(model_dir, "The native critic", "selfrag.native_model_path")
        self._attach(torch, tokenizer, lm, model_dir.name, settings, seed)

    @classmethod
    def from_loaded(cls, tokenizer: Any, lm: Any, settings: SelfRagSettings, seed: int, name: str) -> ReflectionModel:
        """Wrap a tokenizer and causal LM already in memory (the benchmark builds 7B-shaped models on the GPU)."""
        import torch

        model = cls.__new__(cls)
        model._attach(torch, tokenizer, lm, name, settings, seed)
        return model

    def _attach(self, torch: Any, tokenizer: Any, lm: Any, name: str, settings: SelfRagSettings, seed: int) -> None:
        from core.embed.base import free_cores

        self.device = resolve_device(torch, settings.native_device)
        self.dtype = getattr(torch, settings.native_dtype)
        # Process-wide: on a busy 2-core machine 2 threads made generation 20x slower than 1 (measured).
        torch.set_num_threads(free_cores(settings.native_threads))
        self.torch = torch
        self.tokenizer = tokenizer
        # A no-op for a float32 checkpoint on the CPU (the default settings).
        self.lm = lm.to(device=self.device, dtype=self.dtype).eval()
        self.settings = settings
        self.seed = seed
        self.model = name
        self.ids = self._label_ids()
        # Every label's vocabulary column, read in one gather and one device-to-host copy per pass.
        self._labels = tuple(self.ids)
        self._columns = torch.tensor([self.ids[label] for label in self._labels], device=self.device)

    def _label_ids(self) -> dict[str, int]:
        """Vocabulary id of every reflection label; a model without them cannot be a native critic."""
        vocab = self.tokenizer.get_vocab()
        ids: dict[str, int] = {}
        for label in (*RETRIEVAL_TOKENS, *RELEVANCE_TOKENS, *SUPPORT_TOKENS, *UTILITY_TOKENS):
            key = NO_SUPPORT_SHORT if label == NO_SUPPORT and label not in vocab else label
            if key not in vocab:
                raise ConfigError(
                    f"{self.model} has no reflection token {label!r}",
                    hint="Use selfrag.critic=judge for a model trained without reflection tokens.",
                )
            ids[label] = int(vocab[key])
        return ids

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens added (reflection tokens in the text map to their ids)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _bos(self) -> list[int]:
        bos = self.tokenizer.bos_token_id
        return [] if bos is None else [int(bos)]

    def _pad_id(self) -> int:
        return int(next((i for i in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id) if i is not None), 0))

    def _tensor(self, rows: Any) -> Any:
        return self.torch.tensor(rows, device=self.device)

    def _label_rows(self, logits: Any) -> list[dict[str, float]]:
        """``{label: logprob}`` for each row of ``logits`` (rows x vocabulary), log-softmax in float32."""
        logp = self.torch.log_softmax(logits.float(), dim=-1)
        return [dict(zip(self._labels, row, strict=True)) for row in logp[:, self._columns].tolist()]

    @staticmethod
    def _group(row: dict[str, float], group: str) -> dict[str, float]:
        return {label: row[label] for label in _GROUPS[group]}

    def next_logprobs(self, text: str, group: str) -> dict[str, float]:
        """The ``group`` labels' log-probabilities as the next token after ``text``."""
        ids = self._tensor([self._bos() + self.encode(text)])
        with self.torch.no_grad():
            logits = self.lm(input_ids=ids).logits[0, -1:]
        return self._group(self._label_rows(logits)[0], group)

    def document_segments(self, query: str, documents: Sequence[Passage]) -> tuple[list[int], list[list[int]]]:
        """The shared prefix ids and each document's suffix ids (``doc</paragraph>[Relevant][Fully supported]``)."""
        prefix = self._bos() + self.encode(prompts.instruction_prompt(query)) + self.encode(RETRIEVAL + PARAGRAPH_OPEN)
        tail = [*self.encode(PARAGRAPH_CLOSE), self.ids[RELEVANT], self.ids[FULLY_SUPPORTED]]
        suffixes = [self.encode(d.prompt_text(self.settings.judge_max_chars)) + tail for d in documents]
        return prefix, suffixes

    def read_documents(self, query: str, documents: Sequence[Passage]) -> list[CriticReading]:
        """Batched critic: relevance, support and utility maps for every document (see the module docstring)."""
        if not documents:
            return []
        torch = self.torch
        prefix, suffixes = self.document_segments(query, documents)
        size = self.settings.critic_batch_size
        # Batches of similar lengths waste fewer padded positions; readings go back in the documents' order.
        order = sorted(range(len(suffixes)), key=lambda i: len(suffixes[i]))
        readings: dict[int, CriticReading] = {}
        with torch.no_grad():
            cache = None
            if self.settings.reuse_prefix_cache:
                cache = self.lm(input_ids=self._tensor([prefix]), use_cache=True).past_key_values
            for start in range(0, len(order), size):
                batch = order[start : start + size]
                readings.update(zip(batch, self._read_batch(prefix, [suffixes[i] for i in batch], cache), strict=True))
        return [readings[i] for i in range(len(suffixes))]

    def _read_batch(self, prefix: list[int], suffixes: list[list[int]], cache: Any) -> list[CriticReading]:
        torch = self.torch
        width = max(len(s) for s in suffixes)
        rows = self._tensor([s + [self._pad_id()] * (width - len(s)) for s in suffixes])  # right padding
        full_mask = self._tensor([[1] * (len(prefix) + len(s)) + [0] * (width - len(s)) for s in suffixes])
        if cache is not None:
            past = copy.deepcopy(cache)
            past.batch_repeat_interleave(len(suffixes))
            hidden = self.lm.base_model(input_ids=rows, attention_mask=full_mask, past_key_values=past)
            offset = 0
        else:
            ids = torch.cat([self._tensor([prefix] * len(suffixes)), rows], dim=1)
            hidden = self.lm.base_model(input_ids=ids, attention_mask=full_mask)
            offset = len(prefix)
        # Only three positions per document are read: project those through the LM head, not every position
        # (full logits for 20 documents of 200 tokens are 4,000 x vocab floats and dominated the run time).
        ends = self._tensor([offset + len(s) - 1 for s in suffixes])  # position of [Fully supported]
        picks = torch.stack([ends - 2, ends - 1, ends], dim=1)  # after </paragraph>, [Relevant], [Fully supported]
        states = hidden.last_hidden_state[self._tensor(list(range(len(suffixes)))).unsqueeze(1), picks]
        read = self._label_rows(self.lm.get_output_embeddings()(states).flatten(0, 1))  # 3 rows per document
        return [
            CriticReading(
                relevance=self._group(read[3 * i], "relevance"),
                support=self._group(read[3 * i + 1], "support"),
                utility=self._group(read[3 * i + 2], "utility"),
            )
            for i in range(len(suffixes))
        ]

    def read_documents_by_generation(self, query: str, documents: Sequence[Passage]) -> list[CriticReading]:
        """The reference approach: greedy-generate up to ``baseline_max_tokens`` per document.

        Relevance is read at the first generated step; support and utility at
        the first step that emitted a token of their group (absent otherwise).
        """
        torch = self.torch
        prefix, suffixes = self.document_segments(query, documents)
        group_ids = {group: {self.ids[t] for t in _GROUPS[group]} for group in ("support", "utility")}
        readings = []
        for suffix in suffixes:
            ids = self._tensor([prefix + suffix[:-2]])  # up to </paragraph>: the model writes the rest
            with torch.no_grad():
                out = self.lm.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=self.settings.baseline_max_tokens,
                    do_sample=False,
                    pad_token_id=self._pad_id(),
                    return_dict_in_generate=True,
                    output_logits=True,
                )
            steps = self._label_rows(torch.cat(out.logits))  # one (1, vocab) row per generated step
            new = out.sequences[0, ids.shape[1] :].tolist()
            found: dict[str, dict[str, float]] = {}
            for step, token_id in zip(steps, new, strict=True):
                for group in ("support", "utility"):
                    if group not in found and token_id in group_ids[group]:
                        found[group] = self._group(step, group)
            readings.append(
                CriticReading(
                    relevance=self._group(steps[0], "relevance"),
                    support=found.get("support", {}),
                    utility=found.get("utility", {}),
                )
            )
        return readings

    def generate(self, prompt: str, max_tokens: int, temperature: float) -> str:
        """Continue ``prompt``; reflection tokens are kept in the text (post-processing removes them)."""
        return run_call(lambda: self._generate(prompt, max_tokens, temperature))

    def _generate(self, prompt: str, max_tokens: int, temperature: float) -> str:
        torch = self.torch
        ids = self._tensor([self._bos() + self.encode(prompt)])
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": temperature > 0}
        if (token := current_token()) is not None and (left := token.remaining()) is not None:
            kwargs["max_time"] = max(0.0, left)  # the stage's time: stop between two tokens, as llama.cpp does
        if temperature > 0:
            kwargs["temperature"] = temperature
            torch.manual_seed(self.seed)
        with torch.no_grad():
            out = self.lm.generate(input_ids=ids, attention_mask=torch.ones_like(ids), pad_token_id=self._pad_id(), **kwargs)
        drop = set(self.tokenizer.all_special_ids) - set(self.ids.values())  # pad/eos go, reflection tokens stay
        new = [i for i in out[0, ids.shape[1] :].tolist() if i not in drop]
        return str(self.tokenizer.decode(new, skip_special_tokens=False))


class NativeCritic:
    """The :class:`~core.selfrag.critic.Critic` protocol over a :class:`ReflectionModel` (batched)."""

    name = "native"
    batched = True  # the pipeline hands it every document at once (it batches by critic_batch_size itself)

    def __init__(self, model: ReflectionModel) -> None:
        self.model = model

    def retrieval(self, query: str) -> dict[str, float]:
        """[Retrieval] / [No Retrieval] as the first response token."""
        return run_call(lambda: self.model.next_logprobs(prompts.instruction_prompt(query), "retrieval"))

    def documents(self, query: str, documents: Sequence[Passage]) -> list[CriticReading]:
        """Every document in batched forward passes over a shared prefix."""
        return run_call(lambda: self.model.read_documents(query, documents))

    def utility(self, query: str, answer: str) -> dict[str, float]:
        """[Utility:i] as the next token after the answer."""
        return run_call(lambda: self.model.next_logprobs(prompts.instruction_prompt(query) + answer, "utility"))
