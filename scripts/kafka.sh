#!/usr/bin/env bash
# Local single-node Apache Kafka (KRaft, broker+controller) for development, tests and CI.
#
#   scripts/kafka.sh start    fetch jars (once, via Maven), format storage, start, wait for a client
#   scripts/kafka.sh stop     SIGTERM the broker started here, wait for it to exit
#   scripts/kafka.sh status   exit 0 when a client can reach the broker
#   scripts/kafka.sh reset    stop it and delete its data (every topic, offset and group): a
#                             broker left with a test suite's hundreds of partitions can take
#                             longer than RIVER_PA_BROKER_WAIT to start again
#   scripts/kafka.sh fetch    only download the jars into the cache
#   scripts/kafka.sh cluster-start|cluster-stop|cluster-status|cluster-reset
#                             a 3-broker KRaft cluster on loopback ports (see the section below)
#   scripts/kafka.sh node-stop N | node-start N   stop or start node N (1-3) of that cluster
#   scripts/kafka.sh sasl-start|sasl-stop|sasl-status
#                             the same for a second broker whose only listener is SASL_PLAINTEXT
#                             (PLAIN) with ACLs enforced (StandardAuthorizer), for auth tests
#
# Environment (RIVER_PA_BROKER_*, not RIVER_PA_KAFKA_*: the daemon reads those as client settings):
# RIVER_PA_BROKER_PORT (19092; the controller uses PORT+1),
# RIVER_PA_BROKER_VERSION (4.1.1), RIVER_PA_BROKER_HOME (.cache/kafka),
# RIVER_PA_BROKER_WAIT (seconds to wait for readiness, 90), RIVER_PA_CLUSTER_PORT (19400: the
# cluster's nodes listen on 19400-19402, their controllers on 19410-19412).
# SASL broker: RIVER_PA_BROKER_SASL_PORT (PORT+50; its controller uses +1) and
# RIVER_PA_BROKER_SASL_USERS="admin:pw,alice:pw2" (required: made up by the caller; the first
# user is the super user the broker itself logs in as, the others have no ACL until granted).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${RIVER_PA_BROKER_VERSION:-4.1.1}"
LOG4J_VERSION="${RIVER_PA_BROKER_LOG4J_VERSION:-2.24.3}"
HOME_DIR="${RIVER_PA_BROKER_HOME:-$ROOT/.cache/kafka}"
PORT="${RIVER_PA_BROKER_PORT:-19092}"
CONTROLLER_PORT="$((PORT + 1))"
BOOTSTRAP="127.0.0.1:$PORT"
WAIT="${RIVER_PA_BROKER_WAIT:-90}"
LIBS="$HOME_DIR/libs-$VERSION"
RUN="$HOME_DIR/run-$PORT"
PIDFILE="$RUN/kafka.pid"
PYTHON="${PYTHON:-python3}"

log() { echo "kafka.sh: $*" >&2; }

fetch() {
  [[ -f "$LIBS/.complete" ]] && return 0
  command -v mvn >/dev/null || { log "Maven (mvn) is required to fetch the broker jars"; exit 1; }
  mkdir -p "$HOME_DIR"
  local pom="$HOME_DIR/pom-$VERSION.xml"
  cat >"$pom" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.river-pa</groupId><artifactId>kafka-runtime</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>$LOG4J_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
POM
  log "fetching Kafka $VERSION jars into $LIBS"
  rm -rf "$LIBS.tmp"
  # stdout carries only the broker address (callers read it): Maven talks on stderr, without colours
  mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$LIBS.tmp" >&2
  rm -rf "$LIBS" && mv "$LIBS.tmp" "$LIBS" && touch "$LIBS/.complete"
}

probe() {  # exit 0 when a kafka-python admin client lists topics within the timeout
  "$PYTHON" - "$BOOTSTRAP" <<'PY' >/dev/null 2>&1
import sys
from kafka import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=3000,
                         bootstrap_timeout_ms=3000, client_id="river-pa-probe")
