#!/usr/bin/env bash
# Prometheus for the demo (Debian's package): scrapes the API and the consumers on loopback, with
# the rules of ops/prometheus/ loaded and its consoles served (the read model's dashboard at
# /consoles/read-model.html); its config, data and log under .local/. Also checks and
# unit-tests those rules with promtool (`check`, what the unit suite runs).
# Usage: infra/prometheus.sh start|stop|status|check
# Env: PROMETHEUS_PORT (19090), API_PORT (8080), CONSUMER_HEALTH_PORT (9464),
#      PROMETHEUS_DIR (.local/prometheus), PROMETHEUS_SCRAPE_INTERVAL (5s)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RULES="$ROOT/ops/prometheus"
PORT="${PROMETHEUS_PORT:-19090}"
DIR="${PROMETHEUS_DIR:-$ROOT/.local/prometheus}"
PIDFILE="$DIR/prometheus.pid"
URL="http://127.0.0.1:$PORT"

die() { echo "prometheus: $*" >&2; exit 1; }
log() { echo "prometheus: $*"; }
pid_alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Without recommends: the node exporter it recommends is a second daemon the demo does not use.
ensure() {
  local fresh=0
  command -v prometheus >/dev/null && command -v promtool >/dev/null || fresh=1
  # The unit, integration and browser suites may all get here at once on a fresh machine: one
  # apt-get at a time (a second would fail on apt's lock), the others then find it installed.
  mkdir -p "$ROOT/.local"
  flock "$ROOT/.local/prometheus-install.lock" \
    bash "$ROOT/infra/ensure-package.sh" promtool --no-install-recommends prometheus
  # On a machine with systemd the package starts its own service on :9090; we installed it for
  # the demo and the tests only, so that service is stopped and disabled again.
  if [ "$fresh" = 1 ] && [ -d /run/systemd/system ] && systemctl is-enabled prometheus >/dev/null 2>&1; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
    log "disabled the prometheus service Debian's package started on :9090"
  fi
}

write_config() {
  mkdir -p "$DIR/data"
  # Only loopback targets: the demo's own API and consumers.
  cat >"$DIR/prometheus.yml" <<EOF
global:
  scrape_interval: ${PROMETHEUS_SCRAPE_INTERVAL:-5s}
  evaluation_interval: ${PROMETHEUS_SCRAPE_INTERVAL:-5s}
rule_files:
  - $RULES/recording.rules.yml
  - $RULES/alerts.rules.yml
scrape_configs:
  - job_name: api
    static_configs: [{ targets: ['127.0.0.1:${API_PORT:-8080}'] }]
  - job_name: consumers
    static_configs: [{ targets: ['127.0.0.1:${CONSUMER_HEALTH_PORT:-9464}'] }]
EOF
  promtool check config "$DIR/prometheus.yml" >/dev/null || die "the generated config does not check"
}

start() {
  ensure
  if pid_alive; then log "already running (pid $(cat "$PIDFILE")), $URL"; return 0; fi
  port_open "$PORT" && die "port $PORT is taken by another process; set PROMETHEUS_PORT"
  write_config
  (exec setsid prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
    --storage.tsdb.retention.time=2d --web.listen-address="127.0.0.1:$PORT" \
    --web.console.templates="$RULES/consoles" --web.console.libraries="$RULES/console_libraries" \
    >"$DIR/prometheus.log" 2>&1 </dev/null) &
  echo $! >"$PIDFILE"
  local deadline=$((SECONDS + 30))
  until curl -fsS -m 2 -o /dev/null "$URL/-/ready" 2>/dev/null; do
    if ! pid_alive || [ "$SECONDS" -ge "$deadline" ]; then
      tail -n 20 "$DIR/prometheus.log" >&2 || true
      die "not ready at $URL (log: $DIR/prometheus.log)"
    fi
    sleep 0.5
  done
  log "ready at $URL (pid $(cat "$PIDFILE"), log $DIR/prometheus.log)"
}

stop() {
  pid_alive || { rm -f "$PIDFILE"; log "not running"; return 0; }
  local pid; pid="$(cat "$PIDFILE")"
  kill -TERM "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  rm -f "$PIDFILE"
  log "stopped"
}

status() {
  if pid_alive && curl -fsS -m 2 -o /dev/null "$URL/-/ready" 2>/dev/null; then
    echo "prometheus: running (pid $(cat "$PIDFILE")), $URL"
  else
    echo "prometheus: stopped"; return 1
  fi
}

# The rules parse, and each alert fires and stays silent where its unit tests say.
check() {
  ensure
  promtool check rules "$RULES"/*.rules.yml
  promtool test rules "$RULES"/tests/*.test.yml
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  check) check ;;
  *) die "usage: infra/prometheus.sh start|stop|status|check" ;;
esac
