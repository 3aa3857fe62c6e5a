#!/usr/bin/env bash
# scripts/setup adds bookworm-backports to the existing Debian entry in both apt formats, once.
set -euo pipefail
setup="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# deb822 (.sources), as on Debian 12 images.
mkdir -p "$work/deb822/sources.list.d"
cat >"$work/deb822/sources.list.d/debian.sources" <<'SRC'
Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
SRC
for run in 1 2; do ATA_APT_ETC="$work/deb822" "$setup" --sources-only >/dev/null; done
grep -qx "Suites: bookworm bookworm-updates bookworm-backports" "$work/deb822/sources.list.d/debian.sources" ||
  fail "deb822: suite not added once to the main stanza"
grep -qx "Suites: bookworm-security" "$work/deb822/sources.list.d/debian.sources" ||
  fail "deb822: security stanza changed"

# One-line sources.list.
mkdir -p "$work/oneline/sources.list.d"
cat >"$work/oneline/sources.list" <<'SRC'
# comment
deb http://mirror.example/debian bookworm main contrib
deb http://mirror.example/debian-security bookworm-security main
SRC
for run in 1 2; do ATA_APT_ETC="$work/oneline" "$setup" --sources-only >/dev/null; done
[ "$(grep -c 'bookworm-backports' "$work/oneline/sources.list")" = 1 ] || fail "one-line: expected one backports line"
grep -qx "deb http://mirror.example/debian bookworm-backports main contrib" "$work/oneline/sources.list" ||
  fail "one-line: backports line does not reuse the Debian entry"

# No Debian entry at all: a clear error, non-zero.
mkdir -p "$work/none/sources.list.d"
if ATA_APT_ETC="$work/none" "$setup" --sources-only 2>"$work/err"; then fail "accepted no sources"; fi
grep -q "no Debian source entry" "$work/err" || fail "unclear error: $(cat "$work/err")"

if "$setup" --bogus 2>/dev/null; then fail "accepted an unknown option"; fi
echo "setup sources: deb822, one-line, none, bad option: all as expected"
