#!/usr/bin/env bash
# Runs infra/registry-producer/RegistryProducer.java on the classpath of ./pom.xml (the Java
# client and Apicurio Registry's serdes from Maven Central), resolved once into
# $STACK_DIR/registry-producer/classpath.txt. Usage: run.sh [brokers] [registry v3 URL] < commands
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CP_FILE="${STACK_DIR:-$ROOT/.local}/registry-producer/classpath.txt"
command -v java >/dev/null || { echo "java not found: install a JDK 17 or later (Debian: apt-get install openjdk-17-jdk-headless)" >&2; exit 1; }
if [ ! -s "$CP_FILE" ]; then
  mkdir -p "$(dirname "$CP_FILE")"
  command -v mvn >/dev/null || { echo "mvn not found: install Apache Maven (Debian: apt-get install maven)" >&2; exit 1; }
  # Into a temporary file first: an interrupted resolution leaves no half classpath behind.
  mvn -q -B -f "$ROOT/infra/registry-producer/pom.xml" dependency:build-classpath -Dmdep.outputFile="$CP_FILE.tmp" >&2 \
    || { echo "Maven could not resolve infra/registry-producer/pom.xml (needs Maven Central or a mirror in ~/.m2/settings.xml)" >&2; exit 1; }
  mv "$CP_FILE.tmp" "$CP_FILE"
fi
# stdout carries the line protocol: client and serde logs go to stderr, warnings only.
exec java "-Dlog4j2.configurationFile=$ROOT/infra/java-producer/log4j2.xml" -cp "$(cat "$CP_FILE")" \
  "$ROOT/infra/registry-producer/RegistryProducer.java" "$@"
