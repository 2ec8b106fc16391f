#!/usr/bin/env bash
# A reserved tenant's TTFT alone and under a 100-stream flood by another
# tenant, through `ladder replay` against one `ladder serve`: the same beta
# requests (one every 0.25 s) are replayed twice, first alone, then with
# alpha sending 100 long streams at t = 0. Prints beta's TTFT percentiles in
# both runs and the p99 ratio (issue: within 3x).
#
# Usage: bench/reservation_flood.sh [LADDER_BUILD_DIR]
set -euo pipefail
BUILD_DIR=${1:-build}
LADDER="$BUILD_DIR/src/cli/ladder"
[[ -x "$LADDER" ]] || { echo "error: $LADDER not found; build first (make build)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'kill "${SERVER_PID:-0}" 2>/dev/null || true; [[ -n "${KEEP:-}" ]] || rm -rf "$OUT"' EXIT

SHARED=${LADDER_SHARED_DIR:-../shared}
VOCAB=()
[[ -f "$SHARED/models/stories260K.gguf" ]] && VOCAB=(--vocab-from "$SHARED/models/stories260K.gguf")
# A model whose steps take milliseconds, so that batching matters.
"$LADDER" synth -o "$OUT/model.gguf" --dim 512 --layers 6 --heads 8 --ffn 1536 --ctx 1024 "${VOCAB[@]}" 2> /dev/null

cat > "$OUT/tenants.toml" << 'EOF'
[[tenant]]
name = "alpha"
api_keys = ["key-alpha"]

[[tenant]]
name = "beta"
api_keys = ["key-beta"]
reserved_share = 0.25
EOF

python3 - "$OUT" << 'EOF'
import json, sys
out = sys.argv[1]
beta = [{"t": 0.5 + 0.25 * i, "tenant": "beta", "prompt": "Once upon a time there was a little girl %d" % i,
         "max_tokens": 16, "slice": "beta"} for i in range(40)]
flood = [{"t": 0.0, "tenant": "alpha", "prompt": "Once upon a time %d" % i, "max_tokens": 400,
          "slice": "flood"} for i in range(100)]
with open(out + "/warmup.jsonl", "w") as f:
    for r in beta[:8]: f.write(json.dumps(dict(r, t=r["t"] - 0.5)) + "\n")
with open(out + "/alone.jsonl", "w") as f:
    for r in beta: f.write(json.dumps(r) + "\n")
with open(out + "/flood.jsonl", "w") as f:
    for r in sorted(flood + beta, key=lambda r: r["t"]): f.write(json.dumps(r) + "\n")
EOF

"$LADDER" serve -m "$OUT/model.gguf" --port 0 --tenants "$OUT/tenants.toml" --max-running 16 --max-queue 256 \
  --threads "${LADDER_BENCH_THREADS:-2}" > "$OUT/serve.out" 2> "$OUT/serve.log" &
SERVER_PID=$!
for _ in $(seq 1 300); do
  URL=$(grep -o 'http://[0-9.]*:[0-9]*' "$OUT/serve.out" | head -1 || true)
  [[ -n "$URL" ]] && break
  sleep 0.1
done
[[ -n "$URL" ]] || { echo "error: ladder serve did not start" >&2; cat "$OUT/serve.log" >&2; exit 1; }

# warmup: first requests pay for allocations and the kernel-choice probe.
for run in warmup alone flood; do
  KEYS=(--tenant-key beta=key-beta)
  [[ $run == flood ]] && KEYS+=(--tenant-key alpha=key-alpha)
  "$LADDER" replay --endpoint "$URL" --workload "$OUT/$run.jsonl" --out "$OUT/$run" --quiet --model model \
    --api-key key-beta "${KEYS[@]}" --allow-errors > "$OUT/$run.txt" 2>&1 || true
done

python3 - "$OUT" << 'EOF'
import json, sys
out = sys.argv[1]
def beta_ttft(run):
    vals = []
    for line in open(out + "/" + run + "/requests.jsonl"):
        r = json.loads(line)
        if r["tenant"] == "beta" and r["ttft_ms"] is not None:
            vals.append(r["ttft_ms"])
    vals.sort()
    return vals
def pct(v, p):
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
res = {}
for run in ("alone", "flood"):
    v = beta_ttft(run)
    res[run] = v
    print("%-6s beta requests %d: TTFT p50 %.1f ms, p90 %.1f ms, p99 %.1f ms" % (run, len(v), pct(v, 50), pct(v, 90), pct(v, 99)))
print("p99 under flood / alone: %.2fx" % (pct(res["flood"], 99) / pct(res["alone"], 99)))
EOF
