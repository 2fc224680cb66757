#!/usr/bin/env bash
# Cuts a release of the client: sets the version, turns CHANGELOG.md's "Unreleased" into the
# version's entry, packs the tarball (prepack compiles dist/ and examples/*.js) and checks that
# tarball against a running API (scripts/check-package.sh). Any failure puts package.json, the
# lock file and the changelog back as they were: a committed entry is always a checked release.
# Nothing is published, tagged or committed: the script prints those steps.
#   READ_API_URL=http://127.0.0.1:8080/application/v1 READ_API_KEY=itk_… \
#     npm run release -w clients/typescript -- 1.1.0
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: READ_API_URL=<base URL> READ_API_KEY=<itk_…> \
         bash clients/typescript/scripts/release.sh <version> [--out <dir>]

  <version>    the new version, x.y.z or x.y.z-pre (not yet in CHANGELOG.md)
  --out <dir>  where the tarball goes (default: .local/client-release/ in the repository)

Needs a clean clients/typescript/ (the tarball must be what is committed; ALLOW_DIRTY=1 skips
this), an "## Unreleased" section in CHANGELOG.md saying what changed, and a running API whose
key reads at least one installation (scripts/check-package.sh --help).
EOF
}

VERSION='' OUT=''
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --out) [ $# -ge 2 ] || { usage >&2; exit 2; }; OUT="$2"; shift 2 ;;
    -*) echo "release: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [ -z "$VERSION" ] || { usage >&2; exit 2; }; VERSION="$1"; shift ;;
  esac
done
[ -n "$VERSION" ] || { usage >&2; exit 2; }
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] \
  || { echo "release: not a version: $VERSION" >&2; exit 2; }
: "${READ_API_URL:?release: set READ_API_URL (the API base, /application/v1 included)}"
: "${READ_API_KEY:?release: set READ_API_KEY (a key that reads at least one installation)}"

PACKAGE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$PACKAGE_DIR/../.." && pwd)"
OUT="${OUT:-$ROOT/.local/client-release}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
cd "$ROOT"

if [ "${ALLOW_DIRTY:-0}" != 1 ] && [ -n "$(git status --porcelain -- clients/typescript)" ]; then
  echo 'release: clients/typescript has uncommitted changes (ALLOW_DIRTY=1 to go on anyway)' >&2
  exit 1
fi

# Put every file the release edits back unless it went through to the end.
BACKUP="$(mktemp -d "${TMPDIR:-/tmp}/read-api-client-release.XXXXXX")"
EDITED=(clients/typescript/package.json clients/typescript/CHANGELOG.md package-lock.json)
for f in "${EDITED[@]}"; do cp "$f" "$BACKUP/$(basename "$f")"; done
released=0
restore() {
  if [ "$released" != 1 ]; then
    for f in "${EDITED[@]}"; do cp "$BACKUP/$(basename "$f")" "$f"; done
    echo 'release: failed; package.json, package-lock.json and CHANGELOG.md are as they were' >&2
  fi
  rm -rf "$BACKUP"
}
trap restore EXIT

echo "release: changelog entry for $VERSION"
node "$PACKAGE_DIR/scripts/changelog-release.mjs" "$PACKAGE_DIR/CHANGELOG.md" "$VERSION" \
  "$(date -u +%Y-%m-%d)"

echo "release: version $VERSION"
# From the root, so the lock file's entry of the workspace follows; nothing is downloaded.
npm version "$VERSION" -w clients/typescript --no-git-tag-version --offline --no-audit \
  --no-fund --loglevel=error >/dev/null

echo "release: packing into $OUT"
PACKED="$(cd "$PACKAGE_DIR" && npm pack --json --pack-destination "$OUT" --loglevel=error)"
# npm prints the lifecycle scripts' output before the JSON: read from its first '['.
read -r FILENAME INTEGRITY < <(node -e '
  const text = require("node:fs").readFileSync(0, "utf8");
  const [packed] = JSON.parse(text.slice(text.indexOf("[")));
  console.log(packed.filename, packed.integrity);
' <<<"$PACKED")
TARBALL="$OUT/$FILENAME"

bash "$PACKAGE_DIR/scripts/check-package.sh" "$TARBALL"

released=1
cat <<EOF
release: $VERSION packed and checked
  tarball    $TARBALL
  integrity  $INTEGRITY
Next:
  git commit -m "Client $VERSION" clients/typescript/package.json clients/typescript/CHANGELOG.md package-lock.json
  git tag read-api-client-v$VERSION
  hand out the tarball (npm install ./$FILENAME), or once a registry is chosen:
  npm publish $TARBALL
EOF
