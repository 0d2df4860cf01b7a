#!/usr/bin/env bash
# Export the three benchmarks exactly as the memory systems see them, for systems outside the
# harness. Usage: scripts/export_datasets.sh OUT_DIR [overrides…]   (e.g. data.root=/data)
set -euo pipefail
out="${1:?usage: scripts/export_datasets.sh OUT_DIR [overrides…]}"
shift
for name in locomo hotpotqa bioasq; do
  python -m eval data export "data=$name" "out=$out/$name.json" "$@"
done