admin.list_topics()
admin.close()
PY
}

write_config() { plain_write_config; }

plain_write_config() {
  mkdir -p "$RUN/data"
  cat >"$RUN/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$RUN/data
num.partitions=1
default.replication.factor=1
offsets.topic.num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
min.insync.replicas=1
group.min.session.timeout.ms=1000
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
log.retention.ms=-1
PROPS
  write_log4j "$RUN"
}

write_log4j() {  # the broker's log4j2 configuration in folder $1 (logs to $1/server.log)
  cat >"$1/log4j2.properties" <<LOG
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $1/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache
logger.apache.level = WARN
LOG
}

java_cmd() {  # runs in a subshell when backgrounded: exec keeps the pid of that subshell
  exec java -Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$RUN/log4j2.properties" -cp "$LIBS/*" "$@"
}

running_pid() {  # print the pid of the broker started here, if it is alive (and still ours)
  [[ -f "$PIDFILE" ]] || return 1
  local pid args; pid="$(cat "$PIDFILE")"
  args="$(ps -ww -p "$pid" -o args= 2>/dev/null)" || return 1  # -ww: never cut to $COLUMNS
  [[ "$args" == *"kafka.Kafka $RUN/server.properties"* ]] && echo "$pid"
}

start() {
  if probe; then log "broker already up on $BOOTSTRAP"; echo "$BOOTSTRAP"; return 0; fi
  fetch
  write_config
  (java_cmd kafka.tools.StorageTool format -t "river-pa-test-cluster0" -c "$RUN/server.properties" \
    --ignore-formatted) >"$RUN/format.log" 2>&1 || { cat "$RUN/format.log" >&2; exit 1; }
  if ! running_pid >/dev/null; then
    (java_cmd kafka.Kafka "$RUN/server.properties") >"$RUN/stdout.log" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
  fi
  local deadline=$((SECONDS + WAIT))
  until probe; do
    if ! running_pid >/dev/null; then log "broker exited; see $RUN/stdout.log"; tail -20 "$RUN/stdout.log" >&2; exit 1; fi
    if ((SECONDS > deadline)); then log "broker not ready after ${WAIT}s; see $RUN/server.log"; exit 1; fi
    sleep 0.5
  done
  log "broker up on $BOOTSTRAP (pid $(cat "$PIDFILE"))"
  echo "$BOOTSTRAP"
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then log "no broker started here is running"; rm -f "$PIDFILE"; return 0; fi
  kill -TERM "$pid"
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then log "broker did not stop in 30s; SIGKILL"; kill -KILL "$pid"; fi
  rm -f "$PIDFILE"
  log "broker stopped"
}

reset() {  # the next start formats a new, empty log directory
  stop
  rm -rf "$RUN"
  log "deleted $RUN"
}

status() {
  if probe; then echo "up $BOOTSTRAP"; else echo "down $BOOTSTRAP"; return 1; fi
}

# ---- a 3-broker KRaft cluster on loopback (replication factor 3, min.insync.replicas 2) ----
# Each node is broker and controller: node N (1-3) listens on CLUSTER_PORT+N-1 and its
# controller on CLUSTER_PORT+10+N-1; its data, config and logs are in $CLUSTER_RUN/nN.
CLUSTER_PORT="${RIVER_PA_CLUSTER_PORT:-19400}"
CLUSTER_RUN="$HOME_DIR/cluster-$CLUSTER_PORT"
CLUSTER_NODES=(1 2 3)

cluster_bootstrap() {
  local out=() n
  for n in "${CLUSTER_NODES[@]}"; do out+=("127.0.0.1:$((CLUSTER_PORT + n - 1))"); done
  (IFS=,; echo "${out[*]}")
}

cluster_config() {  # write node $1's server.properties (and the shared log4j2 config)
  local n="$1" dir="$CLUSTER_RUN/n$1" voters=() m
  for m in "${CLUSTER_NODES[@]}"; do voters+=("$m@127.0.0.1:$((CLUSTER_PORT + 10 + m - 1))"); done
  mkdir -p "$dir/data"
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$(IFS=,; echo "${voters[*]}")
listeners=PLAINTEXT://127.0.0.1:$((CLUSTER_PORT + n - 1)),CONTROLLER://127.0.0.1:$((CLUSTER_PORT + 10 + n - 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$((CLUSTER_PORT + n - 1))
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.num.partitions=1
offsets.topic.replication.factor=3
transaction.state.log.num.partitions=1
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
group.min.session.timeout.ms=1000
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
log.retention.ms=-1
PROPS
  write_log4j "$dir"
}

node_pid() {  # the pid of cluster node $1 started here, if alive
  local dir="$CLUSTER_RUN/n$1" pid args
  [[ -f "$dir/kafka.pid" ]] || return 1
  pid="$(cat "$dir/kafka.pid")"
  args="$(ps -ww -p "$pid" -o args= 2>/dev/null)" || return 1
  [[ "$args" == *"kafka.Kafka $dir/server.properties"* ]] && echo "$pid"
}

node_start() {  # start cluster node $1 (formatting its storage once)
  local n="$1" dir="$CLUSTER_RUN/n$1"
  node_pid "$n" >/dev/null && return 0
  cluster_config "$n"
  (RUN="$dir"; java_cmd kafka.tools.StorageTool format -t "river-pa-test-cluster3" \
    -c "$dir/server.properties" --ignore-formatted) >"$dir/format.log" 2>&1 \
    || { cat "$dir/format.log" >&2; exit 1; }
  (RUN="$dir"; java_cmd kafka.Kafka "$dir/server.properties") >"$dir/stdout.log" 2>&1 </dev/null &
  echo $! >"$dir/kafka.pid"
}

node_stop() {  # SIGTERM cluster node $1 and wait for it to exit (up to $2 seconds, 30)
  local pid dir="$CLUSTER_RUN/n$1" grace="${2:-30}"
  pid="$(node_pid "$1")" || { rm -f "$dir/kafka.pid"; return 0; }
  kill -TERM "$pid"
  for _ in $(seq 1 $((grace * 4))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then log "node $1 did not stop in ${grace}s; SIGKILL"; kill -KILL "$pid"; fi
  rm -f "$dir/kafka.pid"
  log "cluster node $1 stopped"
}

cluster_ready() {  # exit 0 when every node answers a client and all of them are in the cluster
  "$PYTHON" - "$(cluster_bootstrap)" "${#CLUSTER_NODES[@]}" <<'PY' >/dev/null 2>&1
import sys
from kafka import KafkaAdminClient
for address in sys.argv[1].split(","):
    admin = KafkaAdminClient(bootstrap_servers=address, request_timeout_ms=3000,
                             bootstrap_timeout_ms=3000, client_id="river-pa-probe")
    brokers = admin.describe_cluster()["brokers"]
    admin.close()
    assert len(brokers) == int(sys.argv[2]), brokers
PY
}

cluster_wait() {
  local deadline=$((SECONDS + WAIT)) n
  until cluster_ready; do
    for n in "${CLUSTER_NODES[@]}"; do
      node_pid "$n" >/dev/null || { log "node $n exited; see $CLUSTER_RUN/n$n/stdout.log"; exit 1; }
    done
    if ((SECONDS > deadline)); then log "cluster not ready after ${WAIT}s; see $CLUSTER_RUN/n*/server.log"; exit 1; fi
    sleep 0.5
  done
  log "cluster up on $(cluster_bootstrap)"
  cluster_bootstrap
}

