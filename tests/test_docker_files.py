"""Static checks of docker/ (no Docker engine here): the compose file and the Dockerfile."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from river_pa.connectors.config import ServeConfig, build_parser, from_args

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker" / "compose.yaml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_has_broker_learner_predictors_and_producer(compose):
    services = compose["services"]
    assert set(services) == {"kafka", "learn", "predict", "producer", "prometheus", "grafana"}
    assert {n for n, service in services.items() if "profiles" in service} == {
        "prometheus", "grafana"}  # only with --profile monitoring
    assert re.fullmatch(r"apache/kafka:4\.\d+\.\d+", services["kafka"]["image"])
    for name in ("learn", "predict", "producer"):
        build = services[name]["build"]
        assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
        assert services[name]["depends_on"]["kafka"]["condition"] == "service_healthy"
    env = services["kafka"]["environment"]
    voters = env["KAFKA_CONTROLLER_QUORUM_VOTERS"]
    assert voters.split("@")[1] in env["KAFKA_LISTENERS"].replace("CONTROLLER://", "kafka")


def parsed(service: dict) -> dict:
    """The settings of a daemon service: its flags (exits on an unknown one) and environment."""
    fields = {f.name for f in dataclasses.fields(ServeConfig)}
    for key in service["environment"]:
        assert key.startswith("RIVER_PA_") and key[len("RIVER_PA_"):].lower() in fields
    env = {k[len("RIVER_PA_"):].lower(): v for k, v in service["environment"].items()}
    return {**env, **{k: v for k, v in vars(build_parser().parse_args(service["command"])).items()
                      if v is not None}}


def test_daemon_flags_and_environment_are_real_settings(compose):
    learn, predict = parsed(compose["services"]["learn"]), parsed(compose["services"]["predict"])
    assert learn["role"] == "learn" and predict["role"] == "predict"
    assert learn["events_topic"] == predict["events_topic"] == "events"
    assert learn["labels_topic"] == "labels" and "labels_topic" not in predict
    assert learn["model_topic"] == predict["model_topic"]
    assert learn["group_id"] != predict["group_id"]  # the predictors share the events alone
    volumes = compose["services"]["learn"]["volumes"]
    assert volumes[0].split(":")[1] == str(Path(learn["report_path"]).parent)
    # scaled replicas: nothing that must be unique per container is fixed; with exactly-once
    # each derives its client id, and so its transactional id, from its container's host name
    service = compose["services"]["predict"]
    assert not {"container_name", "ports", "volumes"} & set(service)
    assert "transactional_id" not in predict and predict["exactly_once"] is True
    cfg = from_args(vars(build_parser().parse_args(service["command"])), service["environment"])
    assert cfg.client_id == predict["client_id"].replace("{hostname}", socket.gethostname())
    assert cfg.client_id != predict["client_id"] and cfg.transactional_id is None
    # two learners, an active one and a standby, each with its own checkpoint file and client
    # id, one transactional id and one state for the group: the new active learner fences the
    # old one and restores its state from the state topic
    service = compose["services"]["learn"]
    assert service["deploy"]["replicas"] == 2 and learn["exactly_once"] is True
    assert not learn["checkpoint_path"].startswith(volumes[0].split(":")[1] + "/")
    assert "transactional_id" not in learn and learn["state_topic"]
    cfg = from_args(vars(build_parser().parse_args(service["command"])), service["environment"])
    assert cfg.client_id == learn["client_id"].replace("{hostname}", socket.gethostname())
    assert cfg.transactional_id == f"{learn['group_id']}.learner"
    for name in ("learn", "predict"):  # probes on the metrics port
        assert parsed(compose["services"][name])["metrics_port"] == "9100"
        probe = compose["services"][name]["healthcheck"]["test"]
        assert probe[:3] == ["CMD", "python", "-c"] and "9100/livez" in probe[3]
    assert int(compose["services"]["kafka"]["environment"]["KAFKA_NUM_PARTITIONS"]) >= 3
    # checkpoints and snapshots are pickles: both sign or verify them, and refuse to start
    # without a key
    for name in ("learn", "predict"):
        key = compose["services"][name]["environment"]["RIVER_PA_CHECKPOINT_KEY"]
        assert key.startswith("${RIVER_PA_CHECKPOINT_KEY:?")


def _exported() -> dict[str, set[str]]:
    """{sample name: its label names} of every series a daemon's /metrics may show: the
    collector run on a daemon whose every figure is set (a learner watching drift, a dead
    letter, a lag, a model)."""
    from river import drift, metrics

    from river_pa.connectors.observe.metrics import collect
    from river_pa.connectors.observe.reporting import Stats

    from river_pa.connectors.models.challengers import Challenger, Duel
    from river_pa.linear_model import PAClassifier

    stats = Stats([metrics.Accuracy()], 10, drift.ADWIN())
    stats.score(True, True, None)
    stats.dead_letter("invalid_json")
    challenger = Challenger("c01", PAClassifier(), Stats([metrics.Accuracy()], 10, drift.ADWIN()),
                            Duel(10, 0.01, 5))
    figures = {**stats.snapshot(0), "challengers": {"c01": challenger.figures()},
               **dict.fromkeys(
        ("early_labels", "pending_bytes", "invalid_snapshots", "model_version", "model_learned",
         "model_age_s", "learned_since_model", "stale_s"), 1)}
    daemon = SimpleNamespace(cfg=ServeConfig(), slot=SimpleNamespace(name="PAClassifier"),
                             health=SimpleNamespace(lag={("events", 0): 1}),
                             figures=lambda: figures)
    series: dict[str, set[str]] = {}
    for family in collect(daemon):
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    return series


def test_every_dashboard_query_names_series_the_daemons_export(compose):
    """docker/grafana's dashboard: each panel queries the provisioned Prometheus, and each name
    in a query is a series of `/metrics` with its labels, or a label Prometheus adds to every
    series of the scrape (`prometheus.yml`)."""
    grafana, prometheus = compose["services"]["grafana"], compose["services"]["prometheus"]
    mounts = dict(v.split(":")[:2] for v in grafana["volumes"] + prometheus["volumes"])
    for source in mounts:
        assert (COMPOSE.parent / source).exists(), source
    home = Path(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    dashboards = COMPOSE.parent / next(s for s, t in mounts.items() if t == str(home.parent))
    provisioning = COMPOSE.parent / next(s for s, t in mounts.items() if t.endswith("provisioning"))
    [source] = yaml.safe_load((provisioning / "datasources/prometheus.yaml").read_text())[
        "datasources"]
    assert source["url"] == "http://prometheus:9090" and "9090:9090" in prometheus["ports"]
    [provider] = yaml.safe_load((provisioning / "dashboards/river-pa.yaml").read_text())[
        "providers"]
    assert provider["options"]["path"] == str(home.parent)
    scrape = yaml.safe_load((COMPOSE.parent / "prometheus.yml").read_text())["scrape_configs"]
    [job] = scrape
    [sd] = job["dns_sd_configs"]
    assert set(sd["names"]) == {"learn", "predict"} and sd["port"] == 9100  # RIVER_PA_METRICS_PORT
    added = {"instance", "job"} | {r["target_label"] for r in job["relabel_configs"]}
    series = _exported()
    panels = json.loads((dashboards / home.name).read_text())["panels"]
    assert len(panels) >= 10
    named = set()
    for panel in panels:
        assert panel["datasource"]["uid"] == source["uid"], panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            names = re.findall(r"\b(river_pa_\w+)", expr)
            assert names, expr
            labels = set().union(*(series.get(n, {n}) for n in names)) | added
            for name in names:
                assert name in series, f"{panel['title']}: {name} is not exported"
            used = set(re.findall(r"\{\{(\w+)\}\}", target["legendFormat"]))
            for group in re.findall(r"(?:by|on) \(([^)]*)\)", expr):
                used |= {label.strip() for label in group.split(",")}
            for matchers in re.findall(r"\{([^}]*)\}", expr.replace("{{", "")):
                used |= set(re.findall(r"(\w+)\s*=~?", matchers))
            assert used <= labels, f"{panel['title']}: {used - labels} are not labels of {names}"
            named.update(names)
    assert {"river_pa_drifts_total", "river_pa_labels_since_drift", "river_pa_metric",
            "river_pa_consumer_lag", "river_pa_dead_letters_total",
            "river_pa_challenger_errors_total", "river_pa_challenger_beats"} <= named


def test_producer_flags_are_the_example_producer_flags(compose, load_example):
    module = load_example("produce_elec2")
    producer = compose["services"]["producer"]
    args = module.build_parser().parse_args(producer["command"])
    assert producer["entrypoint"][-1] == "/app/examples/produce_elec2.py"
    assert args.data.startswith(producer["volumes"][0].rsplit(":", 2)[1] + "/")


def test_dockerfile_copies_existing_paths_and_runs_serve():
    text = DOCKERFILE.read_text()
    for line in re.findall(r"^COPY (?!--from=)(.+)$", text, flags=re.M):  # not a stage's
        for source in line.split()[:-1]:
            assert (ROOT / source).exists(), source
    assert 'ENTRYPOINT ["river-pa", "serve"]' in text


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client on this machine")
def test_docker_compose_config_accepts_the_file():
    plugin = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
    if plugin.returncode != 0:
        pytest.skip(f"docker client without the compose plugin: {plugin.stderr.strip()}")
    done = subprocess.run(["docker", "compose", "-f", str(COMPOSE), "config", "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_dockerfile_warms_the_numba_cache(tmp_path):
    """The build's warm-up commands, run here with the image's NUMBA_CACHE_DIR replaced, fill
    the cache with the kernels a later `river-pa evaluate` or `serve` loads instead of
    compiling (the libsvm parser, the compiled path, the per-event kernels)."""
    text = DOCKERFILE.read_text()
    assert re.search(r"^ENV NUMBA_CACHE_DIR=(\S+)$", text, flags=re.M)
    run = re.search(r"^RUN pip install (.+?)\n(?=\S)", text, flags=re.M | re.S).group(0)
    commands = [c.strip().rstrip("\\").strip() for c in run.split("&&")]
    warm = [c for c in commands if c.startswith(("printf", "river-pa"))]
    assert len(warm) == 4
    cache = tmp_path / "cache"
    # `river-pa` as installed beside this python (a venv's bin, on PATH only when activated)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PATH": path}
    script = " && ".join(warm).replace("/tmp/warm.svm", str(tmp_path / "warm.svm"))
    subprocess.run(["bash", "-c", script], check=True, env=env, capture_output=True, timeout=900)
    indexes = {p.stem.rsplit("-", 1)[0] for p in cache.rglob("*.nbi")}  # module.function-line
    assert {"_numba.learn_csr", "libsvm._parse"} <= indexes, sorted(indexes)
    # the per-event kernels, which the C step of the linear learners leaves some events to
    assert {"_numba.dot_sq_packed", "_numba.update_packed", "_numba.step_fits"} <= indexes
