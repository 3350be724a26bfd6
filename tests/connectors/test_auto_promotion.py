"""`--auto-promote` on one of River's synthetic streams (issue 20), in the daemon's loop on the
in-memory topics of fake_kafka.py, with the default test (McNemar's exact test at 0.01 on the
last 1,000 labels, at least 500 of them; a cool-down of 5,000 labels): River's SEA generator
with 10% label noise, the served model `PAClassifier(C=0.01)` and a challenger that steps
harder, `PAClassifier(C=1)` (worse on a stationary stream: 0.70-0.74 against 0.75-0.78). When
the concept drifts (every label inverted from event POSITION on), the served model's drift
watch sees it within DETECTED labels and the challenger, which adapts faster, is promoted
within PROMOTED labels; on the stationary stream nothing is promoted (none in 20 seeds). The
suite runs seed 0; RIVER_PA_PROMOTION_SEEDS=20 runs the 20 of the figures below."""

from __future__ import annotations

import logging
import os
import re

import pytest
from river.datasets import synth

from river_pa.connectors.config import ServeConfig
from river_pa.connectors.loop.daemon import Daemon
from river_pa.connectors.replay import records
from river_pa.linear_model import PAClassifier
from tests.connectors.fake_kafka import serve_until_learned

N, POSITION, DELAY = 8000, 4000, 25
# labels after the drift; over 20 seeds: seen after 32/64/384 (min/median/max), promoted after
# 1000/1237/1858 in 19 (4 at the end of the cool-down, label 5000; seed 16: never)
DETECTED, PROMOTED = 400, 2000
SEEDS = range(int(os.environ.get("RIVER_PA_PROMOTION_SEEDS", 1)))


def sea(seed: int, drift: bool) -> list:
    """N events of SEA (variant 0: y = x0 + x1 <= 8, 10% of the labels flipped); with `drift`,
    every label from POSITION on inverted (an abrupt drift of the concept, P(y | x))."""
    rows = list(synth.SEA(variant=0, noise=0.1, seed=seed).take(N))
    return rows[:POSITION] + [(x, not y) for x, y in rows[POSITION:]] if drift else rows


def watch(fake_clients, tmp_path, caplog, rows, **settings) -> tuple[list, list]:
    """Serve `rows` with --auto-promote (and `settings`); the (model, label) of each drift and
    each promotion."""
    caplog.set_level(logging.INFO, "river_pa.serve")
    fake_clients.topic("ev"), fake_clients.topic("lab")
    fake_clients.send_all(records(rows, DELAY, start_ms=0), "ev", "lab")
    cfg = ServeConfig(model="PAClassifier", model_params={"C": 0.01}, events_topic="ev",
                      labels_topic="lab", predictions_topic="preds", metrics_topic=None,
                      report_path=None, checkpoint_path=str(tmp_path / "ckpt"),
                      checkpoint_every=1000, **{
                          "challenger": ['agile=PAClassifier{"C": 1.0}'], "auto_promote": True,
                          **settings})
    serve_until_learned(Daemon(cfg, PAClassifier(C=0.01)), N)
    drifts, promotions = [], []
    for record in caplog.records:
        message = record.getMessage()
        if found := re.match(r"drift \d+: the errors rose \(\w+, model (.+?), label (\d+)",
                             message):
            drifts.append((found[1], int(found[2])))
        elif found := re.match(r"(.+) promoted by --auto-promote .* at label (\d+):", message):
            promotions.append((found[1], int(found[2])))
    return drifts, promotions


@pytest.mark.parametrize("seed", SEEDS)
def test_a_drift_is_seen_and_the_challenger_that_adapts_is_promoted(fake_clients, tmp_path,
                                                                   caplog, seed):
    drifts, promotions = watch(fake_clients, tmp_path, caplog, sea(seed, drift=True))
    seen = [label for name, label in drifts if name == "PAClassifier"]
    assert seen and POSITION < seen[0] <= POSITION + DETECTED, drifts
    assert promotions and promotions[0][0] == "agile", promotions
    assert POSITION < promotions[0][1] <= POSITION + PROMOTED, promotions


@pytest.mark.parametrize("seed", SEEDS)
def test_nothing_is_promoted_on_a_stationary_stream(fake_clients, tmp_path, caplog, seed):
    _, promotions = watch(fake_clients, tmp_path, caplog, sea(seed, drift=False))
    assert promotions == []


# --on-drift challenger, no --challenger: the drift's fresh copy of PAClassifier(C=0.01) is
# promoted; over 20 seeds: 20 copies started 32/64/384 labels after the drift (min/median/max),
# each promoted 1000/1000/1379 labels after it (the cool-down ends at label 5000), one promotion
# per run; on the 20 stationary streams no drift, so no copy and no promotion
FRESH = {"challenger": [], "on_drift": "challenger"}
FRESH_PROMOTED = 2000


@pytest.mark.parametrize("seed", SEEDS)
def test_on_drift_challenger_promotes_the_fresh_copy_the_drift_started(fake_clients, tmp_path,
                                                                      caplog, seed):
    drifts, promotions = watch(fake_clients, tmp_path, caplog, sea(seed, drift=True), **FRESH)
    first = next(label for name, label in drifts if name == "PAClassifier" and label > POSITION)
    assert promotions and promotions[0][0] == f"fresh-{first}", (drifts, promotions)
    assert first < promotions[0][1] <= POSITION + FRESH_PROMOTED, promotions


@pytest.mark.parametrize("seed", SEEDS)
def test_on_drift_challenger_promotes_nothing_on_a_stationary_stream(fake_clients, tmp_path,
                                                                    caplog, seed):
    _, promotions = watch(fake_clients, tmp_path, caplog, sea(seed, drift=False), **FRESH)
    assert promotions == []
