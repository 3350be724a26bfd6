"""Configuration precedence and the bounded pending-label store."""

from __future__ import annotations

import json
import pickle
import socket
import time
import tracemalloc

import orjson
import pytest

from river_pa.connectors.codec import decode_event, decode_label, label_check_for
from river_pa.connectors.config import load_config
from river_pa.connectors.errors import SettingsConflict
from river_pa.connectors.state.pending import Pending, PendingStore, entry_bytes
from river_pa.linear_model import PAClassifier
from river_pa.multiclass import PAMultiClassifier


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


def test_the_merge_waits_by_default_only_in_the_learner_and_never_for_ever(capsys):
    learn = load_config(["--role", "learn", "--events-topic", "ev"], {})
    both = load_config(["--events-topic", "ev"], {})
    assert (learn.merge_idle_ms, both.merge_idle_ms) == (500, 0)  # predictions not held back
    assert load_config(["--merge-idle-ms", "60000"], {}).merge_idle_ms == 60_000
    with pytest.raises(SystemExit) as exited:  # argparse's line naming the flag, status 2
        load_config(["--merge-idle-ms", "60001"], {})
    assert exited.value.code == 2
    assert "argument --merge-idle-ms: must be >= 0 and <= 60000, got '60001'" in \
        capsys.readouterr().err


def test_every_learner_of_a_group_shares_its_state_topic_and_transactional_id():
    learn = load_config(["--role", "learn", "--group-id", "g", "--events-topic", "ev",
                         "--client-id", "host-7"], {})
    assert (learn.state_topic, learn.transactional_id) == ("ev.state", "g.learner")
    both = load_config(["--group-id", "g", "--events-topic", "ev"], {})
    assert (both.state_topic, both.transactional_id) == (None, None)  # as before
    named = load_config(["--role", "learn", "--state-topic", "s", "--transactional-id", "t"], {})
    assert (named.state_topic, named.transactional_id) == ("s", "t")


def test_unknown_client_settings_are_refused_by_name():
    with pytest.raises(SystemExit, match=r"\['port'\]"):
        load_config([], {"RIVER_PA_KAFKA_PORT": "19092"})


def test_pending_store_evicts_by_size_and_event_time_ttl():
    store = PendingStore(max_size=2, ttl_ms=100, max_bytes=10**9)
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


@pytest.mark.parametrize("name,value,bound", [
    ("max_buffered", 0, "> 0"),  # was a silent stall
    ("rolling_window", 0, "> 0"),  # was an IndexError mid-stream
    ("max_poll_records", 0, "> 0"),
    ("checkpoint_every", 0, "> 0"),
    ("max_record_bytes", -1, "> 0"),
    ("pending_ttl_ms", -1, ">= 0"),
    ("metrics_port", -1, ">= 0"),
    ("liveness_seconds", 0, "> 0"),
])
def test_out_of_range_values_are_a_bad_flag_or_a_configuration_error(tmp_path, capsys, name,
                                                                      value, bound):
    # README: a bad flag is status 2 (argparse's error, naming the flag); the same value from
    # TOML or the environment is a configuration error (one line, status 1); flags gave 1
    flag = "--" + name.replace("_", "-")
    with pytest.raises(SystemExit) as exc:
        load_config([flag, str(value)], environ={})
    assert exc.value.code == 2
    assert f"argument {flag}: must be {bound}, got '{value}'" in capsys.readouterr().err
    path = tmp_path / "serve.toml"
    path.write_text(f"{name} = {value}\n")
    with pytest.raises(SystemExit, match=f"{name} must be {bound}, got {value}$"):
        load_config(["--config", str(path)], environ={})
    env = f"RIVER_PA_{name.upper()}"
    with pytest.raises(SystemExit, match=f"{env}='{value}' is not valid: must be {bound}"):
        load_config([], environ={env: str(value)})


