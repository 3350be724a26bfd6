"""The serving quick start (docs/serving/quickstart.md) and the pipeline page
(docs/serving/pipelines.md) run as written against the test broker.

Their bash blocks run in one shell, unchanged but for the broker (the session's, not a second
`kafka.sh start`), the metrics ports (free ones), the names of topics and groups (this test's
own) and the paths (a temporary folder, the examples of this checkout)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from river import datasets, evaluate, metrics

from river_pa.registry import make_model

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "serving"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def script(doc: str, bootstrap: str, prefix: str, ports: dict[str, str]) -> str:
    blocks = re.findall(r"```bash\n(.*?)```", (DOCS / doc).read_text(), flags=re.S)
    text = "\n".join(line for line in "".join(blocks).splitlines()
                     if not line.startswith("bash scripts/kafka.sh "))
    text = text.replace("127.0.0.1:19092", bootstrap).replace("examples/", f"{ROOT}/examples/")
    for port, free in ports.items():
        text = text.replace(port, free)
    text = re.sub(r"(--events-topic |--events |--labels-topic |--labels )(\w+)",
                  rf"\1{prefix}-\2", text)
    for old, new in (("pa-learn", f"{prefix}-learn"), ("pa-predict", f"{prefix}-predict"),
                     ("shop-learn ", f"{prefix}-shop-learn "),
                     ("shop-predict ", f"{prefix}-shop-predict "),
                     ('"predictions"', f'"{prefix}-preds"'),
                     ("--role predict ", f"--role predict --predictions-topic {prefix}-preds ")):
        text = text.replace(old, new)
    return text


def test_the_serving_quick_start_runs_as_written(kafka, tmp_path):
    ports = {p: str(free_port()) for p in ("9101", "9102", "9103")}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-e", "-c", script("quickstart.md", kafka.bootstrap,
                                                       kafka.prefix, ports)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    logs = "\n".join(p.read_text()[-2000:] for p in sorted(tmp_path.glob("run/*.log")))
    assert done.returncode == 0, done.stderr + logs
    out = done.stdout
    assert f"created {kafka.prefix}-events (events topic): 2 partitions, replication 1" in out
    assert "river_pa_learned_total 1250.0" in out
    # the learner's accuracy is River's progressive validation with the labels 100 events late
    reference = evaluate.progressive_val_score(datasets.Phishing(), make_model("PAClassifier"),
                                               metrics.Accuracy(), delay=100)
    learner = json.loads((tmp_path / "run" / "learn.jsonl").read_text().splitlines()[-1])
    assert learner["learned"] == 1250 and learner["metrics"] == {"Accuracy": reference.get()}
    assert f'river_pa_metric{{metric="Accuracy",model="PAClassifier"}} {reference.get()}' in out
    for n in (1, 2):  # each predictor served a partition with a model the learner published
        report = json.loads((tmp_path / "run" / f"predict-{n}.jsonl").read_text().splitlines()[-1])
        assert report["events"] > 0 and report["model_version"] >= 1
    assert (tmp_path / "run" / "learn.png").stat().st_size > 0


def test_the_pipeline_page_runs_as_written(kafka, tmp_path):
    """After the quick start's broker and key: a learner and a predictor of the categorical
    pipeline of examples/, the learner's accuracy River's progressive validation of it."""
    ports = {p: str(free_port()) for p in ("9111", "9112")}
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT),  # --model examples.categorical_pipeline:model, from here
           "RIVER_PA_BOOTSTRAP_SERVERS": kafka.bootstrap, "RIVER_PA_CHECKPOINT_KEY": "k" * 64}
    (tmp_path / "run").mkdir()
    done = subprocess.run(["bash", "-e", "-c", script("pipelines.md", kafka.bootstrap,
                                                       kafka.prefix, ports)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    logs = "\n".join(p.read_text()[-2000:] for p in sorted(tmp_path.glob("run/*.log")))
    assert done.returncode == 0, done.stderr + logs
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from produce_elec2 import agrawal
    finally:
        sys.path.remove(str(ROOT / "examples"))
    reference = evaluate.progressive_val_score(
        agrawal(2000), make_model("examples.categorical_pipeline:model"), metrics.Accuracy(),
        delay=100)
    learner = json.loads((tmp_path / "run" / "shop-learn.jsonl").read_text().splitlines()[-1])
    assert learner["learned"] == 2000 and learner["metrics"] == {"Accuracy": reference.get()}
    assert f'river_pa_metric{{metric="Accuracy",model="Pipeline"}} {reference.get()}' in done.stdout
    # the page's river-pa evaluate of the same stream prints the same accuracy
    assert re.search(rf"Accuracy\W+{reference.get():.6f}", done.stdout), done.stdout[-3000:]
    report = json.loads((tmp_path / "run" / "shop-predict.jsonl").read_text().splitlines()[-1])
    assert report["events"] == 2000 and report["model_version"] >= 1 and \
        report["dead_lettered"] == 0
