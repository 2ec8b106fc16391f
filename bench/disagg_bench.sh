#!/usr/bin/env bash
# Rung 2 (prefill/decode split) against rung 1, paired in one run on this
# machine at equal cores (taskset): rung 1 is `ladder serve` on cores 0-1
# with two op threads; rung 2 is a prefill worker on core 0, a decode worker
# on core 1 and the router beside the decode worker on core 1, one op thread
# each. The router's --prefill-policy is PREFILL_POLICY (default measured:
# conditional disaggregation); its decisions are printed per workload.
# TPOT_MS (default 200) is the TPOT SLO the replays judge goodput by and the
# router's --tpot-ms objective (the router keeps to the SLO it is scored on). Each workload is replayed
# against rung 1 (saving the reference), then against the router with
# --verify exact (every request must match rung 1's tokens to count).
#
#   bench/disagg_bench.sh [OUT_DIR]      (LADDER=path/to/ladder, MODEL=...)
#
# Workloads: `ladder workload chat`, and the Azure code trace from
# ../shared/traces (prefill-heavy), lengths capped to the model's context.
# Prints per run: goodput, TTFT and TPOT p50/p99 (replay's record), and for
# rung 2 the KV bytes and transfer time per transferred request (router
# /metrics).
set -euo pipefail
LADDER=${LADDER:-build/src/cli/ladder}
OUT=${1:-$(mktemp -d)}
SHARED=${LADDER_SHARED_DIR:-../shared}
DURATION=${DURATION:-60}
mkdir -p "$OUT"
MODEL=${MODEL:-$OUT/bench.gguf}
if [ ! -f "$MODEL" ]; then
  # Random weights over stories260K's vocabulary, big enough that a prompt of
  # a thousand tokens costs prefill time worth moving off the decode core.
  "$LADDER" synth -o "$MODEL" --dim 384 --layers 6 --heads 6 --ffn 1024 --ctx 2048 \
    --vocab-from "$SHARED/models/stories260K.gguf" >/dev/null
fi
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# serve CORE NAME ARGS...: a pinned ladder process; sets PORT_<NAME>.
serve() {
  local core=$1 name=$2
  shift 2
  taskset -c "$core" "$LADDER" "$@" --port 0 >"$OUT/$name.out" 2>"$OUT/$name.log" &
  PIDS+=("$!")
  for _ in $(seq 600); do
    if grep -q '^listening on' "$OUT/$name.out"; then break; fi
    sleep 0.1
  done
  local port
  port=$(sed -n 's/^listening on http:\/\/[^:]*:\([0-9]*\)$/\1/p' "$OUT/$name.out" | head -1)
  [ -n "$port" ] || { echo "$name did not start: $(tail -5 "$OUT/$name.log")" >&2; exit 1; }
  eval "PORT_$name=$port"
}
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v s="$2" '$1 == s {print $2}'; }

COMMON=(-m "$MODEL" --max-running 16 --max-batch-tokens 512)
serve 0,1 rung1 serve "${COMMON[@]}" --threads 2
serve 0 prefill serve "${COMMON[@]}" --threads 1 --role prefill
serve 1 decode serve "${COMMON[@]}" --threads 1 --role decode --kv-host 127.0.0.1
serve 1 router route -m "$MODEL" --prefill "http://127.0.0.1:$PORT_prefill" --decode "http://127.0.0.1:$PORT_decode" \
  --prefill-policy "${PREFILL_POLICY:-measured}" --tpot-ms "${TPOT_MS:-200}"

"$LADDER" workload chat -o "$OUT/chat.jsonl" --requests 400 --rate 2 --seed 1 --max-tokens 48 --user-tokens 200 >/dev/null
WORKLOADS=(chat:"$OUT/chat.jsonl" azure-code:"$SHARED/traces/AzureLLMInferenceTrace_code.csv")
REPLAY=(--duration "$DURATION" --max-output-tokens 64 --ignore-eos --quiet --allow-errors
        --slo "ttft_ms=2000,tpot_ms=${TPOT_MS:-200}")
for w in "${WORKLOADS[@]}"; do
  name=${w%%:*}
  file=${w#*:}
  extra=()
  [ "$name" = azure-code ] && extra=(--rate "${AZURE_RATE:-1}" --seed 3 --max-input-tokens 1500 --chars-per-token 1.8)
  "$LADDER" replay --endpoint "http://127.0.0.1:$PORT_rung1" --workload "$file" --out "$OUT/$name-rung1" \
    "${REPLAY[@]}" "${extra[@]}" --save-reference "$OUT/$name-ref.jsonl" > "$OUT/$name-rung1.txt"
  t0=$(metric "$PORT_router" ladder_router_transfers_total)
  b0=$(metric "$PORT_router" ladder_router_transfer_bytes_total)
  s0=$(metric "$PORT_router" ladder_router_transfer_seconds_total)
  "$LADDER" replay --endpoint "http://127.0.0.1:$PORT_router" --workload "$file" --out "$OUT/$name-rung2" \
    "${REPLAY[@]}" "${extra[@]}" --reference "$OUT/$name-ref.jsonl" --verify exact > "$OUT/$name-rung2.txt"
  t1=$(metric "$PORT_router" ladder_router_transfers_total)
  b1=$(metric "$PORT_router" ladder_router_transfer_bytes_total)
  s1=$(metric "$PORT_router" ladder_router_transfer_seconds_total)
  echo "== $name: rung 1"
  cat "$OUT/$name-rung1.txt"
  echo "== $name: rung 2"
  cat "$OUT/$name-rung2.txt"
  python3 - "$t0" "$t1" "$b0" "$b1" "$s0" "$s1" <<'PY'
import sys
t0, t1, b0, b1, s0, s1 = map(float, sys.argv[1:])
n = t1 - t0
if n > 0:
    print(f"transfers {n:.0f}: {(b1 - b0) / n / 1024:.1f} KiB and {(s1 - s0) / n * 1000:.2f} ms per transferred request")
PY
  echo "router decisions so far (where the prompt was computed, why):"
  curl -s "http://127.0.0.1:$PORT_router/metrics" | grep -E '^ladder_router_prefill_(decisions_total|threshold_tokens)' || true
done
echo "records under $OUT"
