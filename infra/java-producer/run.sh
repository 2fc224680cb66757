#!/usr/bin/env bash
# Runs infra/java-producer/Producer.java on the broker's Maven classpath (resolved once by
# infra/kafka/pom.xml, cached like infra/stack.sh's). Usage: run.sh [brokers] < commands
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CP_FILE="${STACK_DIR:-$ROOT/.local}/kafka/classpath.txt"
if [ ! -s "$CP_FILE" ]; then
  mkdir -p "$(dirname "$CP_FILE")"
  command -v mvn >/dev/null || { echo "mvn not found: install Apache Maven (Debian: apt-get install maven)" >&2; exit 1; }
  mvn -q -B -f "$ROOT/infra/kafka/pom.xml" dependency:build-classpath -Dmdep.outputFile="$CP_FILE" >&2
fi
# Quiet client logs: the broker's slf4j binding (log4j2) is on this classpath; warnings go to stderr.
exec java "-Dlog4j2.configurationFile=$ROOT/infra/java-producer/log4j2.xml" -cp "$(cat "$CP_FILE")" "$ROOT/infra/java-producer/Producer.java" "$@"
