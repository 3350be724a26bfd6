"""Reduced CoNLL-2000 chunking reproduction (examples/conll2000_chunking.py --quick).

The full run (all 8,936 training sentences, 5 passes, averaged PA-I, C = 1) measured overall
chunk F1 93.71 on the test set (91.90 without averaging). The reduced run here trains on the
first 1/8 of the training sentences (1,117 sentences, 26,407 tokens) for one pass and
evaluates on the whole test set: it measured 90.06 (NP 90.16, PP 95.20, VP 91.17). The run is
deterministic, so the floors are those measurements less 1 point, a margin for floating-point
differences between machines only; NP, PP and VP are the three types with > 4,000 chunks.

"""

from __future__ import annotations

import pytest

@pytest.fixture
def example(load_example):
    return load_example("conll2000_chunking")


def test_reduced_chunking_reproduction(example, tmp_path):
    if not example.DATA.exists():
        pytest.skip(f"CoNLL-2000 data not found at {example.DATA}")
    result = example.main(["--quick", "--out", str(tmp_path)])
    report = result["report"]
    assert result["sentences"] == 1117 and result["tokens"] == 26407
    assert 100 * report["micro avg"]["f1-score"] >= 89.0
    assert 100 * report["NP"]["f1-score"] >= 89.1
    assert 100 * report["PP"]["f1-score"] >= 94.2
    assert 100 * report["VP"]["f1-score"] >= 90.1
    # The online error falls along the first pass.
    errors = [e for _, e in result["curve"]]
    assert errors[-1] < errors[0]
    assert (tmp_path / "conll2000_chunking.png").stat().st_size > 0


def test_features_and_loader(example):
    assert example.shape("McDonald") == "XxXx" and example.shape("1,000") == "d,d"
    feats = example.features(["He", "runs"], ["PRP", "VBZ"])
    assert feats[0]["w-1=<s1>"] == 1 and feats[1]["p-1p=PRP|VBZ"] == 1
    assert feats[1]["s3=uns"] == 1 and len(feats[0]) == len(feats[1]) == 23
    if not example.DATA.exists():
        pytest.skip(f"CoNLL-2000 data not found at {example.DATA}")
    test = example.load("test")
    assert len(test) == 2012 and sum(len(s[0]) for s in test) == 47377
