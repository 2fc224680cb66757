#!/usr/bin/env bash
# Starts, stops and checks the project's own Kafka (KRaft, single node) and Redis on loopback.
# Idempotent: a running service is left alone. Logs and data live under $STACK_DIR (git-ignored).
# On request (`redis-cluster`, never by default), a 3-master / 3-replica Redis Cluster from the
# same redis-server, on REDIS_CLUSTER_PORT_BASE (17001) .. +5. On request too (`kafka-cluster`),
# three KRaft brokers (each also a controller) from the same jars, as production runs Kafka:
# node N listens on KAFKA_CLUSTER_PORT_BASE (19111) + 2(N-1), its controller on the port after.
# `start kafka-cluster` starts the nodes that are not running (a killed one comes back);
# `stop kafka-cluster N` stops node N alone (a rolling restart).
# On request too (`registry`, or `start all+registry`), Apicurio Registry (a Confluent-compatible
# schema registry) from Maven Central on REGISTRY_PORT (18081), its management interface on
# REGISTRY_MANAGEMENT_PORT (18082; Quarkus takes 9000 otherwise), schemas kept in an embedded H2
# file under $STACK_DIR/registry so a restart keeps their ids.
# Usage: infra/stack.sh start|stop|status [kafka|redis|registry|all+registry|redis-cluster|kafka-cluster [N]]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK_DIR="${STACK_DIR:-$ROOT/.local}"
KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
REDIS_PORT="${REDIS_PORT:-16379}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}"
KAFKA_DIR="$STACK_DIR/kafka"
REDIS_DIR="$STACK_DIR/redis"
CLUSTER_PORT_BASE="${REDIS_CLUSTER_PORT_BASE:-17001}"
CLUSTER_DIR="$STACK_DIR/redis-cluster"
KAFKA_CLUSTER_PORT_BASE="${KAFKA_CLUSTER_PORT_BASE:-19111}"
KAFKA_CLUSTER_DIR="$STACK_DIR/kafka-cluster"
KAFKA_CLUSTER_HEAP_OPTS="${KAFKA_CLUSTER_HEAP_OPTS:--Xms128m -Xmx512m}"
REGISTRY_PORT="${REGISTRY_PORT:-18081}"
REGISTRY_MANAGEMENT_PORT="${REGISTRY_MANAGEMENT_PORT:-18082}"
# 3.0.9 is the newest line that runs on Java 17, the Java Kafka runs on (3.3 needs Java 21).
REGISTRY_VERSION="${REGISTRY_VERSION:-3.0.9}"
REGISTRY_HEAP_OPTS="${REGISTRY_HEAP_OPTS:--Xms64m -Xmx384m}"
REGISTRY_DIR="${REGISTRY_DIR:-$STACK_DIR/registry}" # data, logs, pid: one instance
REGISTRY_APP_DIR="$STACK_DIR/registry-app" # the unpacked distribution, shared by instances

