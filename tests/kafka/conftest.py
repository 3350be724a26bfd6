"""Fixtures for the tests against a real Apache Kafka broker (scripts/kafka.sh; never mocks).

The broker is the one at RIVER_PA_KAFKA_BOOTSTRAP if set, otherwise the script's local broker,
started here when it is not up yet. Every test gets topic names of its own. Tests that stop
brokers have brokers of their own: the 3-broker cluster, or a private single broker on the
port 100 above the shared one. Each pytest-xdist worker has a cluster, a private broker and a
SASL broker of its own (`_worker_ports`); tests/conftest.py stops at the end of the run what
the run started.

"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import KafkaError
from kafka.structs import TopicPartition

from river_pa.connectors.kafka import CLIENTS  # --kafka-client
from river_pa.connectors.state import checkpoint
from river_pa.evaluate.datasets import shared_folder

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "kafka.sh"
# kafka.sh probes the broker with $PYTHON (python3 by default, which may lack kafka-python)
os.environ.setdefault("PYTHON", sys.executable)
ELEC2 = Path(os.environ.get("ELEC2_PATH", shared_folder() / "elec2" / "elec.csv.gz"))


def _worker_ports() -> None:
    """Give pytest-xdist's worker gwN (N > 0) a 3-broker cluster, a private broker and a SASL
    broker of its own, N*100 (the cluster) or N*10 ports above gw0's: tests that stop brokers
    must not stop them under another worker's tests. Every worker shares the one broker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    if os.environ.get("RIVER_PA_PORTS_OF") == worker:  # this module is imported twice
        return
    n, port = int(worker[2:]), int(os.environ.get("RIVER_PA_BROKER_PORT", "19092"))
    for key, default, step in (("RIVER_PA_CLUSTER_PORT", 19400, 100),
                               ("RIVER_PA_BROKER_SASL_PORT", port + 50, 10),
                               ("RIVER_PA_PRIVATE_BROKER_PORT", port + 100, 10)):
        os.environ[key] = str(int(os.environ.get(key, default)) + n * step)
    os.environ["RIVER_PA_PORTS_OF"] = worker


_worker_ports()
PRIVATE = {"RIVER_PA_BROKER_PORT": os.environ["RIVER_PA_PRIVATE_BROKER_PORT"]}


def broker_script(*command: str, env: dict | None = None) -> str:
    """Run scripts/kafka.sh COMMAND [ARG] (with `env` added to the environment, e.g. `PRIVATE`
    for the private broker) and return its standard output."""
    done = subprocess.run(["bash", str(SCRIPT), *command], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def ensure_up(status: str, start: str, stop: str, env: dict | None = None) -> str:
    """Start a broker (or the cluster) with kafka.sh's `start` command unless `status` says it
    is up, and return its bootstrap address. pytest-xdist's workers take turns (a lock file):
    two starts on one port would race. What is started here is written down for
    tests/conftest.py, which stops it at the end of the run (a worker cannot know whether
    another still uses it)."""
    home = Path(os.environ.get("RIVER_PA_BROKER_HOME", ROOT / ".cache" / "kafka"))
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "fixtures.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        down = subprocess.run(["bash", str(SCRIPT), status], capture_output=True,
                              env={**os.environ, **(env or {})})
        address = broker_script(start, env=env).splitlines()[-1]
        if down.returncode and "RIVER_PA_STARTED" in os.environ:
            started = Path(os.environ["RIVER_PA_STARTED"]) / f"{stop}-{address}"
            started.write_text(json.dumps([stop, env or {}]))
        return address


@pytest.fixture(scope="session")
def bootstrap():
    """host:port of a running broker (the script's, started if it is down)."""
    return os.environ.get("RIVER_PA_KAFKA_BOOTSTRAP") or ensure_up("status", "start", "stop")


@pytest.fixture(scope="session")
def cluster_bootstrap():
    """host:port,... of the script's 3-broker cluster (replication factor 3, min.insync.replicas
    2), started if it is down."""
    return ensure_up("cluster-status", "cluster-start", "cluster-stop",
                     {"RIVER_PA_CLUSTER_PORT": os.environ["RIVER_PA_CLUSTER_PORT"]})


@pytest.fixture
def private_bootstrap():
    """host:port of a broker for this test alone to stop and restart (the script's, on the
    port 100 above the shared one), started if a test before stopped it."""
    return ensure_up("status", "start", "stop", PRIVATE)


