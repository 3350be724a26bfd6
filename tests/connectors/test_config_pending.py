"""Configuration precedence and the bounded pending-label store."""

from __future__ import annotations

import pytest

from connectors.config import load_config
from connectors.pending import Pending, PendingStore


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
