"""A River pipeline with a categorical feature, served end to end (issue 23): numeric columns
scaled and a string column one-hot encoded in front of PAClassifier, given by `--model
hourly_pipeline:model` (a module in the daemons' folder; named so that no other test's module
of that name is in sys.modules already); a learner with a standby and a predictor, the labels
late on their own topic, the active learner SIGKILLed mid-stream."""

from __future__ import annotations

import json
import signal

from river_pa.connectors.replay import elec2, records, send_all
from river_pa.evaluate import datasets
from river_pa.evaluate.job import evaluate as river_pa_evaluate
from river_pa.registry import make_model
from tests.kafka.test_learner_failover import ACTIVE, STANDBY, learner

PIPELINE = """\
from river import compose, preprocessing
from river_pa import PAClassifier

model = (
    (compose.Select("nswprice", "nswdemand", "vicprice", "vicdemand", "transfer")
     | preprocessing.StandardScaler())
    + (compose.Select("hour") | preprocessing.OneHotEncoder())
) | PAClassifier()
"""
N_EVENTS, DELAY = 1_000, 100


def hourly(rows: list) -> list:
    """Elec2 with its half-hour `period` (0 to 1 in 47 steps) as a string: the hour."""
    return [({**{k: v for k, v in x.items() if k != "period"},
              "hour": f"h{round(x['period'] * 47) // 2:02d}"}, y) for x, y in rows]


def test_a_categorical_pipeline_is_served_and_learned_exactly_through_a_failover(
        kafka, elec2_path, monkeypatch):
    (kafka.tmp_path / "hourly_pipeline.py").write_text(PIPELINE)
    rows = hourly(elec2(str(elec2_path), N_EVENTS))
    events, labels, preds = kafka.topics("events", "labels", "preds", partitions=2)
    stream, producer = list(records(rows, DELAY)), kafka.producer()
    start_ms = stream[0][3]  # its time: the learner orders the partitions by event time
    no_hour = {"id": "no-hour", "x": {"nswprice": 0.1, "nswdemand": 0.2, "vicprice": 0.0,
                                      "vicdemand": 0.4, "transfer": 0.4}, "ts": start_ms}
    producer.send(events, key=b"no-hour", value=json.dumps(no_hour).encode(),
                  timestamp_ms=start_ms)
    half = len(stream) // 2
    send_all(producer, stream[:half], events, labels)  # the rest once the learner is gone
    model = ("--model", "hourly_pipeline:model")
    predictor = kafka.serve_stream(events, None, preds, "--role", "predict", *model, name="p")
    group = f"{events}-learn"
    a = learner(kafka, events, labels, "a", group, *model)
    kafka.wait_for_log("a", ACTIVE, a, 120)
    b = learner(kafka, events, labels, "b", group, *model)
    kafka.wait_for_log("b", STANDBY, b, 120)
    kafka.wait_for_report("a.jsonl", lambda r: r["labelled"] >= N_EVENTS // 3, a, 240)
    a.send_signal(signal.SIGKILL)
    a.wait()
    send_all(producer, stream[half:], events, labels)
    kafka.wait_for_log("b", ACTIVE, b, 120)
    report = kafka.wait_for_report("b.jsonl", lambda r: r["labelled"] == N_EVENTS, b, 240)
    # b restored a's state, pipeline included, and learned the second half
    assert N_EVENTS // 2 <= report["events_this_run"] < N_EVENTS
    kafka.wait_for(preds, N_EVENTS, proc=predictor)
    assert kafka.stop(b) == 0 and kafka.stop(predictor) == 0

    # the learner's progressive metric is `river-pa evaluate --delay`'s on the same stream
    path = kafka.tmp_path / "hourly.jsonl"
    path.write_text("".join(json.dumps({"x": x, "y": y}) + "\n" for x, y in rows))
    monkeypatch.chdir(kafka.tmp_path)  # where --model hourly_pipeline:model is found
    expected = river_pa_evaluate(datasets.load(str(path)), make_model("hourly_pipeline:model"),
                                 ["Accuracy"], delay=DELAY)
    assert report["metrics"] == expected.values
    # every event predicted by the predictor, with a model the learner published
    predictions = [json.loads(r.value) for r in kafka.read_all(preds)]
    assert sorted(p["id"] for p in predictions) == sorted(f"e{i}" for i in range(N_EVENTS))
    assert {p["model"] for p in predictions} == {"Pipeline"}
    # the event without the selected column: the pipeline's own KeyError, from each daemon
    # that met it, and nothing stopped
    dead = [dict(r.headers) for r in kafka.read_all(f"{events}-dlq")]
    assert dead and {(h["reason"], h["detail"]) for h in dead} == {
        (b"feature_rejected", b"KeyError: 'hour'")}
