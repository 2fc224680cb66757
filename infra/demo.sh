#!/usr/bin/env bash
# One-command demo (`npm run demo`): Kafka + Redis, topics, consumers, API, a demo API key and the
# telemetry simulator, Prometheus scraping both with the alert and recording rules
# (infra/prometheus.sh), then how to call the API. Idempotent: running processes are reused.
# DEMO_FORMAT (default avro) is the simulator's value format: avro, protobuf or json-schema run
# the schema registry too (infra/stack.sh start registry), register the service's schemas in it
# (tools/register-schemas.ts) and frame every value for it; json needs no registry.
# Usage: infra/demo.sh [start|stop|status]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEMO_DIR="$ROOT/.local/demo"
KEY_FILE="$DEMO_DIR/api-key"
SIM_INSTALLATIONS="${DEMO_INSTALLATIONS:-50}"
SIM_RATE="${DEMO_RATE:-200}"
SIM_FORMAT="${DEMO_FORMAT:-avro}"
# The ports of this checkout's demo, recorded at start in PORTS_FILE: status and stop read them
# back, so they look at this demo's processes whatever the environment of the shell says
# (another checkout's demo may answer on the defaults). The stack's are infra/stack.sh's.
PORTS_FILE="$DEMO_DIR/ports"
PORT_VARS=(API_PORT CONSUMER_HEALTH_PORT PROMETHEUS_PORT KAFKA_PORT KAFKA_CONTROLLER_PORT REDIS_PORT REGISTRY_PORT REGISTRY_MANAGEMENT_PORT)
declare -A PORT_FROM_ENV=()
for v in "${PORT_VARS[@]}"; do [ -z "${!v:-}" ] || PORT_FROM_ENV[$v]="${!v}"; done
API_PORT="${API_PORT:-8080}"
CONSUMER_HEALTH_PORT="${CONSUMER_HEALTH_PORT:-9464}"
PROMETHEUS_PORT="${PROMETHEUS_PORT:-19090}"
KAFKA_PORT="${KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
REDIS_PORT="${REDIS_PORT:-16379}"
REGISTRY_PORT="${REGISTRY_PORT:-18081}"
REGISTRY_MANAGEMENT_PORT="${REGISTRY_MANAGEMENT_PORT:-18082}"
TSX="$ROOT/node_modules/.bin/tsx"
# The project's own Node first (npm ci installs Node 24 there), as npm scripts do, so
# `bash infra/demo.sh` run directly uses the same runtime as `npm run demo`.
export PATH="$ROOT/node_modules/.bin:$PATH"
# Long-running processes run as node itself with tsx as a loader: the tsx CLI turns a SIGTERM
# not acknowledged within ~60 ms into a SIGKILL, losing the batch in hand (docs/reliability.md).
NODE_TSX=(node --import tsx)
# DEMO_TRACING=1: the consumers and the API print their spans to their logs (an OTLP collector is
# not installed here; docs/operations.md "Tracing" says how to send them to one), a share of
# DEMO_TRACES_RATIO of the traces begun here and every request whose traceparent is sampled.
TRACING_ENV=()
if [ "${DEMO_TRACING:-0}" = 1 ]; then
  TRACING_ENV=(env OTEL_TRACES_EXPORTER=console OTEL_TRACES_SAMPLER=parentbased_traceidratio
    "OTEL_TRACES_SAMPLER_ARG=${DEMO_TRACES_RATIO:-0.01}")
fi

die() { echo "demo: $*" >&2; exit 1; }
log() { echo "demo: $*"; }

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The recorded ports replace the environment's; one the environment set otherwise is named.
use_recorded_ports() {
  [ -f "$PORTS_FILE" ] || return 1
  local name value
  while IFS='=' read -r name value; do
    case " ${PORT_VARS[*]} " in *" $name "*) ;; *) continue ;; esac
    [[ "$value" =~ ^[0-9]+$ ]] || continue
    if [ -n "${PORT_FROM_ENV[$name]:-}" ] && [ "${PORT_FROM_ENV[$name]}" != "$value" ]; then
      echo "demo: $name=${PORT_FROM_ENV[$name]} ignored: this checkout's demo runs on $value ($PORTS_FILE)" >&2
    fi
    printf -v "$name" '%s' "$value"
  done <"$PORTS_FILE"
}