def java_string_hash(text: str) -> int:
    """Java's String.hashCode of `text` (over its UTF-16 code units, 32-bit signed)."""
    units = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def kafka_partition(key: str, partitions: int) -> int:
    """The partition of `__consumer_offsets` (a group) or `__transaction_state` (a
    transactional id) that holds `key`: Kafka's `Utils.abs(key.hashCode) % partitions`."""
    h = java_string_hash(key)
    return (0 if h == -2**31 else abs(h)) % partitions


def coordinator_nodes(bootstrap: str, group_id: str | None = None,
                      transactional_ids: list[str] | tuple = ()) -> dict:
    """The broker node ids (as `kafka.sh node-stop N` numbers them: node.id) that coordinate
    consumer group `group_id` and each transactional id, asked from the cluster now:
    ``{"group": n, "transactions": {tid: n, ...}}`` (``"group"`` only with a `group_id`).

    Kafka places a group on partition abs(hashCode(group_id)) % (partitions of
    __consumer_offsets) and a transactional id likewise on __transaction_state; the coordinator
    is that partition's leader. Read from a fresh metadata request, so the answer follows a
    leader change; it needs neither the group nor the transactional id to exist yet.
    """
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        leaders = {}
        for topic in admin.describe_topics(["__consumer_offsets", "__transaction_state"]):
            leaders[topic["name"]] = {p["partition_index"]: p["leader_id"]
                                      for p in topic["partitions"]}
    finally:
        admin.close()

    def leader(topic: str, key: str) -> int:
        partitions = leaders.get(topic)
        assert partitions, f"{topic} does not exist yet (no group or transaction used so far)"
        return partitions[kafka_partition(key, len(partitions))]

    out: dict = {"transactions": {t: leader("__transaction_state", t) for t in transactional_ids}}
    if group_id is not None:
        out["group"] = leader("__consumer_offsets", group_id)
    return out


def owns_partitions(member: dict) -> bool:
    """Whether a member of `KafkaAdminClient.describe_groups` holds a partition."""
    assignment = member.get("member_assignment") or {}
    return any(a["partitions"] for a in assignment.get("assigned_partitions", ()))


def pytest_generate_tests(metafunc):
    """A test marked `both_clients` runs once per client of `CLIENTS` (its daemons'
    `--kafka-client`); the others run on kafka-python, the default (the list of the marked
    ones, the subset CI runs on confluent-kafka too, is in README's "Kafka clients").
    A test marked `one_mode(exactly_once)` runs in that delivery mode only, or in both with
    `pytest --all-modes`: a long scenario whose other mode the fault harness covers
    (tests/faults, CI_RUNS: seeds of both modes, the same kinds of faults), to keep the suite
    within its 15 minutes."""
    if metafunc.definition.get_closest_marker("both_clients") \
            and "kafka_client" in metafunc.fixturenames:
        metafunc.parametrize("kafka_client", CLIENTS, indirect=True)
    one_mode = metafunc.definition.get_closest_marker("one_mode")
    if one_mode:
        modes = [False, True] if metafunc.config.getoption("all_modes") else list(one_mode.args)
        metafunc.parametrize("exactly_once", modes,
                             ids=["exactly-once" if m else "at-least-once" for m in modes])


@pytest.fixture
def kafka_client(request) -> str:
    """The `--kafka-client` of the daemons this test starts (see `pytest_generate_tests`)."""
    return getattr(request, "param", CLIENTS[0])


