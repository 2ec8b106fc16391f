#!/usr/bin/env bash
# `make demo`: climb the ladder on the default model (rung 1 against two
# rung-1 settings, paired replays of two real traces; the verdict is printed
# first, then the ledger), then serve what the ledger promoted, replay a mixed
# workload (chat + agent + long-context) at two offered rates, print the
# goodput summary and where the reports are, and stop the server on any exit.
#
#   bash scripts/demo.sh path/to/ladder        (output: $LADDER_DEMO_OUT, default ./demo-out)
#
# The workload is sized for the tiny default model (stories260K: a 128-token
# context and a 512-piece vocabulary, about 1.5 characters per token), and its
# sessions use /v1/completions so no chat-template text eats the context.
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

# The climb: a short policy (two real traces, scaled to the tiny model's
# context; two candidates), about two minutes on two cores. Progress goes to
# $OUT/climb.log; the verdict opens the output.
cat >"$OUT/climb-policy.toml" <<EOF
# ladder climb policy of make demo (docs/CLIMB.md)
repeats = 4
warmup_requests = 4
[slo]
ttft_ms = 250
e2e_ms = 2500
[quality]
verify = "exact"
margin = 1.0
[[workload]]
name = "mooncake"
path = "$SHARED/traces/mooncake_conversation_trace.jsonl"
args = ["--requests", "16", "--length-scale", "0.005", "--max-input-tokens", "48", "--max-output-tokens", "8", "--rate", "8"]
[[workload]]
name = "azure-conv"
path = "$SHARED/traces/AzureLLMInferenceTrace_conv.csv"
args = ["--requests", "16", "--length-scale", "0.05", "--max-input-tokens", "48", "--max-output-tokens", "8", "--rate", "8"]
[[rung]]
name = "dense"
[[rung]]
name = "chunk-16"
args = ["--max-chunk-tokens", "16"]
[[rung]]
name = "kv-f32"
args = ["--kv-dtype", "f32"]
EOF
rm -f "$OUT/climb/ledger.jsonl"
if ! "$LADDER" climb --policy "$OUT/climb-policy.toml" --out "$OUT/climb" >"$OUT/climb.out" 2>"$OUT/climb.log"; then
  echo "demo: ladder climb failed; its log:" >&2
  tail -n 20 "$OUT/climb.log" >&2
  exit 1
fi
head -n 1 "$OUT/climb.out"
echo
"$LADDER" ledger show "$OUT/climb/ledger.jsonl"
echo "demo: the climb's side-by-side report is $OUT/climb/climb.html"
echo

SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
}
trap stop_server EXIT INT TERM

# The default model: no -m, so the binary's own lookup ($LADDER_MODEL, then the shared stories260K);
# --ledger serves what the climb promoted.
"$LADDER" --log-level warn serve --port 0 --ledger "$OUT/climb/ledger.jsonl" >"$OUT/serve.out" 2>"$OUT/serve.log" &
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
echo "demo: ladder serve is at $URL (pid $SERVER_PID), serving what the ledger says"

"$LADDER" workload mixed -o "$OUT/mixed.jsonl" --requests 48 --seed 7 --rate 2 --tenants 2 \
  --api completions --chat-system "Tell a story." --chars-per-token 1.5 --user-tokens 8 \
  --system-tokens 8 --context-tokens 60 --max-tokens 12 --turns 3 --calls 3 --think-s 0.3 --tool-s 0.1

echo "demo: replaying at offered rates $RATES (sessions and requests per second), SLO $SLO"
"$LADDER" replay --endpoint "$URL" --workload "$OUT/mixed.jsonl" --sweep "$RATES" --arrival poisson \
  --slo "$SLO" --out "$OUT"

echo
echo "demo: open $OUT/report.html in a browser (it works offline); the record is $OUT/record.json"
