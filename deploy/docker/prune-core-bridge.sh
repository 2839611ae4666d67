#!/bin/sh
# Keeps in @temporalio/core-bridge only what the target platform loads at run time. The npm package ships the
# prebuilt native module of every platform it supports (releases/<rust target triple>/index.node, ~28 MB each)
# and the Rust sources of the bridge (sdk-core/, src/, Cargo.*; ~11 MB) for building from source; the image
# runs one platform and never builds, so the rest goes.
#   usage: prune-core-bridge.sh <amd64|arm64> <node_modules dir>
# The triple is the one the bridge's loader (common.js getPrebuiltTargetName) picks on Linux/glibc.
set -eu
arch="$1"
bridge="$2/@temporalio/core-bridge"
case "$arch" in
  amd64) keep=x86_64-unknown-linux-gnu ;;
  arm64) keep=aarch64-unknown-linux-gnu ;;
  *)
    echo "prune-core-bridge: no prebuilt Temporal core bridge for architecture '$arch' (amd64, arm64)" >&2
    exit 2
    ;;
esac
if [ ! -f "$bridge/releases/$keep/index.node" ]; then
  echo "prune-core-bridge: $bridge/releases/$keep/index.node is missing" >&2
  exit 2
fi
for dir in "$bridge"/releases/*/; do
  [ "$(basename "$dir")" = "$keep" ] || rm -rf "$dir"
done
rm -rf "$bridge/sdk-core" "$bridge/src" "$bridge/bridge-macros" "$bridge/Cargo.toml" "$bridge/Cargo.lock"
echo "prune-core-bridge: kept releases/$keep"
