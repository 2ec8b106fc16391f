#!/usr/bin/env bash
# `make demo`: climb the ladder where a rung wins and where it does not:
# n-gram speculative decoding on copy requests, on a copying model of
# realistic per-token cost (the retrieval construction at the 110m model's
# shapes, Q8_0), at a low and a high
# offered load under a TPOT SLO set from this machine's own speed
# (bench/climb_spec_copy.sh; the verdict and the ledger are printed); then
# serve what the ledger promoted at the low load, replay a mixed workload
# (chat + agent + long-context) at two offered rates, print the goodput
# summary and where the reports are, and stop the server on any exit.
#
#   bash scripts/demo.sh path/to/ladder        (output: $LADDER_DEMO_OUT, default ./demo-out)
#
# The replayed sessions use /v1/completions so that no chat-template text
# eats the context, and short lengths so the replay takes about a minute.
set -euo pipefail

LADDER=${1:?usage: bash scripts/demo.sh path/to/ladder}
OUT=${LADDER_DEMO_OUT:-demo-out}
RATES=${LADDER_DEMO_RATES:-2,8}
SLO=${LADDER_DEMO_SLO:-ttft_ms=250,tpot_ms=50,e2e_ms=2500}

if [[ ! -x "$LADDER" ]]; then
  echo "demo: $LADDER is not an executable; build first (make build)" >&2
  exit 1
fi
for sub in serve workload replay climb ledger; do
  if ! "$LADDER" "$sub" --help >/dev/null 2>&1; then
    echo "demo: this ladder binary has no '$sub' subcommand yet; the demo needs serve, workload, replay, climb and ledger" >&2
    exit 1
  fi
done

mkdir -p "$OUT"
SHARED=${LADDER_SHARED_DIR:-../shared}
SHARED=$(cd "$SHARED" 2>/dev/null && pwd || echo "$SHARED")

# The climb (a few minutes on two cores; progress in $OUT/spec/climb.log).
echo "demo: climbing n-gram speculative decoding on a copying model of the 110m model's shapes, at a low and a high load"
if ! LADDER_BIN="$LADDER" bash "$(dirname "$0")/../bench/climb_spec_copy.sh" unused "$OUT/spec"; then
  echo "demo: the climb failed (its log: $OUT/spec/climb.log)" >&2
  exit 1
fi
MODEL="$OUT/spec/copy110-q8.gguf"
echo "demo: the climb's side-by-side report is $OUT/spec/climb/climb.html"
echo

SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
}
trap stop_server EXIT INT TERM

# --ledger serves what the climb promoted at the measured load nearest --load.
"$LADDER" serve --port 0 -m "$MODEL" -t 2 --ledger "$OUT/spec/ledger.jsonl" --load 1 \
  >"$OUT/serve.out" 2>"$OUT/serve.log" &
SERVER_PID=$!
URL=""
for _ in $(seq 1 300); do
  URL=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$OUT/serve.out" | head -n 1)
  [[ -n "$URL" ]] && break
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "demo: ladder serve exited; its log:" >&2
    cat "$OUT/serve.log" >&2
    exit 1
  fi
  sleep 0.2
done
if [[ -z "$URL" ]]; then
  echo "demo: ladder serve did not report an address within 60 s" >&2
  exit 1
fi
echo "demo: ladder serve is at $URL (pid $SERVER_PID), serving what the ledger promoted at load 1x:"
grep -h "ledger" "$OUT/serve.log" | head -n 3 || true

"$LADDER" workload mixed -o "$OUT/mixed.jsonl" --requests 48 --seed 7 --rate 2 --tenants 2 \
  --api completions --chat-system "Tell a story." --chars-per-token 1.5 --user-tokens 8 \
  --system-tokens 8 --context-tokens 60 --max-tokens 12 --turns 3 --calls 3 --think-s 0.3 --tool-s 0.1

echo "demo: replaying at offered rates $RATES (sessions and requests per second), SLO $SLO"
"$LADDER" replay --endpoint "$URL" --workload "$OUT/mixed.jsonl" --sweep "$RATES" --arrival poisson \
  --slo "$SLO" --out "$OUT"

echo
echo "demo: open $OUT/report.html in a browser (it works offline); the record is $OUT/record.json"