cluster_start() {
  fetch
  local n
  for n in "${CLUSTER_NODES[@]}"; do node_start "$n"; done
  cluster_wait
}

cluster_stop() {  # all nodes at once, 10 s each: the last one waits for a quorum that is gone
  local n
  for n in "${CLUSTER_NODES[@]}"; do node_stop "$n" 10 & done
  wait
}

node_number() {  # validate a node number argument
  [[ "${1:-}" =~ ^[1-3]$ ]] || { echo "usage: $0 node-stop|node-start 1|2|3" >&2; exit 2; }
}

# ---- the SASL_PLAINTEXT broker: same start/stop/status, other port, config and probe --------

sasl_mode() {
  [[ -n "${RIVER_PA_BROKER_SASL_USERS:-}" ]] || { log "set RIVER_PA_BROKER_SASL_USERS=admin:pw,user:pw"; exit 2; }
  PORT="${RIVER_PA_BROKER_SASL_PORT:-$((PORT + 50))}"
  CONTROLLER_PORT="$((PORT + 1))"
  BOOTSTRAP="127.0.0.1:$PORT"
  RUN="$HOME_DIR/run-sasl-$PORT"
  PIDFILE="$RUN/kafka.pid"
  IFS=, read -r -a SASL_USERS <<<"$RIVER_PA_BROKER_SASL_USERS"
  SASL_ADMIN="${SASL_USERS[0]%%:*}"; SASL_ADMIN_PW="${SASL_USERS[0]#*:}"
  write_config() { sasl_write_config; }
  probe() { sasl_probe; }
}

