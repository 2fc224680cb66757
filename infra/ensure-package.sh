#!/usr/bin/env bash
# Makes sure a program the project needs is there: when it is missing and we are root on Debian,
# installs its Debian package; otherwise stops at once with the one command to run.
# One mechanism for every such program (redis-server, chromium, podman, ...).
# Usage: infra/ensure-package.sh <command-or-absolute-path> <debian-package>...
# (a command is looked up on PATH; an absolute path, e.g. a font file, must exist)
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: infra/ensure-package.sh <command-or-path> <debian-package>..." >&2; exit 2; }
what="$1"; shift

present() {
  if [[ "$what" == /* ]]; then [ -e "$what" ]; else command -v "$what" >/dev/null; fi
}

present && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  # One install at a time: CI runs phases side by side, and apt holds one lock for the machine.
  # Another apt (not ours) holding it is waited for too, up to 5 minutes.
  exec 9>"${TMPDIR:-/tmp}/ensure-package.lock"
  flock 9
  present && exit 0
  echo "ensure-package: installing $* from Debian's packages (for $what)"
  wait_lock=(-o DPkg::Lock::Timeout=300)
  # The package lists may be stale or absent on a fresh machine: update them first.
  if ! (apt-get update -qq "${wait_lock[@]}" &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wait_lock[@]}" "$@") >/dev/null; then
    echo "ensure-package: apt-get could not install $*" >&2; exit 1
  fi
  present || { echo "ensure-package: $* installed but $what is still missing" >&2; exit 1; }
else
  echo "ensure-package: $what not found: install it with: sudo apt-get install -y $*" >&2
  exit 1
fi
