#!/usr/bin/env bash
# Podman as this project's container engine where no Docker engine runs: installs and configures
# Debian's podman, and runs its Docker-API service so testcontainers can use it.
# Host networking and loopback only: containers share the host's network namespace; no bridge
# network is created (podman's default one lives in a private range, 10.88.0.0/16).
# Usage: infra/containers/podman.sh install|start|stop|status|env|up
#   up = install + build the local images (build-images.sh) + start: all a test run needs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE_DIR="${CONTAINERS_DIR:-$ROOT/.local/containers}"
SOCKET="${PODMAN_SOCKET:-/run/podman/podman.sock}"
CONF=/etc/containers/containers.conf.d/50-read-model.conf
PIDFILE="$STATE_DIR/podman-service.pid"

die() { echo "podman: $*" >&2; exit 1; }
log() { echo "podman: $*"; }

install() {
  bash "$ROOT/infra/ensure-package.sh" podman podman runc
  bash "$ROOT/infra/ensure-package.sh" debootstrap debootstrap
  [ -f "$CONF" ] && return 0
  [ "$(id -u)" = 0 ] || die "$CONF is missing: run this script once as root (sudo bash $0 install)"
  mkdir -p "$(dirname "$CONF")"
  # Without these, containers do not start on this machine kind (../shared/notes/containers.md):
  # the default ulimits cannot be raised without CAP_SYS_RESOURCE, crun refuses the hybrid
  # cgroup layout, and there is no systemd. netns=host: no container ever gets a bridge.
  cat >"$CONF.tmp" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
netns = "host"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  mv "$CONF.tmp" "$CONF"
  log "configured $CONF"
}

api_up() { curl -fsS -m 2 --unix-socket "$SOCKET" http://podman/_ping >/dev/null 2>&1; }

start() {
  command -v podman >/dev/null || die "podman is not installed: bash $0 install"
  # A service started from a checkout that was deleted since (a CI clone) still answers, but its
  # containers fail to start ("write child: broken pipe"): they inherit a working directory that
  # is gone. Replace it.
  local pid
  for pid in $(pgrep -f 'podman system service' || true); do
    case "$(readlink "/proc/$pid/cwd" 2>/dev/null)" in
      *' (deleted)') log "replacing a Docker-API service whose directory is gone"; kill "$pid" ;;
    esac
  done
  for _ in $(seq 1 50); do api_up || break; sleep 0.1; done
  if api_up; then log "Docker-API service already answering on $SOCKET"; return 0; fi
  mkdir -p "$STATE_DIR" "$(dirname "$SOCKET")"
  rm -f "$SOCKET"
  # --time=0: serve until stopped. setsid: a test run that started it does not own it. From /,
  # so it outlives the checkout that started it.
  (cd / && exec setsid podman system service --time=0 "unix://$SOCKET") \
    >"$STATE_DIR/podman-service.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 100); do api_up && break; sleep 0.1; done
  api_up || { tail -n 20 "$STATE_DIR/podman-service.log" >&2; die "the service did not answer on $SOCKET"; }
  log "Docker-API service on $SOCKET (log: $STATE_DIR/podman-service.log)"
}

stop() {
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    kill "$(cat "$PIDFILE")"
    log "Docker-API service stopped"
  else
    log "Docker-API service not running (from this script)"
  fi
  rm -f "$PIDFILE"
}

print_env() {
  # HOST_OVERRIDE: without it testcontainers answers the bridge gateway (a private address).
  # RYUK_DISABLED: the reaper image cannot be pulled here; the tests remove their own containers.
  cat <<ENV
export DOCKER_HOST=unix://$SOCKET
export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
export TESTCONTAINERS_RYUK_DISABLED=true
ENV
}

case "${1:-status}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) if api_up; then echo "podman: Docker API on $SOCKET"; else echo "podman: Docker API not running"; exit 1; fi ;;
  env) print_env ;;
  up) install; bash "$ROOT/infra/containers/build-images.sh" stack; start ;;
  *) die "usage: infra/containers/podman.sh install|start|stop|status|env|up" ;;
esac
