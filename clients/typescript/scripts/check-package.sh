#!/usr/bin/env bash
# Checks a packed client tarball the way an integrator gets it: installed into a fresh project
# outside this repository (no workspace link, no repository file in reach), imported, compiled
# against its own type declarations, and its shipped example run against a running API with a
# real key, which must read at least one installation.
#   READ_API_URL=http://127.0.0.1:8080/application/v1 READ_API_KEY=itk_… \
#     bash clients/typescript/scripts/check-package.sh <tarball>
# KEEP_CHECK_PROJECT=1 keeps the temporary project (its path is printed). Exit 0: every check held.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: READ_API_URL=<base URL, /application/v1 included> READ_API_KEY=<itk_…> \
         bash clients/typescript/scripts/check-package.sh <tarball>

Installs <tarball> into a new project in a temporary directory, then:
  1. imports the package and finds every documented export;
  2. type-checks a consumer file against the shipped declarations (skipLibCheck off);
  3. runs the shipped example (examples/poller.js) for one poll against READ_API_URL.
The key must read at least one installation. It is passed in the environment only, never printed.
EOF
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  '') usage >&2; exit 2 ;;
esac
[ $# -eq 1 ] || { usage >&2; exit 2; }
[ -f "$1" ] || { echo "check: no such tarball: $1" >&2; exit 2; }
: "${READ_API_URL:?check: set READ_API_URL (the API base, /application/v1 included)}"
: "${READ_API_KEY:?check: set READ_API_KEY (a key that reads at least one installation)}"

TARBALL="$(realpath "$1")"
PACKAGE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME='@installation-telemetry/read-api-client'
# The package's own TypeScript (a devDependency), to compile the consumer file with.
TSC="$(cd "$PACKAGE_DIR" && node -p "require.resolve('typescript/bin/tsc')")"

PROJECT="$(mktemp -d "${TMPDIR:-/tmp}/read-api-client-check.XXXXXX")"
if [ "${KEEP_CHECK_PROJECT:-0}" = 1 ]; then
  echo "check: project kept in $PROJECT"
else
  trap 'rm -rf "$PROJECT"' EXIT
fi
cd "$PROJECT"

step() { echo "check: $*"; }

step "installing $(basename "$TARBALL") into a new project"
cat >package.json <<'EOF'
{ "name": "read-api-client-check", "private": true, "type": "module" }
EOF
# The package depends on nothing: the install needs no registry (prefer-offline, and so it works
# without a network as long as that holds).
npm install --prefer-offline --no-audit --no-fund --loglevel=error "$TARBALL" >/dev/null
INSTALLED="node_modules/$NAME"
[ -f "$INSTALLED/package.json" ] || { echo "check: $NAME not installed" >&2; exit 1; }
[ ! -L "$INSTALLED" ] || { echo "check: $NAME is a link, not the tarball's copy" >&2; exit 1; }

step 'importing the package'
node --input-type=module -e "
  const pkg = await import('$NAME');
  const expected = ['createReadApiClient', 'isApiError', 'chunkIds', 'ReadApiError', 'ApiError',
    'RevokedError', 'TimeoutError', 'NetworkError', 'ProtocolError'];
  const missing = expected.filter((name) => typeof pkg[name] !== 'function');
  if (missing.length > 0) throw new Error('missing exports: ' + missing.join(', '));
  if (pkg.BULK_CHUNK_SIZE !== 100) throw new Error('BULK_CHUNK_SIZE is ' + pkg.BULK_CHUNK_SIZE);
"

step 'type-checking a consumer against the shipped declarations'
cat >tsconfig.json <<'EOF'
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "lib": ["ES2022", "DOM", "DOM.Iterable"],
    "types": [],
    "strict": true,
    "skipLibCheck": false,
    "noEmit": true
  },
  "files": ["consumer.ts"]
}
EOF
cat >consumer.ts <<'EOF'
import {
  type ApiResult,
  type BulkEnergyFlowResult,
  createReadApiClient,
  type EnergyFlowEvent,
  type EnergyFlowResponse,
  type Installation,
  RevokedError,
  type RevokedPhase,
} from '@installation-telemetry/read-api-client';

const client = createReadApiClient({ baseUrl: 'http://127.0.0.1:1/application/v1', apiKey: '' });
export const one: Promise<ApiResult<EnergyFlowResponse>> = client.getEnergyFlow(1);
export const bulk: Promise<BulkEnergyFlowResult> = client.getEnergyFlows([1]);
export const oldest = async (): Promise<Date | null> => (await bulk).oldestLastModified;
export const pages: AsyncGenerator<Installation, void, undefined> = client.installations();
export const stream: AsyncGenerator<EnergyFlowEvent, void, undefined> = client.streamEnergyFlow(1);
export const phase = (e: unknown): RevokedPhase | null => (e instanceof RevokedError ? e.phase : null);
EOF
node "$TSC" -p tsconfig.json

step "running the shipped example for one poll against $READ_API_URL"
OUTPUT="$(POLLS=1 node "$INSTALLED/examples/poller.js" 2>&1)" || {
  echo "$OUTPUT" >&2
  echo 'check: the example failed' >&2
  exit 1
}
echo "$OUTPUT"
# The summary line of a poll that read at least one installation.
grep -qE '^[1-9][0-9]* requests, [0-9]+ answered 304' <<<"$OUTPUT" || {
  echo 'check: the example made no request: does the key read an installation?' >&2
  exit 1
}
step 'ok'