@pytest.mark.parametrize("name", ["stall_exit_seconds", "batch_seconds", "liveness_seconds"])
@pytest.mark.parametrize("value", ["nan", "inf", "1e400"])
def test_a_value_that_is_not_finite_is_refused(tmp_path, capsys, name, value):
    # nan passed every comparison: --stall-exit-seconds nan meant never, --batch-seconds nan
    # was a traceback (cannot convert float NaN to integer)
    flag, shown = "--" + name.replace("_", "-"), "nan" if value == "nan" else "inf"
    with pytest.raises(SystemExit) as exc:
        load_config([flag, value], environ={})
    assert exc.value.code == 2
    assert f"argument {flag}: must be a finite number " in capsys.readouterr().err
    path = tmp_path / "serve.toml"
    path.write_text(f"{name} = {shown}\n")  # TOML's own nan and inf
    with pytest.raises(SystemExit, match=f"{name} must be a finite number .*, got {shown}$"):
        load_config(["--config", str(path)], environ={})


def test_a_stall_exit_a_healthy_loop_can_reach_is_refused_naming_the_bound():
    # accepted, the watchdog ended healthy daemons: an idle standby at 0.5 s (its poll waits
    # 500 ms), an active learner at 10 s waiting for end offsets while a broker restarted
    message = ("river-pa serve: stall_exit_seconds=35 is not above what a step of the loop may "
               "take, batch_seconds=5 s plus 30 s for the Kafka calls after a batch: set it "
               "above 35, or 0 never to exit")
    with pytest.raises(SettingsConflict) as exc:
        load_config(["--stall-exit-seconds", "35"], environ={})
    assert exc.value.code == message
    assert load_config(["--stall-exit-seconds", "35.5"], environ={}).stall_exit_seconds == 35.5
    assert load_config(["--stall-exit-seconds", "0"], environ={}).stall_exit_seconds == 0
    # the Kafka calls' bound is the clients' own timeouts: shorter ones lower it
    quick = ["--kafka", '{"request_timeout_ms": 2000, "max_block_ms": 2000}',
             "--batch-seconds", "1"]
    assert load_config([*quick, "--stall-exit-seconds", "3.5"], {}).stall_exit_seconds == 3.5
    with pytest.raises(SettingsConflict, match=r"above 3, or 0"):
        load_config([*quick, "--stall-exit-seconds", "3"], environ={})


def test_a_bad_auto_offset_reset_is_a_one_line_error():
    with pytest.raises(SystemExit, match="earliest or latest"):
        load_config([], {"RIVER_PA_AUTO_OFFSET_RESET": "bogus"})  # a flag: argparse's choices


@pytest.mark.parametrize("raw,value", [("1", True), ("TRUE", True), (" yes", True), ("On", True),
                                       ("0", False), ("false", False), ("NO", False), ("off", False)])
def test_boolean_variables_take_the_usual_spellings(raw, value):
    assert load_config([], {"RIVER_PA_EXACTLY_ONCE": raw}).exactly_once is value


@pytest.mark.parametrize("raw", ["maybe", "", "2", "yes please"])
def test_other_boolean_values_are_one_line_errors(raw):
    # 'maybe' silently meant false
    with pytest.raises(SystemExit, match=r"RIVER_PA_EXACTLY_ONCE=.* is not valid: a boolean takes "
                                         r"1/0, true/false, yes/no or on/off"):
        load_config([], {"RIVER_PA_EXACTLY_ONCE": raw})


def test_each_client_gets_the_settings_it_takes():
    from kafka import KafkaConsumer, KafkaProducer

    from river_pa.connectors.kafka.client import client_settings

    cfg = load_config(["--kafka", '{"max_poll_interval_ms": 60000, "linger_ms": 5, "client_rack": "r1",'
                                  ' "security_protocol": "PLAINTEXT"}'], {})
    assert client_settings(cfg.kafka, KafkaConsumer) == {
        "max_poll_interval_ms": 60000, "client_rack": "r1", "security_protocol": "PLAINTEXT"}
    assert client_settings(cfg.kafka, KafkaProducer) == {"linger_ms": 5, "security_protocol": "PLAINTEXT"}


