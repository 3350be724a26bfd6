"""Configuration precedence and the bounded pending-label store."""

from __future__ import annotations

import json

import pytest

from river_pa.connectors.config import load_config
from river_pa.connectors.pending import Pending, PendingStore


def test_flags_beat_environment_beat_toml(tmp_path):
    toml = tmp_path / "serve.toml"
    toml.write_text('group_id = "from-toml"\nevents_topic = "toml-events"\nrolling_window = 7\n'
                    '[kafka]\nsecurity_protocol = "SASL_SSL"\nsasl_mechanism = "PLAIN"\n')
    env = {"RIVER_PA_GROUP_ID": "from-env", "RIVER_PA_EVENTS_TOPIC": "env-events",
           "RIVER_PA_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "RIVER_PA_EXACTLY_ONCE": "true",
           "RIVER_PA_KAFKA_SSL_CHECK_HOSTNAME": "false"}
    cfg = load_config(["--config", str(toml), "--events-topic", "flag-events",
                       "--model-params", '{"C": 0.5}'], env)
    assert (cfg.group_id, cfg.events_topic, cfg.rolling_window) == ("from-env", "flag-events", 7)
    assert cfg.kafka == {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
                         "ssl_check_hostname": False}
    assert cfg.exactly_once is True and cfg.model_params == {"C": 0.5}


def test_unknown_client_settings_are_refused_by_name():
    with pytest.raises(SystemExit, match=r"\['port'\]"):
        load_config([], {"RIVER_PA_KAFKA_PORT": "19092"})


def test_pending_store_evicts_by_size_and_event_time_ttl():
    store = PendingStore(max_size=2, ttl_ms=100)
    assert store.add("a", Pending({}, None, 0)) == []
    store.add("b", Pending({}, None, 50))
    evicted = store.add("c", Pending({}, None, 60))
    assert [e.ts for e in evicted] == [0] and len(store) == 2
    assert [e.ts for e in store.expire(155)] == [50]
    assert store.pop("c").ts == 60 and store.pop("c") is None


@pytest.mark.parametrize("toml,match", [
    ('checkpoint_every = "often"\n', "checkpoint_every must be an int"),  # crashed mid-stream
    ("report_seconds = true\n", "report_seconds must be a float"),
    ("model_params = 3\n", "model_params must be a dict"),
    ("exactly_once = 1\n", "exactly_once must be a bool"),
    ("x = \n", "cannot read --config"),  # a TOML syntax error was a traceback
])
def test_bad_toml_files_are_one_line_errors(tmp_path, toml, match):
    path = tmp_path / "serve.toml"
    path.write_text(toml)
    with pytest.raises(SystemExit, match=match):
        load_config(["--config", str(path)], environ={})


def test_a_missing_toml_file_and_non_object_model_params_are_one_line_errors(tmp_path):
    with pytest.raises(SystemExit, match="cannot read --config"):
        load_config(["--config", str(tmp_path / "nope.toml")], environ={})
    with pytest.raises(SystemExit, match="RIVER_PA_MODEL_PARAMS='\\[1\\]' is not valid"):
        load_config([], environ={"RIVER_PA_MODEL_PARAMS": "[1]"})  # was a TypeError traceback
    with pytest.raises(SystemExit, match="2"):  # argparse: "not a JSON object"
        load_config(["--model-params", "[1]"], environ={})


def test_good_toml_types_still_load(tmp_path):
    path = tmp_path / "serve.toml"
    path.write_text('checkpoint_every = 10\nbatch_seconds = 2\npending_ttl_ms = 5\nlabels_topic = "l"\n')
    cfg = load_config(["--config", str(path)], environ={})
    assert (cfg.checkpoint_every, cfg.batch_seconds, cfg.pending_ttl_ms, cfg.labels_topic) == (10, 2, 5, "l")


@pytest.mark.parametrize("name,raw", [("RIVER_PA_CHECKPOINT_EVERY", "often"),
                                      ("RIVER_PA_MODEL_PARAMS", "{C: 1}"),
                                      ("RIVER_PA_BATCH_SECONDS", "soon")])
def test_bad_environment_values_are_one_line_errors(name, raw):
    with pytest.raises(SystemExit, match=f"{name}="):
        load_config([], environ={name: raw})


def test_bad_model_params_flag_says_what_is_wrong(capsys):
    with pytest.raises(SystemExit):
        load_config(["--model-params", "{C: 0.5}"], environ={})
    err = capsys.readouterr().err  # was "invalid loads value: '{C: 0.5}'"
    assert "--model-params: not valid JSON" in err and "loads" not in err


@pytest.mark.parametrize("argv,match", [
    (["--max-buffered", "0"], "max_buffered must be > 0"),  # was a silent stall
    (["--rolling-window", "0"], "rolling_window must be > 0"),  # was an IndexError mid-stream
    (["--max-poll-records", "0"], "max_poll_records must be > 0"),
    (["--pending-ttl-ms", "-1"], "pending_ttl_ms must be >= 0"),
    (["--auto-offset-reset", "bogus"], "earliest or latest"),
])
def test_out_of_range_values_are_one_line_errors(argv, match):
    with pytest.raises(SystemExit, match=match):
        load_config(argv, environ={})


def test_each_client_gets_the_settings_it_takes():
    from kafka import KafkaConsumer, KafkaProducer

    from river_pa.connectors.kafka_io import client_settings

    cfg = load_config(["--kafka", '{"max_poll_interval_ms": 60000, "linger_ms": 5, "client_rack": "r1",'
                                  ' "security_protocol": "PLAINTEXT"}'], {})
    assert client_settings(cfg.kafka, KafkaConsumer) == {
        "max_poll_interval_ms": 60000, "client_rack": "r1", "security_protocol": "PLAINTEXT"}
    assert client_settings(cfg.kafka, KafkaProducer) == {"linger_ms": 5, "security_protocol": "PLAINTEXT"}


@pytest.mark.parametrize("name", ["enable_auto_commit", "value_deserializer", "transactional_id"])
def test_settings_the_daemon_sets_itself_are_refused(name):
    with pytest.raises(SystemExit, match=rf"\['{name}'\]"):
        load_config(["--kafka", json.dumps({name: True})], {})
