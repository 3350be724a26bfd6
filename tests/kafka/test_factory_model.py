"""Any River estimator by import path: a regressor served with labels inline."""

from __future__ import annotations

import json

from river import evaluate, linear_model, metrics

from river_pa.connectors.replay import elec2, records, send_all

N_EVENTS = 2_000


def test_river_regressor_from_a_factory_path(kafka, elec2_path):
    # regress nswdemand on the other features
    rows = [({k: v for k, v in x.items() if k != "nswdemand"}, x["nswdemand"])
            for x, _ in elec2(str(elec2_path), N_EVENTS)]
    events, preds = kafka.topics("events", "preds")
    send_all(kafka.producer(), records(rows, None), events, None)
    proc = kafka.serve_stream(events, None, preds, "--model", "river.linear_model:LinearRegression",
                              "--metric", "MAE")
    report = kafka.wait_for_report("d0.jsonl", lambda r: r["learned"] == N_EVENTS, proc)
    assert kafka.stop(proc) == 0
    expected = evaluate.progressive_val_score(rows, linear_model.LinearRegression(), metrics.MAE())
    assert report["metrics"] == {"MAE": expected.get()}
    first = json.loads(kafka.read_all(preds)[0].value)
    assert first["model"] == "LinearRegression" and "proba" not in first
    final = kafka.last_report("d0.jsonl")  # written at shutdown, also sent to the metrics topic
    assert json.loads(kafka.read_all(f"{events}-metrics")[-1].value) == final
