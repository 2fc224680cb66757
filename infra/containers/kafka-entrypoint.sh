#!/bin/sh
# Entrypoint of the locally built Kafka image; takes the same environment as the official
# apache/kafka image, so the tests configure both alike: every KAFKA_<NAME> becomes the property
# <name> (lower case, '_' -> '.', '__' -> '_', '___' -> '-'), CLUSTER_ID formats the storage once.
set -eu
: "${CLUSTER_ID:?set CLUSTER_ID (any base64 UUID)}"
conf=/opt/kafka/config/server.properties
mkdir -p /opt/kafka/config
: >"$conf"
env | while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_JVM_PERFORMANCE_OPTS) ;; # JVM settings, not properties
    KAFKA_*)
      prop="$(echo "${name#KAFKA_}" | tr 'A-Z' 'a-z' | sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g')"
      echo "$prop=$value" >>"$conf" ;;
  esac
done
grep -q '^log\.dirs=' "$conf" || echo "log.dirs=/var/lib/kafka/data" >>"$conf"
# Quoted: the JVM expands the classpath wildcard, the shell must not.
java_cmd() { exec_or_run="$1"; shift; $exec_or_run java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g} -XX:+UseG1GC \
  -Djava.awt.headless=true -Dlog4j2.configurationFile=/opt/kafka/log4j2.xml \
  ${KAFKA_OPTS:-} -cp "/opt/kafka/libs/*" "$@"; }
logdir="$(sed -n 's/^log\.dirs=//p' "$conf" | cut -d, -f1)"
if [ ! -f "$logdir/meta.properties" ]; then
  java_cmd "" kafka.tools.StorageTool format --cluster-id="$CLUSTER_ID" -c "$conf" --ignore-formatted
fi
java_cmd exec kafka.Kafka "$conf"