@pytest.mark.parametrize("name", ["enable_auto_commit", "value_deserializer", "transactional_id"])
def test_settings_the_daemon_sets_itself_are_refused(name):
    with pytest.raises(SystemExit, match=rf"\['{name}'\]"):
        load_config(["--kafka", json.dumps({name: True})], {})


def wide_event(i: int, width: int = 7000, id_bytes: int = 0):
    rid = f"e{i}" + "i" * id_bytes
    raw = json.dumps({"id": rid, "x": {f"f{j}": j + 0.5 for j in range(width)}}).encode()
    return decode_event(raw, label_check_for(PAClassifier()), len(raw))


def held_by(make):
    """What `make()` returns and the memory it holds (traced allocations that outlive it)."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    value = make()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return value, held


@pytest.mark.parametrize("width,id_bytes", [(7000, 0), (5, 90_000)])
def test_entry_bytes_is_the_memory_an_event_holds(width, id_bytes):
    # ids were not counted: a 10 MB budget with 90 KB ids held a 360 MB checkpoint, 1.47 GB RSS
    event, held = held_by(lambda: wide_event(0, width, id_bytes))
    nbytes = entry_bytes(event.id, event.x, {False: 0.4, True: 0.6})
    assert 0.8 * held < nbytes < 1.25 * held + 1000  # + the entry and its slot: not in `held`


def test_entry_bytes_counts_an_early_label():
    # the early-labels store keeps the label as y_pred: a long string label was not counted
    check = label_check_for(PAMultiClassifier())
    label, held = held_by(lambda: decode_label(orjson.dumps({"id": "l" * 1000, "y": "y" * 90_000}),
                                               check, 10**6))
    assert 0.8 * held < entry_bytes(label.id, {}, label.y) < 1.25 * held + 1000


def test_pending_store_has_a_byte_budget():
    # 1,000 pending events of 7,000 features took 1.19 GB under the count bound alone
    events = [wide_event(i) for i in range(6)]
    size = entry_bytes(events[0].id, events[0].x, True)
    store = PendingStore(max_size=100_000, ttl_ms=None, max_bytes=int(3.5 * size))
    evicted = [store.add(e.id, Pending(e.x, True, 0)) for e in events]
    assert [len(e) for e in evicted] == [0, 0, 0, 1, 1, 1] and len(store) == 3
    assert store.nbytes == 3 * size
    store.pop("e5")
    assert store.nbytes == 2 * size
    assert load_config([], {}).pending_max_bytes == 256 * 2**20


def test_a_store_of_huge_ids_stays_within_its_budget():
    # a 10 MB budget held 4,000 events with 90 KB ids (a 360 MB checkpoint): each counted ~700 B
    budget, added = 2 * 2**20, 200

    def fill():
        store, evicted = PendingStore(max_size=100_000, ttl_ms=None, max_bytes=budget), 0
        for i in range(added):
            entry = Pending({"f": i + 0.5}, {False: 0.25, True: 0.75}, i)
            evicted += len(store.add(f"{i:06d}" + "i" * 90_000, entry))
        return store, evicted

    (store, evicted), held = held_by(fill)
    each = store.nbytes // len(store)  # every entry the same size
    assert len(store) == budget // each == added - evicted and store.nbytes <= budget
    assert evicted > added / 2  # 200 x 90 KB = 18 MB > 2 MB
    assert held < 1.5 * budget and len(pickle.dumps(store)) < 1.5 * budget  # RSS, checkpoint


def test_one_record_stamped_far_in_the_future_does_not_expire_the_store():
    # the store's clock jumped to the record's timestamp: every entry expired at once
    now = int(time.time() * 1000)
    store = PendingStore(max_size=100, ttl_ms=60_000, max_bytes=10**9)
    for i in range(5):
        store.add(f"e{i}", Pending({}, None, store.clock(now - 1000 * (4 - i))))
    year_3000 = 32_503_680_000_000
    assert store.expire(store.clock(year_3000)) == [] and len(store) == 5
    store.add("future", Pending({}, None, store.clock(year_3000)))
    assert store.pop("future").ts < now + 60_000  # nor does it sit unexpirable at the head
    assert [e.ts for e in store.expire(now + 57_500)] == [now - 4000, now - 3000]


def test_hostname_in_client_and_transactional_ids_and_the_metrics_port_range():
    # one setting for every replica of a scaled service, each with ids of its own
    host = socket.gethostname()
    cfg = load_config(["--client-id", "predict-{hostname}"],
                      {"RIVER_PA_TRANSACTIONAL_ID": "tx-{hostname}-1"})
    assert (cfg.client_id, cfg.transactional_id) == (f"predict-{host}", f"tx-{host}-1")
    assert load_config([], {}).metrics_port is None  # off by default
    assert load_config([], {"RIVER_PA_METRICS_PORT": "0"}).metrics_port == 0
    with pytest.raises(SystemExit, match=r"RIVER_PA_METRICS_PORT='65536' is not valid: must be a TCP port \(0-65535\)"):
        load_config([], {"RIVER_PA_METRICS_PORT": "65536"})  # a flag: argparse's error, status 2


@pytest.mark.parametrize("flag, value", [("--events-topic", "bad topic!"), ("--events-topic", ""),
                                         ("--predictions-topic", "bad!p"),
                                         ("--dead-letter-topic", "x" * 250),
                                         ("--model-topic", ".."), ("--labels-topic", "é")])
def test_a_topic_name_kafka_refuses_is_one_line(flag, value):
    # a traceback at start (events, labels) or at the first write (predictions, dead letters)
    name = flag[2:].replace("-", "_")
    with pytest.raises(SystemExit, match=f"^river-pa serve: {name} must be a Kafka topic name"):
        load_config([flag, value], environ={})


def test_optional_topics_may_be_off_and_legal_names_pass():
    cfg = load_config(["--metrics-topic", "", "--events-topic", "a.b_c-1"], environ={})
    assert (cfg.metrics_topic, cfg.events_topic, cfg.model_topic) == ("", "a.b_c-1", "a.b_c-1.model")


@pytest.mark.parametrize("settings, why", [
    ({"request_timeout_ms": "abc"}, "request_timeout_ms='abc' .*: must be a number"),
    ({"max_block_ms": -1}, "max_block_ms=-1 .*: must not be negative"),
    ({"linger_ms": 1.5}, "linger_ms=1.5 .*: must be a whole number"),
    ({"enable_idempotence": "yes"}, "enable_idempotence='yes' .*: must be true or false"),
    ({"security_protocol": 1}, "security_protocol=1 .*: must be a string"),
    ({"acks": "some"}, "acks='some' .*: must be 0, 1, -1 or \"all\""),
    ({"bootstrap_servers": "127.0.0.1:1"}, r"\['bootstrap_servers'\] .* --bootstrap-servers"),
])
def test_a_kafka_client_setting_of_the_wrong_kind_is_one_line(settings, why):
    # a new user's try: "abc" for a timeout was a TypeError traceback from kafka-python, -1 a
    # timeout "in -1 ms", and bootstrap_servers replaced --bootstrap-servers unseen
    with pytest.raises(SystemExit, match=f"^river-pa serve: Kafka client setting.*{why}"):
        load_config(["--kafka", json.dumps(settings)], environ={})


def test_kafka_client_settings_of_the_right_kind_pass():
    settings = {"acks": "all", "linger_ms": 5, "retries": 3, "enable_idempotence": True,
                "security_protocol": "PLAINTEXT", "max_block_ms": 10000}
    assert load_config(["--kafka", json.dumps(settings)], environ={}).kafka == settings