die() { echo "stack: $*" >&2; exit 1; }
log() { echo "stack: $*"; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for_port() { # port seconds pidfile logfile
  local deadline=$((SECONDS + $2))
  until port_open "$1"; do
    pid_alive "$3" || { tail -n 40 "$4" >&2 || true; die "process exited before port $1 opened (log: $4)"; }
    [ "$SECONDS" -lt "$deadline" ] || { tail -n 40 "$4" >&2 || true; die "port $1 not open after $2 s (log: $4)"; }
    sleep 0.2
  done
}

stop_pid() { # pidfile name: says only what it stopped, nothing for a service that was not running
  pid_alive "$1" || { rm -f "$1"; return 0; }
  local pid; pid="$(cat "$1")"
  kill "$pid"
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && { log "$2 did not stop in 30 s; killing"; kill -9 "$pid"; }
  rm -f "$1"
  log "$2 stopped"
}

kafka_classpath() {
  bash "$ROOT/infra/ensure-package.sh" java openjdk-17-jre-headless >&2 || die "java (17) is missing"
  local cp="$KAFKA_DIR/classpath.txt" pom="$ROOT/infra/kafka/pom.xml"
  if [ ! -s "$cp" ] || [ "$pom" -nt "$cp" ]; then
    bash "$ROOT/infra/ensure-package.sh" mvn maven >&2 || die "mvn is missing"
    # stderr: this function's stdout is the classpath itself.
    log "resolving Kafka from Maven Central (cached in ~/.m2 after the first run)" >&2
    mvn -q -B -f "$pom" dependency:build-classpath -Dmdep.outputFile="$cp" >"$KAFKA_DIR/maven.log" 2>&1 \
      || { tail -n 30 "$KAFKA_DIR/maven.log" >&2; die "Maven could not resolve Kafka (log: $KAFKA_DIR/maven.log)"; }
  fi
  cat "$cp"
}

# Writes one KRaft node's server.properties and log4j2.xml into DIR. Every node is broker
# and controller; REPLICAS and MIN_ISR apply to new topics and to Kafka's own offsets and
# transaction logs.
kafka_node_config() { # dir node-id voters port controller-port replicas min-isr
  local dir=$1 id=$2 voters=$3 port=$4 controller=$5 replicas=$6 min_isr=$7
  mkdir -p "$dir"
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=3
default.replication.factor=$replicas
min.insync.replicas=$min_isr
auto.create.topics.enable=false
offsets.topic.replication.factor=$replicas
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=$replicas
transaction.state.log.min.isr=$min_isr
group.initial.rebalance.delay.ms=0
log.retention.hours=24
PROPS
  # Kafka 4 logs through log4j2 (infra/kafka/pom.xml); the same rolling file as before.
  cat >"$dir/log4j2.xml" <<XML
<Configuration status="warn">
  <Appenders>
    <RollingFile name="file" fileName="$dir/server.log" filePattern="$dir/server.log.%i">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
      <SizeBasedTriggeringPolicy size="20MB"/>
      <DefaultRolloverStrategy max="2"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
XML
}

kafka_start() {
  mkdir -p "$KAFKA_DIR"
  if pid_alive "$KAFKA_DIR/kafka.pid" && port_open "$KAFKA_PORT"; then
    log "kafka already running on 127.0.0.1:$KAFKA_PORT"; return 0
  fi
  port_open "$KAFKA_PORT" && die "port $KAFKA_PORT is taken by another process; set KAFKA_PORT"
  local cp; cp="$(kafka_classpath)"
  kafka_node_config "$KAFKA_DIR" 1 "1@127.0.0.1:$KAFKA_CONTROLLER_PORT" "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" 1 1
  local jvm=(java $KAFKA_HEAP_OPTS -XX:+UseG1GC -Djava.awt.headless=true
    "-Dlog4j2.configurationFile=$KAFKA_DIR/log4j2.xml" -cp "$cp")
  if [ ! -f "$KAFKA_DIR/data/meta.properties" ]; then
    local cluster_id
    cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    # --cluster-id=: a random id may start with '-', which would read as an option.
    "${jvm[@]}" kafka.tools.StorageTool format --cluster-id="$cluster_id" -c "$KAFKA_DIR/server.properties" \
      >"$KAFKA_DIR/format.log" 2>&1 || { cat "$KAFKA_DIR/format.log" >&2; die "formatting Kafka storage failed"; }
  fi
  nohup "${jvm[@]}" kafka.Kafka "$KAFKA_DIR/server.properties" >"$KAFKA_DIR/stdout.log" 2>&1 &
  echo $! >"$KAFKA_DIR/kafka.pid"
  wait_for_port "$KAFKA_PORT" 90 "$KAFKA_DIR/kafka.pid" "$KAFKA_DIR/server.log"
  log "kafka started on 127.0.0.1:$KAFKA_PORT (logs: $KAFKA_DIR)"
}

redis_start() {
  mkdir -p "$REDIS_DIR"
  if pid_alive "$REDIS_DIR/redis.pid" && port_open "$REDIS_PORT"; then
    log "redis already running on 127.0.0.1:$REDIS_PORT"; return 0
  fi
  port_open "$REDIS_PORT" && die "port $REDIS_PORT is taken by another process; set REDIS_PORT"
  # A killed Redis leaves its pid file: waiting below must see the new one, not the dead pid.
  rm -f "$REDIS_DIR/redis.pid"
  # Installed from Debian's packages when missing and we are root; otherwise stops with how to.
  bash "$ROOT/infra/ensure-package.sh" redis-server redis-server || die "redis-server is missing"
  # noeviction: a read model must never lose keys to eviction. AOF with fsync on every write:
  # consumers commit Kafka offsets once Redis acknowledged, so the write must be on disk by then
  # (Redis 7.0 has no WAITAOF; docs/operations.md, Delivery guarantees). A rewrite of the AOF
  # stalls those fsyncs, and with them every write, for seconds: rewrite when the AOF grew ten
  # times its base, not at the default doubling (docs/scaling.md, AOF).
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes \
    --dir "$REDIS_DIR" --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" \
    --appendonly yes --appendfsync always --auto-aof-rewrite-percentage 1000 \
    --save "" --maxmemory-policy noeviction
  for _ in $(seq 1 100); do [ -f "$REDIS_DIR/redis.pid" ] && break; sleep 0.1; done
  wait_for_port "$REDIS_PORT" 20 "$REDIS_DIR/redis.pid" "$REDIS_DIR/redis.log"
  log "redis started on 127.0.0.1:$REDIS_PORT (data: $REDIS_DIR)"
}

# Apicurio Registry's runnable distribution (the `all` tar.gz of apicurio-registry-app), fetched
# once from Maven Central into ~/.m2 and unpacked under $REGISTRY_APP_DIR.
registry_app() {
  local app="$REGISTRY_APP_DIR/$REGISTRY_VERSION"
  if [ ! -s "$app/apicurio-registry-app-$REGISTRY_VERSION-runner.jar" ]; then
    bash "$ROOT/infra/ensure-package.sh" mvn maven >&2 || die "mvn is missing"
    log "fetching Apicurio Registry $REGISTRY_VERSION from Maven Central (cached in ~/.m2)" >&2
    mkdir -p "$app"
    mvn -q -B dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$REGISTRY_VERSION:tar.gz:all" \
      -DoutputDirectory="$REGISTRY_APP_DIR" >"$REGISTRY_APP_DIR/maven.log" 2>&1 \
      || { tail -n 30 "$REGISTRY_APP_DIR/maven.log" >&2; die "Maven could not fetch Apicurio Registry (log: $REGISTRY_APP_DIR/maven.log)"; }
    tar -xzf "$REGISTRY_APP_DIR/apicurio-registry-app-$REGISTRY_VERSION-all.tar.gz" -C "$app"
    rm -f "$REGISTRY_APP_DIR/apicurio-registry-app-$REGISTRY_VERSION-all.tar.gz"
  fi
  echo "$app/apicurio-registry-app-$REGISTRY_VERSION-runner.jar"
}

registry_ready() { # the Confluent-compatible API answers
  (exec 3<>"/dev/tcp/127.0.0.1/$REGISTRY_PORT" && printf 'GET /apis/ccompat/v7/subjects HTTP/1.0\r\n\r\n' >&3 \
    && head -n1 <&3 | grep -q ' 200') 2>/dev/null
}

registry_start() {
  mkdir -p "$REGISTRY_DIR"
  if pid_alive "$REGISTRY_DIR/registry.pid" && port_open "$REGISTRY_PORT"; then
    log "registry already running on 127.0.0.1:$REGISTRY_PORT"; return 0
  fi
  port_open "$REGISTRY_PORT" && die "port $REGISTRY_PORT is taken by another process; set REGISTRY_PORT"
  port_open "$REGISTRY_MANAGEMENT_PORT" && die "port $REGISTRY_MANAGEMENT_PORT is taken by another process; set REGISTRY_MANAGEMENT_PORT"
  bash "$ROOT/infra/ensure-package.sh" java openjdk-17-jre-headless >&2 || die "java (17) is missing"
  local jar; jar="$(registry_app)"
  # Loopback only, both listeners. The embedded H2 in a file: a restarted registry answers the
  # same ids, as a production registry backed by a database does.
  nohup java $REGISTRY_HEAP_OPTS -XX:+UseSerialGC \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$REGISTRY_PORT" \
    -Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port="$REGISTRY_MANAGEMENT_PORT" \
    -Dapicurio.datasource.url="jdbc:h2:file:$REGISTRY_DIR/data/registry;DB_CLOSE_ON_EXIT=FALSE" \
    -Dquarkus.log.file.enable=true -Dquarkus.log.file.path="$REGISTRY_DIR/registry.log" \
    -Dquarkus.log.console.enable=false \
    -jar "$jar" >"$REGISTRY_DIR/stdout.log" 2>&1 &
  echo $! >"$REGISTRY_DIR/registry.pid"
  local deadline=$((SECONDS + 90))
  until registry_ready; do
    pid_alive "$REGISTRY_DIR/registry.pid" || { tail -n 40 "$REGISTRY_DIR/stdout.log" "$REGISTRY_DIR/registry.log" >&2 || true; die "registry exited before it answered (log: $REGISTRY_DIR)"; }
    [ "$SECONDS" -lt "$deadline" ] || { tail -n 40 "$REGISTRY_DIR/registry.log" >&2 || true; die "registry not answering on port $REGISTRY_PORT after 90 s (log: $REGISTRY_DIR)"; }
    sleep 0.3
  done
  log "registry started on http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7 (logs: $REGISTRY_DIR)"
}

kcluster_port() { echo $((KAFKA_CLUSTER_PORT_BASE + 2 * ($1 - 1))); } # node -> broker port
kcluster_controller() { echo $((KAFKA_CLUSTER_PORT_BASE + 2 * ($1 - 1) + 1)); }

# Writes node N's configuration: replicated like production (3 replicas, 2 in sync to accept a
# write with acks=all), so one broker down never stops a producer or the group coordinator.
kcluster_config() {
  local n=$1 dir="$KAFKA_CLUSTER_DIR/n$1" voters=""
  for i in 1 2 3; do voters+="${voters:+,}$i@127.0.0.1:$(kcluster_controller "$i")"; done
  kafka_node_config "$dir" "$n" "$voters" "$(kcluster_port "$n")" "$(kcluster_controller "$n")" 3 2
}

kcluster_start() {
  mkdir -p "$KAFKA_DIR" "$KAFKA_CLUSTER_DIR"
  local cp; cp="$(kafka_classpath)"
  local cluster_id_file="$KAFKA_CLUSTER_DIR/cluster.id" n started=()
  [ -s "$cluster_id_file" ] || head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=' >"$cluster_id_file"
  for n in 1 2 3; do
    local dir="$KAFKA_CLUSTER_DIR/n$n" port; port="$(kcluster_port "$n")"
    if pid_alive "$dir/kafka.pid" && port_open "$port"; then continue; fi
    port_open "$port" && die "port $port is taken by another process; set KAFKA_CLUSTER_PORT_BASE"
    kcluster_config "$n"
    local jvm=(java $KAFKA_CLUSTER_HEAP_OPTS -XX:+UseG1GC -Djava.awt.headless=true
      "-Dlog4j2.configurationFile=$dir/log4j2.xml" -cp "$cp")
    if [ ! -f "$dir/data/meta.properties" ]; then
      "${jvm[@]}" kafka.tools.StorageTool format --cluster-id="$(cat "$cluster_id_file")" \
        -c "$dir/server.properties" >"$dir/format.log" 2>&1 \
        || { cat "$dir/format.log" >&2; die "formatting Kafka storage of node $n failed"; }
    fi
    nohup "${jvm[@]}" kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 &
    echo $! >"$dir/kafka.pid"
    started+=("$n")
  done
  # A node opens its broker port only once the controller quorum (2 of 3) elected a leader,
  # so the nodes start together and are waited for afterwards.
  for n in "${started[@]}"; do
    wait_for_port "$(kcluster_port "$n")" 120 "$KAFKA_CLUSTER_DIR/n$n/kafka.pid" "$KAFKA_CLUSTER_DIR/n$n/server.log"
  done
  log "kafka cluster running on 127.0.0.1:$(kcluster_port 1),$(kcluster_port 2),$(kcluster_port 3) (logs: $KAFKA_CLUSTER_DIR)"
}

kcluster_stop() { # [node]
  [ -d "$KAFKA_CLUSTER_DIR" ] || return 0
  # Together: a node stopped last, after the others, waits out its controlled shutdown for a
  # quorum that is gone (30 s, then killed).
  local n; for n in ${1:-1 2 3}; do stop_pid "$KAFKA_CLUSTER_DIR/n$n/kafka.pid" "kafka-cluster node $n" & done
  wait
}

kcluster_status() {
  local rc=0 n
  for n in 1 2 3; do
    status_of "kafka-cluster node $n" "$KAFKA_CLUSTER_DIR/n$n/kafka.pid" "$(kcluster_port "$n")" || rc=1
  done
  return $rc
}

cluster_ports() { for i in 0 1 2 3 4 5; do echo $((CLUSTER_PORT_BASE + i)); done; }

cluster_ok() { # port: this node sees every slot served
  redis-cli -p "$1" cluster info 2>/dev/null | grep -q '^cluster_state:ok'
}

cluster_start() {
  bash "$ROOT/infra/ensure-package.sh" redis-server redis-server || die "redis-server is missing"
  bash "$ROOT/infra/ensure-package.sh" redis-cli redis-tools || die "redis-cli is missing"
  local ports; mapfile -t ports < <(cluster_ports)
  for p in "${ports[@]}"; do
    local dir="$CLUSTER_DIR/$p"
    mkdir -p "$dir"
    pid_alive "$dir/redis.pid" && port_open "$p" && continue
    port_open "$p" && die "port $p is taken by another process; set REDIS_CLUSTER_PORT_BASE"
    rm -f "$dir/redis.pid" # a killed node's, as for the single Redis
    # As the single Redis (AOF, fsync always, noeviction), plus cluster mode. A short node
    # timeout makes a failover take seconds; validity factor 0: a replica may always take over.
    redis-server --port "$p" --bind 127.0.0.1 --daemonize yes \
      --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
      --appendonly yes --appendfsync always --save "" --maxmemory-policy noeviction \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
      --cluster-replica-validity-factor 0
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 1 100); do [ -f "$CLUSTER_DIR/$p/redis.pid" ] && break; sleep 0.1; done
    wait_for_port "$p" 20 "$CLUSTER_DIR/$p/redis.pid" "$CLUSTER_DIR/$p/redis.log"
  done
  # Created once: nodes.conf keeps the cluster across restarts of its nodes.
  if [ "$(redis-cli -p "${ports[0]}" cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')" = 1 ]; then
    local addrs=(); for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
      >"$CLUSTER_DIR/create.log" 2>&1 || { tail -n 30 "$CLUSTER_DIR/create.log" >&2; die "creating the Redis Cluster failed"; }
  fi
  # Ready when every node serves all slots and knows three replicas, each in sync with its master.
  local deadline=$((SECONDS + 60))
  for p in "${ports[@]}"; do
    until cluster_ok "$p" && [ "$(redis-cli -p "$p" cluster nodes | grep -cE '[ ,]slave ')" = 3 ]; do
      [ "$SECONDS" -lt "$deadline" ] || die "Redis Cluster not ok on port $p after 60 s (logs: $CLUSTER_DIR/$p)"
      sleep 0.2
    done
    if redis-cli -p "$p" role | head -1 | grep -q slave; then
      until redis-cli -p "$p" info replication | grep -q '^master_link_status:up'; do
        [ "$SECONDS" -lt "$deadline" ] || die "replica $p not in sync after 60 s (logs: $CLUSTER_DIR/$p)"
        sleep 0.2
      done
    fi
  done
  log "redis cluster started on 127.0.0.1:${ports[0]}-${ports[5]} (data: $CLUSTER_DIR)"
}

