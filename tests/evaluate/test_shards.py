"""`river-pa evaluate --shards N --mix-every K`: one shard is the plain run bit for bit, the
mixes are those of a hand-written loop, and flags that do not fit are usage errors."""

from __future__ import annotations

import pickle

import pytest
from river import datasets as river_datasets

import river_pa
from river_pa import cli
from river_pa.evaluate import datasets
from river_pa.evaluate.job import evaluate
from river_pa.evaluate.shards import evaluate_shards, shard_of

METRICS = {"binary": ["Accuracy", "F1", "LogLoss"], "multiclass": ["Accuracy", "MacroF1"]}


@pytest.mark.parametrize("data, make, delay", [
    ("phishing", lambda: river_pa.PAClassifier(C=0.1), 0),  # evaluate runs it compiled
    ("phishing", lambda: river_pa.PAClassifier(C=0.1, calibration="temperature"), 0),
    ("phishing", lambda: river_pa.PAClassifier(C=0.1), 25),
    ("image-segments", lambda: river_pa.PAMultiClassifier(C=0.01), 7),
])
def test_one_shard_is_the_plain_run_bit_for_bit(data, make, delay):
    source = datasets.load(data)
    plain = make()
    expected = evaluate(source, plain, METRICS[source.task], delay=delay, every=200)
    result, final = evaluate_shards(source, make(), METRICS[source.task], shards=1,
                                    mix_every=100, delay=delay, every=200)
    assert result.values == expected.values
    assert [r.values for r in result.rows] == [r.values for r in expected.rows]
    assert final.weights == plain.weights
    assert getattr(final, "intercept", None) == getattr(plain, "intercept", None)


@pytest.mark.parametrize("shard_by", ["round-robin", "key"])
def test_shards_learn_their_events_and_mix_every_k_labels(shard_by):
    events = list(river_datasets.Phishing().take(300))
    n, k = 3, 40
    copies = [river_pa.PAClassifier(C=0.1) for _ in range(n)]
    since, hits = [0] * n, 0
    for i, (x, y) in enumerate(events):  # the simulation by hand
        s = shard_of(i, n, shard_by)
        hits += copies[s].predict_one(x) == y
        copies[s].learn_one(x, y)
        since[s] += 1
        if (i + 1) % k == 0:
            mixed = river_pa.mix(copies, since)
            copies = [pickle.loads(pickle.dumps(mixed)) for _ in range(n)]
            since = [0] * n
    source = datasets.Data("phishing-300", "binary", [y for _, y in events],
                           [x for x, _ in events])
    result, final = evaluate_shards(source, river_pa.PAClassifier(C=0.1), ["Accuracy"],
                                    shards=n, mix_every=k, shard_by=shard_by)
    assert result.values["Accuracy"] == hits / len(events)
    assert final.weights == river_pa.mix(copies, since).weights
    assert result.path.endswith(f"{n} {shard_by} shards mixed every {k} labelled events "
                                "(7 mixes)")


def test_the_key_split_spreads_the_events():
    counts = [0] * 8
    for i in range(8000):
        counts[shard_of(i, 8, "key")] += 1
    assert min(counts) > 900 and max(counts) < 1100


@pytest.mark.parametrize("args, message", [
    (["--shards", "2", "--model", "KernelPAClassifier"],
     "river-pa evaluate: --shards: KernelPAClassifier cannot be mixed: its model is a set of "
     "support vectors"),
    (["--shards", "2", "--model", "RescaledExpClassifier"],
     "river-pa evaluate: --shards: RescaledExpClassifier cannot be mixed: its state restarts "
     "in epochs"),
    (["--shards", "0"], "river-pa evaluate: --shards must be from 1 to 1024, got 0"),
    (["--shards", "1000000000"], "river-pa evaluate: --shards must be from 1 to 1024, got "
                                 "1000000000"),
    (["--shards", "2", "--mix-every", "0"], "river-pa evaluate: --mix-every must be >= 1, got 0"),
    (["--mix-every", "10"], "river-pa evaluate: --mix-every and --shard-by need --shards"),
    (["--shards", "2", "--model", "PAClassifier", "--model", "PAMultiClassifier"],
     "river-pa evaluate: --shards takes one --model"),
])
def test_flags_that_do_not_fit_are_usage_errors(capsys, args, message):
    assert cli.main(["evaluate", "phishing", "--quiet", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err


def test_the_command_prints_the_shards(capsys):
    assert cli.main(["evaluate", "phishing", "--quiet", "--shards", "4", "--mix-every", "100",
                     "--param", "C=0.1", "--metric", "Accuracy"]) == 0
    out = capsys.readouterr().out
    assert "0.828800" in out and "shard_by" in out and "(12 mixes)" in out.replace("\n", " ")