sasl_write_config() {
  rm -rf "$RUN/data"  # users live in the config: a fresh cluster for each start
  plain_write_config
  local users="" entry
  for entry in "${SASL_USERS[@]}"; do users+=" user_${entry%%:*}=\"${entry#*:}\""; done
  local jaas="org.apache.kafka.common.security.plain.PlainLoginModule required username=\"$SASL_ADMIN\" password=\"$SASL_ADMIN_PW\"$users;"
  sed -i -e "s#^listeners=.*#listeners=SASL_PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT#" \
    -e "s#^advertised.listeners=.*#advertised.listeners=SASL_PLAINTEXT://127.0.0.1:$PORT#" \
    -e "s#^listener.security.protocol.map=.*#listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT#" \
    -e "s#^inter.broker.listener.name=.*#inter.broker.listener.name=SASL_PLAINTEXT#" "$RUN/server.properties"
  cat >>"$RUN/server.properties" <<PROPS
sasl.enabled.mechanisms=PLAIN
sasl.mechanism.inter.broker.protocol=PLAIN
sasl.mechanism.controller.protocol=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=$jaas
listener.name.controller.plain.sasl.jaas.config=$jaas
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:$SASL_ADMIN
allow.everyone.if.no.acl.found=false
PROPS
}

sasl_probe() {
  "$PYTHON" - "$BOOTSTRAP" "$SASL_ADMIN" "$SASL_ADMIN_PW" <<'PY' >/dev/null 2>&1
import sys
from kafka import KafkaAdminClient
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=3000,
                         bootstrap_timeout_ms=3000, client_id="river-pa-probe",
                         security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                         sasl_plain_username=sys.argv[2], sasl_plain_password=sys.argv[3])
admin.list_topics()
admin.close()
PY
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  reset) reset ;;
  status) status ;;
  fetch) fetch ;;
  cluster-start) cluster_start ;;
  cluster-stop) cluster_stop ;;
  cluster-reset) cluster_stop; rm -rf "$CLUSTER_RUN"; log "deleted $CLUSTER_RUN" ;;
  cluster-status) if cluster_ready; then echo "up $(cluster_bootstrap)"; else echo "down $(cluster_bootstrap)"; exit 1; fi ;;
  node-stop) node_number "${2:-}"; node_stop "$2" ;;
  node-start) node_number "${2:-}"; node_start "$2"; cluster_wait ;;
  sasl-start) sasl_mode; start ;;
  sasl-stop) sasl_mode; stop ;;
  sasl-status) sasl_mode; status ;;
  *) echo "usage: $0 start|stop|reset|status|fetch|sasl-start|sasl-stop|sasl-status|cluster-start|cluster-stop|cluster-reset|cluster-status|node-stop N|node-start N" >&2; exit 2 ;;
esac