class Kafka:
    """Helpers over one broker: topics, producing, reading back, running the daemon (on
    `client`, its `--kafka-client`)."""

    def __init__(self, bootstrap: str, tmp_path: Path, replication: int = 1,
                 client: str = CLIENTS[0]):
        self.bootstrap = bootstrap
        self.tmp_path = tmp_path
        self.replication = replication
        self.client = client
        self.prefix = f"t{uuid.uuid4().hex[:10]}"
        self.daemons: dict[subprocess.Popen, str] = {}

    def topics(self, *names: str, partitions: int = 1, timeout_s: float = 120) -> list[str]:
        """Create fresh topics (unique per test) and return their full names. A cluster just
        (re)started may not know its controller yet (the soak met UnknownBrokerIdError): the
        creation is tried again until `timeout_s`, keeping what an earlier try created."""
        full = [f"{self.prefix}-{n}" for n in names]
        deadline = time.monotonic() + timeout_s
        while True:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
            try:
                missing = set(full) - set(admin.list_topics())
                if missing:
                    admin.create_topics([NewTopic(t, partitions, self.replication)
                                         for t in full if t in missing])
                return full
            except KafkaError as exc:
                assert time.monotonic() < deadline, f"topics {full} not created: {exc!r}"
                time.sleep(1.0)
            finally:
                admin.close()

    def producer(self, **kwargs) -> KafkaProducer:
        """A plain producer on the test broker."""
        return KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, **kwargs)

    def _reader(self, topic: str, committed_only: bool) -> KafkaConsumer:
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
            isolation_level="read_committed" if committed_only else "read_uncommitted")
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        return consumer

    def read_all(self, topic: str, committed_only: bool = False, timeout_s: float = 30) -> list:
        """Every record now in `topic` (all partitions), by partition then offset."""
        consumer = self._reader(topic, committed_only)
        try:
            parts = list(consumer.assignment())
            end = consumer.end_offsets(parts)
            out, deadline = [], time.monotonic() + timeout_s
            while any(consumer.position(tp) < end[tp] for tp in parts):
                assert time.monotonic() < deadline, f"could not read {topic} to its end"
                for records in consumer.poll(timeout_ms=500).values():
                    out.extend(records)
            return sorted(out, key=lambda r: (r.partition, r.offset))
        finally:
            consumer.close()

    def wait_for(self, topic: str, count: int, timeout_s: float = 120, committed_only=False,
                 proc: subprocess.Popen | None = None) -> int:
        """Poll `topic` until it holds at least `count` records; return how many it holds."""
        consumer = self._reader(topic, committed_only)
        seen, deadline = 0, time.monotonic() + timeout_s
        try:
            while seen < count:
                assert proc is None or proc.poll() is None, self.exited(proc)
                assert time.monotonic() < deadline, f"{topic}: {seen} of {count} records"
                seen += sum(len(r) for r in consumer.poll(timeout_ms=100).values())
            return seen
        finally:
            consumer.close()

    def wait_for_report(self, name: str, predicate, proc: subprocess.Popen,
                        timeout_s: float = 120) -> dict:
        """Wait until the last line of the daemon's JSONL report satisfies `predicate`."""
        path, deadline, report = self.tmp_path / name, time.monotonic() + timeout_s, None
        while True:
            if path.exists() and path.read_text().strip():
                report = self.last_report(name)
                if predicate(report):
                    return report
            assert proc.poll() is None, self.exited(proc)
            assert time.monotonic() < deadline, f"report never satisfied the test: {report}"
            time.sleep(0.2)

    def wait_group(self, group: str, members: int, timeout_s: float = 60) -> None:
        """Wait until the consumer group is Stable with `members` members, each holding a
        partition (Stable alone does not say a member's assignment gave it anything: a test
        that went on then could see one member serve every event); every daemon started by
        this test must stay alive meanwhile: a dead one is the failure to show."""
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                try:
                    info = admin.describe_groups([group])[group]
                except KafkaError as exc:  # the coordinator is still loading, or moving
                    info = {"group_state": repr(exc), "members": []}
                if info["group_state"] == "Stable" and len(info["members"]) == members \
                        and all(map(owns_partitions, info["members"])):
                    return
                for proc in self.daemons:
                    assert proc.returncode is not None or proc.poll() is None, self.exited(proc)
                assert time.monotonic() < deadline, f"group {group}: {info}"
                time.sleep(0.2)
        finally:
            admin.close()

    def wait_for_log(self, name: str, text: str, proc: subprocess.Popen, timeout_s: float = 60):
        """Wait until a daemon's output contains `text`."""
        deadline = time.monotonic() + timeout_s
        while text not in self.log(name):
            assert proc.poll() is None, self.exited(proc)
            assert time.monotonic() < deadline, f"{name} never logged {text!r}"
            time.sleep(0.2)

    def serve(self, *args: str, name: str = "d0") -> subprocess.Popen:
        """Start `river-pa serve` (python -m river_pa.connectors.cli) in a subprocess."""
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        log = open(self.tmp_path / f"{name}.log", "ab")
        client = () if self.client == CLIENTS[0] else ("--kafka-client", self.client)
        proc = subprocess.Popen(
            [sys.executable, "-m", "river_pa.connectors.cli", "--bootstrap-servers", self.bootstrap,
             "--client-id", name, "--report-seconds", "0.5", "--session-timeout-ms", "2000",
             *client, *args],
            cwd=self.tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.daemons[proc] = name
        return proc

    def exited(self, proc: subprocess.Popen) -> str:
        """Why a daemon is gone: its exit status and the end of its output."""
        lines = [line for line in self.log(self.daemons[proc]).splitlines()
                 if "WARNING kafka" not in line and "ERROR kafka.cluster" not in line]
        return f"daemon exited with {proc.returncode}:\n" + "\n".join(lines[-25:])

    def serve_stream(self, events: str, labels: str | None, preds: str, *extra: str,
                     name: str = "d0", group: str | None = None) -> subprocess.Popen:
        """Serve `events` (+ `labels`) into `preds`; report and checkpoint named after `name`."""
        args = ["--events-topic", events, "--predictions-topic", preds,
                "--group-id", group or f"{events}-{name}", "--metrics-topic", f"{events}-metrics",
                "--dead-letter-topic", f"{events}-dlq", "--report-path", f"{name}.jsonl",
                "--checkpoint-path", f"{name}.ckpt"]
        if labels:
            args += ["--labels-topic", labels]
        return self.serve(*args, *extra, name=name)

    def stop(self, proc: subprocess.Popen, sig=signal.SIGTERM, timeout_s: float = 60) -> int:
        """Send `sig` to a daemon and wait for it to exit; return its exit status."""
        proc.send_signal(sig)
        return proc.wait(timeout=timeout_s)

    def log(self, name: str = "d0") -> str:
        """The output of a daemon started with `serve(name=...)`."""
        return (self.tmp_path / f"{name}.log").read_text(errors="replace")

    def last_report(self, name: str = "report.jsonl") -> dict:
        """The last line of a daemon's JSONL report (a path relative to the daemon's folder)."""
        return json.loads((self.tmp_path / name).read_text().splitlines()[-1])

    def checkpoint_state(self, name: str) -> dict:
        """The state in a daemon's last checkpoint (unsigned; after its clean shutdown)."""
        path = self.tmp_path / f"{name}.ckpt"
        meta = json.loads(path.open("rb").readline())
        meta.pop("offsets"), meta.pop("sha256")
        return checkpoint.load(path, meta, None)

    def close(self) -> None:
        """Kill daemons the test left running."""
        for proc in self.daemons:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def delete_topics(self) -> None:
        """Delete every topic of this object's prefix (the daemons' own topics too): a soak of
        many schedules on one cluster grew it to 1,560 partitions."""
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            ours = [t for t in admin.list_topics() if t.startswith(f"{self.prefix}-")]
            if ours:
                admin.delete_topics(ours)
        finally:
            admin.close()


@pytest.fixture
def restart_broker(private_bootstrap):
    """A function that stops the private broker and starts it again (same data)."""
    def restart():
        broker_script("stop", env=PRIVATE)
        broker_script("start", env=PRIVATE)
    return restart


@pytest.fixture
def private(private_bootstrap, tmp_path, kafka_client):
    """A `Kafka` helper on the private broker (`private_bootstrap`)."""
    helper = Kafka(private_bootstrap, tmp_path, client=kafka_client)
    yield helper
    helper.close()


@pytest.fixture
def kafka(bootstrap, tmp_path, kafka_client):
    """A `Kafka` helper with unique topic names for this test."""
    helper = Kafka(bootstrap, tmp_path, client=kafka_client)
    yield helper
    helper.close()


@pytest.fixture
def cluster_node(cluster_bootstrap):
    """A function that stops ("stop", n) or starts ("start", n) node n (1-3) of the cluster;
    every node is up again after the test."""
    def act(what: str, node: int) -> None:
        broker_script(f"node-{what}", str(node))
    yield act
    broker_script("cluster-start")


@pytest.fixture
def cluster(cluster_bootstrap, tmp_path, kafka_client):
    """A `Kafka` helper on the 3-broker cluster (topics replicated 3 times)."""
    helper = Kafka(cluster_bootstrap, tmp_path, replication=3, client=kafka_client)
    yield helper
    helper.close()


@pytest.fixture(scope="session")
def elec2_path() -> Path:
    """The Elec2 data set shipped in shared/."""
    if not ELEC2.exists():
        pytest.fail(f"Elec2 not found at {ELEC2}; set ELEC2_PATH")
    return ELEC2