cluster_stop() {
  local p; for p in $(cluster_ports); do stop_pid "$CLUSTER_DIR/$p/redis.pid" "redis-cluster node $p"; done
}

cluster_status() {
  local rc=0 p
  for p in $(cluster_ports); do
    if pid_alive "$CLUSTER_DIR/$p/redis.pid" && cluster_ok "$p"; then :; else rc=1; fi
  done
  if [ $rc -eq 0 ]; then echo "redis-cluster: running on 127.0.0.1:$CLUSTER_PORT_BASE-$((CLUSTER_PORT_BASE + 5))"
  else echo "redis-cluster: stopped or not ok"; fi
  return $rc
}

status_of() { # name pidfile port
  if pid_alive "$2" && port_open "$3"; then echo "$1: running on 127.0.0.1:$3"; else echo "$1: stopped"; return 1; fi
}

cmd="${1:-status}"; what="${2:-all}"
case "$cmd/$what" in
  start/kafka-cluster) kcluster_start; exit 0 ;;
  stop/kafka-cluster) kcluster_stop "${3:-}"; exit 0 ;;
  status/kafka-cluster) kcluster_status; exit $? ;;
  start/registry) registry_start; exit 0 ;;
  stop/registry) stop_pid "$REGISTRY_DIR/registry.pid" registry; exit 0 ;;
  status/registry) status_of registry "$REGISTRY_DIR/registry.pid" "$REGISTRY_PORT"; exit $? ;;
  start/all+registry) kafka_start; redis_start; registry_start; exit 0 ;;
  start/redis-cluster) cluster_start; exit 0 ;;
  stop/redis-cluster) cluster_stop; exit 0 ;;
  status/redis-cluster) cluster_status; exit $? ;;
esac
case "$cmd" in
  start)
    [ "$what" = redis ] || kafka_start
    [ "$what" = kafka ] || redis_start ;;
  stop)
    [ "$what" = redis ] || stop_pid "$KAFKA_DIR/kafka.pid" kafka
    [ "$what" = kafka ] || stop_pid "$REDIS_DIR/redis.pid" redis
    # A cluster left running is stopped with everything else.
    [ "$what" != all ] || { cluster_stop; kcluster_stop; stop_pid "$REGISTRY_DIR/registry.pid" registry; } ;;
  status)
    rc=0
    [ "$what" = redis ] || status_of kafka "$KAFKA_DIR/kafka.pid" "$KAFKA_PORT" || rc=1
    [ "$what" = kafka ] || status_of redis "$REDIS_DIR/redis.pid" "$REDIS_PORT" || rc=1
    exit $rc ;;
  *) die "usage: infra/stack.sh start|stop|status [kafka|redis|registry|all+registry|redis-cluster|kafka-cluster [N]]" ;;
esac
