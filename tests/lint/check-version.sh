#!/usr/bin/env bash
# tools/version's rules (the one place Kiln's version comes from), in a scratch git
# repository holding a copy of the script: no tag, a release tag, commits past it, a
# pre-release tag, a tag that is not a version, an sdist-like tree without .git (its
# VERSION file) and one with neither.
set -euo pipefail
src="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-version: FAILED: $*"; exit 1; }
want() { # want EXPECTED-REGEX DESCRIPTION
  got=$("$tmp/r/tools/version")
  [[ "$got" =~ ^$1$ ]] || fail "$2: tools/version gave '$got', want /$1/"
  echo "check-version: $2: $got"
}
mkdir -p "$tmp/r/tools"
cp "$src/tools/version" "$tmp/r/tools/"
g() { git -C "$tmp/r" -c user.name=t -c user.email=t@t -c tag.gpgSign=false \
        -c commit.gpgSign=false "$@" >/dev/null; }
g init -q
g add tools/version
g commit -q -m one
want '0\.0\.0\.dev1\+g[0-9a-f]{7}' "untagged tree"
g tag -a v1.2.3 -m v1.2.3
want '1\.2\.3' "HEAD at v1.2.3"
g commit -q --allow-empty -m two
g commit -q --allow-empty -m three
want '1\.2\.4\.dev2\+g[0-9a-f]{7}' "two commits past v1.2.3"
g tag v2.0.0rc1
want '2\.0\.0rc1' "HEAD at v2.0.0rc1"
g commit -q --allow-empty -m four
want '2\.0\.0rc1\.dev1\+g[0-9a-f]{7}' "one past v2.0.0rc1"
g tag v2.0.0
g tag v3-wip
want '2\.0\.0' "a tag that is no version (v3-wip) beside v2.0.0"
MESON_DIST_ROOT="$tmp/dist" && mkdir "$tmp/dist" && export MESON_DIST_ROOT
"$tmp/r/tools/version" --dist
[ "$(cat "$tmp/dist/VERSION")" = 2.0.0 ] || fail "--dist wrote '$(cat "$tmp/dist/VERSION")'"
rm -rf "$tmp/r/.git"
cp "$tmp/dist/VERSION" "$tmp/r/VERSION"
want '2\.0\.0' "no .git, the sdist's VERSION file"
rm "$tmp/r/VERSION"
want '0\.0\.0\+unknown' "no .git, no VERSION"
if "$tmp/r/tools/version" --bogus 2>/dev/null; then fail "--bogus accepted"; fi
echo "check-version: all rules hold"
