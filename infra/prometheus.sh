#!/usr/bin/env bash
# Prometheus for the demo (Debian's package): scrapes the API and the consumers on loopback, with
# the rules of ops/prometheus/ loaded and its consoles served (the read model's dashboard at
# /consoles/read-model.html); its config, data and log under .local/. Also checks and
# unit-tests those rules with promtool (`check`, what the unit suite runs).
# The scrape targets are files Prometheus watches (file_sd): `targets` rewrites them from the
# lists below, and a running Prometheus scrapes a replica listed later without a restart.
# Usage: infra/prometheus.sh start|stop|status|check|config|targets
# Env: PROMETHEUS_PORT (19090), PROMETHEUS_DIR (.local/prometheus), PROMETHEUS_SCRAPE_INTERVAL (5s),
#      PROMETHEUS_API_TARGETS: the API replicas' /metrics, host:port comma-separated (default
#        127.0.0.1:API_OPS_PORT when that is set, else 127.0.0.1:API_PORT, 8080),
#      PROMETHEUS_CONSUMER_TARGETS: the consumers' health ports alike (127.0.0.1:CONSUMER_HEALTH_PORT, 9464),
#      PROMETHEUS_RUNBOOKS_URL: where docs/operations.md is browsable, the base of the alerts'
#        runbook_url (external label runbooks_url; default this checkout's file)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RULES="$ROOT/ops/prometheus"
PORT="${PROMETHEUS_PORT:-19090}"
DIR="${PROMETHEUS_DIR:-$ROOT/.local/prometheus}"
PIDFILE="$DIR/prometheus.pid"
URL="http://127.0.0.1:$PORT"
API_TARGETS="${PROMETHEUS_API_TARGETS:-127.0.0.1:${API_OPS_PORT:-${API_PORT:-8080}}}"
CONSUMER_TARGETS="${PROMETHEUS_CONSUMER_TARGETS:-127.0.0.1:${CONSUMER_HEALTH_PORT:-9464}}"
RUNBOOKS_URL="${PROMETHEUS_RUNBOOKS_URL:-file://$ROOT/docs/operations.md}"

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

# A comma-separated host:port list as a file_sd target group, on one line.
targets_json() {
  local list="$1" out='' t items
  IFS=',' read -ra items <<<"$list"
  for t in "${items[@]}"; do
    t="${t//[[:space:]]/}"
    [ -n "$t" ] || continue
    [[ "$t" =~ ^[A-Za-z0-9._-]+:[0-9]{1,5}$ ]] || die "not a host:port scrape target: '$t'"
    out+="${out:+, }\"$t\""
  done
  [ -n "$out" ] || die "no scrape target in '$list'"
  echo "[{ \"targets\": [$out] }]"
}

# Each file written whole, then renamed into place: Prometheus watches the directory and so never
# reads half a file.
write_targets() {
  mkdir -p "$DIR/targets"
  local job api consumers
  # Both lists checked before either file changes.
  api="$(targets_json "$API_TARGETS")" || exit 1
  consumers="$(targets_json "$CONSUMER_TARGETS")" || exit 1
  for job in api consumers; do
    echo "${!job}" >"$DIR/targets/$job.json.tmp"
    mv "$DIR/targets/$job.json.tmp" "$DIR/targets/$job.json"
  done
}

write_config() {
  [[ "$RUNBOOKS_URL" =~ ^[^[:space:]\'\"]+$ ]] || die "PROMETHEUS_RUNBOOKS_URL has a space or a quote"
  mkdir -p "$DIR/data"
  write_targets
  # refresh_interval: a re-read in case a file change went unnoticed (the watch normally sees it).
  cat >"$DIR/prometheus.yml" <<EOF
global:
  scrape_interval: ${PROMETHEUS_SCRAPE_INTERVAL:-5s}
  evaluation_interval: ${PROMETHEUS_SCRAPE_INTERVAL:-5s}
  external_labels:
    runbooks_url: '$RUNBOOKS_URL'
rule_files:
  - $RULES/recording.rules.yml
  - $RULES/alerts.rules.yml
scrape_configs:
  - job_name: api
    file_sd_configs: [{ files: ['$DIR/targets/api.json'], refresh_interval: 10s }]
  - job_name: consumers
    file_sd_configs: [{ files: ['$DIR/targets/consumers.json'], refresh_interval: 10s }]
EOF
  promtool check config "$DIR/prometheus.yml" >/dev/null || die "the generated config does not check"
}

start() {
  ensure
  if pid_alive; then
    write_targets
    log "already running (pid $(cat "$PIDFILE")), $URL; scraping api $API_TARGETS, consumers $CONSUMER_TARGETS"
    return 0
  fi
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
  log "ready at $URL (pid $(cat "$PIDFILE"), log $DIR/prometheus.log); scraping api $API_TARGETS, consumers $CONSUMER_TARGETS"
}

# Rewrites the target files only: a running Prometheus scrapes the new lists within seconds.
targets() {
  [ -f "$DIR/prometheus.yml" ] || die "no config in $DIR: run start (or config) first"
  write_targets
  log "scraping api $API_TARGETS, consumers $CONSUMER_TARGETS"
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
  config) ensure; write_config; log "wrote $DIR/prometheus.yml and $DIR/targets/" ;;
  targets) targets ;;
  *) die "usage: infra/prometheus.sh start|stop|status|check|config|targets" ;;
esac