write_ports() {
  mkdir -p "$DEMO_DIR"
  local v
  for v in "${PORT_VARS[@]}"; do echo "$v=${!v}"; done >"$PORTS_FILE.tmp"
  mv "$PORTS_FILE.tmp" "$PORTS_FILE"
}

demo_running() {
  local name
  for name in consumers api simulator; do pid_alive "$DEMO_DIR/$name.pid" && return 0; done
  pid_alive "$DEMO_DIR/prometheus/prometheus.pid"
}

# The settings every command then uses, from the ports settled on.
derive_settings() {
  HEALTH_PORT="$CONSUMER_HEALTH_PORT"
  API_BASE="http://127.0.0.1:$API_PORT/application/v1"
  # The processes reach the stack infra/stack.sh starts, on its ports (KAFKA_PORT, REDIS_PORT).
  export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:$KAFKA_PORT}"
  export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:$REDIS_PORT}"
  # Framed values: the consumers decode them with the schemas this registry holds.
  if [ "$SIM_FORMAT" != json ]; then
    export SCHEMA_REGISTRY_URL="${SCHEMA_REGISTRY_URL:-http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7}"
  fi
  # The demo's Prometheus: its config and data under .local/demo/prometheus/, on loopback.
  export PROMETHEUS_DIR="$DEMO_DIR/prometheus"
  export "${PORT_VARS[@]}"
}

