#!/usr/bin/env bash
# Rebuild static/vendor/ (CodeMirror 6 bundle, JetBrains Mono, plotly.js with the traces the page
# draws) from pinned npm packages.
#
#   scripts/vendor_assets.sh           # npm ci from scripts/vendor/package-lock.json, then bundle
#   scripts/vendor_assets.sh --update  # npm install (refreshes the lock file), then bundle
#
# The output is committed, so serving torchbolt needs neither npm nor a network. npm works in a
# scratch folder outside the repository; only the lock file is copied back with --update.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
spec="$repo/scripts/vendor"
out="$repo/static/vendor"
work="$(mktemp -d "${TMPDIR:-/tmp}/torchbolt-vendor.XXXXXX")"
trap 'rm -rf "$work"' EXIT

cp "$spec/package.json" "$spec/package-lock.json" "$spec/entry.js" "$spec/plotly-entry.js" "$work/"
cd "$work"
if [[ "${1:-}" == "--update" ]]; then
  npm install --no-audit --no-fund
  cp package-lock.json "$spec/package-lock.json"
else
  npm ci --no-audit --no-fund
fi

rm -rf "$out" && mkdir -p "$out/fonts"
./node_modules/.bin/esbuild entry.js --bundle --format=esm --minify --legal-comments=eof \
  --outfile="$out/codemirror.js"
for weight in 400 700; do
  cp "node_modules/@fontsource/jetbrains-mono/files/jetbrains-mono-latin-$weight-normal.woff2" \
    "$out/fonts/"
done
cp node_modules/@fontsource/jetbrains-mono/LICENSE "$out/fonts/LICENSE-JetBrainsMono.txt"
# plotly.js's own bundle settings (its esbuild-config.js); maplibre's CSS (map traces) is left out.
./node_modules/.bin/esbuild plotly-entry.js --bundle --format=iife --global-name=Plotly --minify \
  --define:global=window --define:define.amd=false --define:process.env.NODE_DEBUG=false \
  --target=es2016 --legal-comments=eof --outfile="$work/plotly/plotly.min.js"
cp "$work/plotly/plotly.min.js" "$out/plotly.min.js"
cp node_modules/plotly.js/LICENSE "$out/LICENSE-plotly.txt"
ls -l "$out" "$out/fonts"
