"""`river-pa serve` refuses at start, with one line and the README's status, before any I/O."""

from __future__ import annotations

import pytest

from river_pa import cli

NO_BROKER = ["--bootstrap-servers", "127.0.0.1:1"]  # never reached: each case stops before


@pytest.mark.parametrize("flag,value", [("--checkpoint-every", "0"), ("--max-record-bytes", "-1")])
def test_a_bad_flag_value_is_status_2_and_the_same_variable_status_1(capsys, monkeypatch, flag,
                                                                     value):
    assert cli.main(["serve", flag, value, *NO_BROKER]) == 2  # was 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"river-pa serve: argument {flag}: must be > 0, got '{value}'"]
    env = "RIVER_PA_" + flag[2:].replace("-", "_").upper()
    monkeypatch.setenv(env, value)
    assert cli.main(["serve", *NO_BROKER]) == 1
    assert f"{env}='{value}' is not valid" in capsys.readouterr().err


def test_a_boolean_variable_that_is_not_a_boolean_is_status_1(capsys, monkeypatch):
    monkeypatch.setenv("RIVER_PA_EXACTLY_ONCE", "maybe")  # silently meant false
    assert cli.main(["serve", *NO_BROKER]) == 1
    assert "RIVER_PA_EXACTLY_ONCE='maybe' is not valid" in capsys.readouterr().err


def test_a_model_that_fails_on_a_synthetic_event_is_refused_at_start(capsys):
    # served, then died with a traceback at the first labelled event, on every restart
    argv = ["serve", "--model", "river.linear_model:LogisticRegression",
            "--model-params", '{"optimizer": "x"}', *NO_BROKER]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["river-pa serve: model LogisticRegression fails on a synthetic event "
                   "{'river_pa_check': 1.0}: AttributeError: 'str' object has no attribute "
                   "'look_ahead'"]


def test_kafka_python_messages_about_normal_operation_are_dropped_and_real_ones_kept(caplog):
    import logging

    from kafka.errors import NotCoordinatorError, TopicAuthorizationFailedError

    from river_pa.connectors.kafka.diagnostics import quiet_normal_operation

    quiet_normal_operation()
    caplog.set_level(logging.WARNING)
    selector, coordinator = logging.getLogger("kafka.net.selector"), logging.getLogger("kafka.coordinator")
    # kafka-python 3.0's own templates: a busy machine, a group's first start
    selector.warning("Task %r ran for %.3fs (>%.3fs threshold). It is blocking the event loop"
                     % ("<Task poll>", 0.2, 0.1))
    coordinator.warning("Marking the coordinator dead (node %s) for group %s: %s.", 1, "g",
                        NotCoordinatorError())
    logging.getLogger("kafka.coordinator.assignors.range").warning(
        "No partition metadata for topic %s", "events")
    logging.getLogger("kafka.cluster").error("Topic %s not found in cluster metadata", "metrics")
    transport = logging.getLogger("kafka.net.transport")
    for error in (AttributeError("'NoneType' object has no attribute 'recv'"),
                  ConnectionResetError("reset by peer")):
        try:  # the socket close() set to None, read by the network thread (CI, a daemon's exit)
            raise error
        except Exception:
            transport.exception("%s: Error receiving network data closing socket", "<t>")
    assert caplog.messages == ["<t>: Error receiving network data closing socket"]
    caplog.clear()
    selector.warning("Selector got READ event without reader...")
    coordinator.warning("Marking the coordinator dead (node %s) for group %s: %s.", 1, "g",
                        TopicAuthorizationFailedError())
    assert len(caplog.messages) == 2


def test_a_max_poll_interval_the_batches_cannot_keep_is_status_2_naming_both(capsys, monkeypatch):
    # accepted, it livelocked: members expelled after every batch, batches served again for ever
    argv = ["serve", "--batch-seconds", "5", "--kafka", '{"max_poll_interval_ms": 3000}',
            *NO_BROKER]
    assert cli.main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "river-pa serve: max_poll_interval_ms=3000 is shorter than batch_seconds=5 s plus 30 s "
        "for the checkpoint after a batch: set max_poll_interval_ms >= 35000 or lower "
        "batch_seconds"]
    monkeypatch.setenv("RIVER_PA_KAFKA_MAX_POLL_INTERVAL_MS", "34999")  # the same from the
    monkeypatch.setenv("RIVER_PA_BATCH_SECONDS", "5")  # environment, one millisecond short
    assert cli.main(["serve", *NO_BROKER]) == 2
    assert "max_poll_interval_ms=34999" in capsys.readouterr().err


def test_a_max_poll_interval_that_fits_the_batches_is_taken():
    from river_pa.connectors.config import load_config

    cfg = load_config(["--batch-seconds", "0.5", "--kafka", '{"max_poll_interval_ms": 30500}'],
                      {})
    assert cfg.kafka["max_poll_interval_ms"] == 30_500
    with pytest.raises(SystemExit, match=r"max_poll_interval_ms must be a number of milliseconds"):
        load_config(["--kafka", '{"max_poll_interval_ms": 0}'], {})
    with pytest.raises(SystemExit, match=r"max_poll_interval_ms='soon' .*: must be a number"):
        load_config(["--kafka", '{"max_poll_interval_ms": "soon"}'], {})