http_ok() { # url [header]: true on a 2xx answer
  if [ $# -gt 1 ]; then curl -fsS -m 2 -o /dev/null -H "$2" "$1" 2>/dev/null
  else curl -fsS -m 2 -o /dev/null "$1" 2>/dev/null; fi
}

# Each process runs in its own session (setsid), so stopping it stops it and any child together.
start_bg() { # name port command...
  local name="$1" port="$2"; shift 2
  local pidfile="$DEMO_DIR/$name.pid" logfile="$DEMO_DIR/$name.log"
  if pid_alive "$pidfile"; then log "$name already running (pid $(cat "$pidfile"))"; return 0; fi
  if [ "$port" != - ] && port_open "$port"; then
    die "port $port is taken by another process; stop it or set API_PORT / CONSUMER_HEALTH_PORT"
  fi
  (cd "$ROOT" && exec setsid "$@" >"$logfile" 2>&1 </dev/null) &
  echo $! >"$pidfile"
  log "$name started (pid $!, log $logfile)"
}

stop_bg() { # name: says only what it stopped, nothing for a process that was not running
  local pidfile="$DEMO_DIR/$1.pid"
  pid_alive "$pidfile" || { rm -f "$pidfile"; return 0; }
  local pid; pid="$(cat "$pidfile")"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    log "$1 did not stop in 10 s; killing"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"
  fi
  rm -f "$pidfile"
  log "$1 stopped"
}

wait_healthy() { # name url seconds
  local name="$1" url="$2" deadline=$((SECONDS + $3))
  until http_ok "$url"; do
    if ! pid_alive "$DEMO_DIR/$name.pid" || [ "$SECONDS" -ge "$deadline" ]; then
      echo "--- last lines of $DEMO_DIR/$name.log ---" >&2
      tail -n 40 "$DEMO_DIR/$name.log" >&2 || true
      die "$name is not healthy at $url (log: $DEMO_DIR/$name.log)"
    fi
    sleep 0.5
  done
  log "$name healthy ($url)"
}

ensure_key() {
  if [ -s "$KEY_FILE" ] && http_ok "$API_BASE/getInstallations" "Api-Key: $(cat "$KEY_FILE")"; then
    log "reusing the demo API key in $KEY_FILE"; return 0
  fi
  log "issuing a demo API key: application 1, owner user 1, installations 1-20"
  # umask 077: the key file is readable by its owner only (mode 600), from its first byte.
  (umask 077 && cd "$ROOT" && "$TSX" tools/issue-key.ts \
      --application 1 --owner user:1 --installations 1-20 --upsert-application >"$KEY_FILE.tmp") \
    || { rm -f "$KEY_FILE.tmp"; die "issuing the demo key failed"; }
  grep -qE '^itk_[A-Za-z0-9]{40}$' "$KEY_FILE.tmp" || { rm -f "$KEY_FILE.tmp"; die "issue-key printed no key"; }
  chmod 600 "$KEY_FILE.tmp" && mv "$KEY_FILE.tmp" "$KEY_FILE"
  # The tool keeps no copy; the demo does, so the commands below can use it.
  log "the demo saved the key in $KEY_FILE (mode 600, readable by you only)"
}

wait_for_flow() { # seconds
  local deadline=$((SECONDS + $1)) key body=''
  key="$(cat "$KEY_FILE")"
  while [ "$SECONDS" -lt "$deadline" ]; do
    body="$(curl -sS -m 2 -H "Api-Key: $key" "$API_BASE/getInstallationCurrentEnergyFlow?installationId=1" 2>/dev/null || true)"
    if [[ "$body" == *'"valid":true'* && "$body" == *'"data":{'* ]]; then
      log "installation 1 has a live energy flow"; return 0
    fi
    pid_alive "$DEMO_DIR/simulator.pid" || { tail -n 20 "$DEMO_DIR/simulator.log" >&2; die "the simulator exited"; }
    sleep 1
  done
  echo "last answer: ${body:-none}" >&2
  for name in consumers api simulator; do
    echo "--- last lines of $DEMO_DIR/$name.log ---" >&2; tail -n 15 "$DEMO_DIR/$name.log" >&2 || true
  done
  die "no energy flow for installation 1 after $1 s"
}

format_in_words() {
  if [ "$SIM_FORMAT" = json ]; then echo "plain JSON (DEMO_FORMAT=json)"
  else echo "$SIM_FORMAT framed for the schema registry at $SCHEMA_REGISTRY_URL (DEMO_FORMAT=$SIM_FORMAT)"; fi
}

tracing_howto() { # what DEMO_TRACING=1 prints; nothing otherwise
  [ "${DEMO_TRACING:-0}" = 1 ] || return 0
  cat <<EOF
Tracing:              spans printed in the consumers' and api's logs; a read always traced
                      (its traceparent sampled), its span named by the route:
  curl -s -H "Api-Key: \$KEY" -H "traceparent: 00-\$(openssl rand -hex 16)-\$(openssl rand -hex 8)-01" \\
    '$API_BASE/getInstallationCurrentEnergyFlow?installationId=1'
EOF
}

print_howto() {
  cat <<EOF

The demo is running: ${SIM_INSTALLATIONS} simulated installations, ${SIM_RATE} telemetry events/s,
in $(format_in_words).
The demo key (application 1, installations 1-20) is saved in $KEY_FILE (mode 600).
The key tool itself keeps no copy: a key you issue with it yourself is yours to save.

  KEY="\$(cat $KEY_FILE)"
  curl -s -H "Api-Key: \$KEY" '$API_BASE/getInstallations'
  curl -s -H "Api-Key: \$KEY" '$API_BASE/getInstallationDevices?installationId=1'
  curl -s -H "Api-Key: \$KEY" '$API_BASE/getInstallationCurrentEnergyFlow?installationId=1'

Docs and playground:  http://127.0.0.1:$API_PORT/docs
Prometheus:           http://127.0.0.1:$PROMETHEUS_PORT/alerts   (rules: ops/prometheus/)
Dashboard:            http://127.0.0.1:$PROMETHEUS_PORT/consoles/read-model.html
Logs:                 $DEMO_DIR/{consumers,api,simulator}.log
$(tracing_howto)
Status / stop:        bash infra/demo.sh status   |   bash infra/demo.sh stop
EOF
}

start() {
  [ -x "$TSX" ] || die "dependencies missing: run 'npm ci' first"
  # A demo already running keeps its ports (its processes are reused); else these are recorded.
  if demo_running && use_recorded_ports; then log "reusing the running demo's ports ($PORTS_FILE)"
  else write_ports; fi
  derive_settings
  command -v curl >/dev/null || die "curl not found: install it (Debian: apt-get install curl)"
  command -v setsid >/dev/null || die "setsid not found (util-linux)"
  mkdir -p "$DEMO_DIR"
  case "$SIM_FORMAT" in json | avro | protobuf | json-schema) ;;
    *) die "DEMO_FORMAT=$SIM_FORMAT: one of json, avro, protobuf, json-schema" ;; esac
  bash "$ROOT/infra/stack.sh" start
  (cd "$ROOT" && "$TSX" tools/create-topics.ts)
  echo "$SIM_FORMAT" >"$DEMO_DIR/format"
  if [ "$SIM_FORMAT" != json ]; then
    bash "$ROOT/infra/stack.sh" start registry
    log "registering the service's $SIM_FORMAT schemas (compatibility BACKWARD)"
    (cd "$ROOT" && "$TSX" tools/register-schemas.ts --format "$SIM_FORMAT" >"$DEMO_DIR/schemas.tsv") \
      || die "registering the schemas failed"
    log "$(wc -l <"$DEMO_DIR/schemas.tsv") subjects registered (ids in $DEMO_DIR/schemas.tsv)"
  fi
  start_bg consumers "$HEALTH_PORT" ${TRACING_ENV[@]+"${TRACING_ENV[@]}"} "${NODE_TSX[@]}" consumers/main.ts
  start_bg api "$API_PORT" ${TRACING_ENV[@]+"${TRACING_ENV[@]}"} "${NODE_TSX[@]}" api/main.ts
  wait_healthy consumers "http://127.0.0.1:$HEALTH_PORT/readyz" 90
  wait_healthy api "http://127.0.0.1:$API_PORT/readyz" 60
  ensure_key
  start_bg simulator - "${NODE_TSX[@]}" tools/simulator.ts \
    --installations "$SIM_INSTALLATIONS" --rate "$SIM_RATE" --format "$SIM_FORMAT"
  wait_for_flow 90
  bash "$ROOT/infra/prometheus.sh" start
  print_howto
}

stop() {
  use_recorded_ports || true
  derive_settings
  bash "$ROOT/infra/prometheus.sh" stop
  stop_bg simulator
  stop_bg api
  stop_bg consumers
  bash "$ROOT/infra/stack.sh" stop
  rm -f "$PORTS_FILE" "$DEMO_DIR/format"
}

# Exits non-zero when anything of the demo is down. A process that is not running is not probed
# on its port: another demo may answer there.
status() {
  local rc=0 name
  if use_recorded_ports; then echo "demo: ports recorded at start in $PORTS_FILE"
  else echo "demo: no demo started in this checkout ($PORTS_FILE missing); the environment's ports"; rc=1; fi
  derive_settings
  probe_status consumers "http://127.0.0.1:$HEALTH_PORT/readyz" || rc=1
  probe_status api "http://127.0.0.1:$API_PORT/readyz" || rc=1
  probe_status simulator - || rc=1
  bash "$ROOT/infra/prometheus.sh" status || rc=1
  bash "$ROOT/infra/stack.sh" status || rc=1
  # The format the demo was started with, not the shell's DEMO_FORMAT.
  if [ -s "$DEMO_DIR/format" ] && [ "$(cat "$DEMO_DIR/format")" != json ]; then
    bash "$ROOT/infra/stack.sh" status registry || rc=1
  fi
  return $rc
}

probe_status() { # name readiness-url|-
  local name="$1" url="$2" pidfile="$DEMO_DIR/$1.pid"
  if ! pid_alive "$pidfile"; then echo "$name: stopped"; return 1; fi
  if [ "$url" = - ]; then echo "$name: running (pid $(cat "$pidfile"))"; return 0; fi
  if http_ok "$url"; then echo "$name: running (pid $(cat "$pidfile")), ready at $url"
  else echo "$name: running (pid $(cat "$pidfile")), not ready at $url"; return 1; fi
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: infra/demo.sh [start|stop|status]" ;;
esac
