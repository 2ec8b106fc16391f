#!/usr/bin/env bash
# Rung 2 across hosts, as far as one machine allows: three network
# namespaces (router, prefill host, decode host) joined by veth links, one
# Ladder process in each, created and removed here (needs root: CI runs as
# root). A workload replayed through the router must equal a rung-1 server's
# output token for token, for two tenants that never share blocks; every block
# must be free at the end; a decode worker killed mid-stream must fail its
# request with a clear error while the router stays healthy.
#
#   netns_test.sh LADDER_BIN MODEL.gguf
#
# Exits 0 and prints "netns test: PASS" only when everything held. A kernel or
# user that cannot make namespaces is a FAILURE with the reason, never a skip.
set -euo pipefail

LADDER=${1:?usage: netns_test.sh LADDER_BIN MODEL}
MODEL=${2:?usage: netns_test.sh LADDER_BIN MODEL}
P="lr$$"  # namespace and link names stay under 15 characters
NS_R="$P-router" NS_P="$P-prefill" NS_D="$P-decode"
WORK=$(mktemp -d)
PIDS=()

fail() { echo "netns test: FAIL: $*" >&2; exit 1; }

cleanup() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ns in "$NS_R" "$NS_P" "$NS_D"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || fail "needs root to create network namespaces (CI runs as root); uid is $(id -u)"
command -v ip >/dev/null || fail "the ip command (iproute2) is missing: scripts/install-deps.sh installs it"
command -v curl >/dev/null || fail "curl is missing: scripts/install-deps.sh installs it"
for ns in "$NS_R" "$NS_P" "$NS_D"; do
  ip netns add "$ns" 2>"$WORK/err" || fail "the kernel refused a network namespace: $(cat "$WORK/err")"
  ip -n "$ns" link set lo up
done

# link NS_A NS_B SUBNET: a veth pair, .1 in A and .2 in B.
link() {
  local a=$1 b=$2 net=$3 ia="$P-$4a" ib="$P-$4b"
  ip link add "$ia" netns "$a" type veth peer name "$ib" netns "$b" || fail "cannot create a veth pair"
  ip -n "$a" addr add "$net.1/24" dev "$ia"
  ip -n "$b" addr add "$net.2/24" dev "$ib"
  ip -n "$a" link set "$ia" up
  ip -n "$b" link set "$ib" up
}
link "$NS_R" "$NS_P" 10.77.1 rp   # router  10.77.1.1 <-> prefill 10.77.1.2
link "$NS_R" "$NS_D" 10.77.2 rd   # router  10.77.2.1 <-> decode  10.77.2.2
link "$NS_P" "$NS_D" 10.77.3 pd   # prefill 10.77.3.1 <-> decode  10.77.3.2
# The router names the decode host by 10.77.2.2; the prefill host reaches it
# over its own link to the decode host.
ip -n "$NS_P" route add 10.77.2.2/32 via 10.77.3.2

cat > "$WORK/tenants.toml" <<'TOML'
admin_api_keys = ["key-admin"]   # /metrics follows the API key

[[tenant]]
name = "alpha"
api_keys = ["key-alpha"]

[[tenant]]
name = "beta"
api_keys = ["key-beta"]
TOML

# start NS NAME ARGS...: a ladder process in NS, logging to $WORK/NAME.log.
start() {
  local ns=$1 name=$2
  shift 2
  ip netns exec "$ns" "$LADDER" "$@" >"$WORK/$name.out" 2>"$WORK/$name.log" &
  PIDS+=("$!")
  eval "PID_$name=$!"
}
# wait_ready NS URL NAME: /health says 200 within a minute.
wait_ready() {
  for _ in $(seq 600); do
    if ip netns exec "$1" curl -sf -o /dev/null "$2/health"; then return 0; fi
    sleep 0.1
  done
  fail "$3 never became ready; its log:
$(tail -20 "$WORK/$3.log")"
}

T=(--tenants "$WORK/tenants.toml" --threads 1)
start "$NS_P" prefill serve -m "$MODEL" --host 0.0.0.0 --port 8080 --role prefill "${T[@]}"
start "$NS_D" decode serve -m "$MODEL" --host 0.0.0.0 --port 8080 --role decode --kv-host 0.0.0.0 --kv-port 9090 "${T[@]}"
start "$NS_R" rung1 serve -m "$MODEL" --host 127.0.0.1 --port 8090 "${T[@]}"
wait_ready "$NS_P" http://10.77.1.2:8080 prefill
wait_ready "$NS_D" http://10.77.2.2:8080 decode
wait_ready "$NS_R" http://127.0.0.1:8090 rung1
start "$NS_R" router route -m "$MODEL" --host 127.0.0.1 --port 8080 --tenants "$WORK/tenants.toml" --prefill-policy always \
  --prefill http://10.77.1.2:8080 --decode http://10.77.2.2:8080
wait_ready "$NS_R" http://127.0.0.1:8080 router

# The router's host cannot see the workers' loopback, and the workers are
# reachable only over the veth links: the KV really crossed a link.
post() {  # post URL KEY BODY -> response body on stdout
  ip netns exec "$NS_R" curl -s -X POST "$1/v1/completions" -H "Authorization: Bearer $2" \
    -H 'Content-Type: application/json' -d "$3"
}
metric() {  # metric NS URL SERIES
  ip netns exec "$1" curl -s -H "Authorization: Bearer key-admin" "$2/metrics" | awk -v s="$3" '$1 == s {print $2}'
}

STORY="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she saw a big red ball under a tree. Her brother Ben wanted to play with the ball too. They shared the ball and laughed all day long."
n=0
for key in key-alpha key-alpha key-beta; do
  for extra in '"temperature":0' '"temperature":0.8,"seed":5'; do
    body="{\"prompt\":\"$STORY $n\",\"max_tokens\":24,\"return_token_ids\":true,$extra}"
    [ "$key" = key-beta ] && body="{\"prompt\":\"$STORY\",\"max_tokens\":24,\"return_token_ids\":true,$extra}"
    post http://127.0.0.1:8090 "$key" "$body" >"$WORK/want.json"
    post http://127.0.0.1:8080 "$key" "$body" >"$WORK/got.json"
    python3 - "$WORK/want.json" "$WORK/got.json" <<'PY' || fail "the split's output differs from rung 1's for $key $extra"
import json, sys
want, got = (json.load(open(p)) for p in sys.argv[1:3])
w, g = want["choices"][0], got["choices"][0]
if w["token_ids"] != g["token_ids"] or w["text"] != g["text"] or not w["token_ids"]:
    print("want", w["token_ids"], "\ngot ", g["token_ids"], file=sys.stderr)
    sys.exit(1)
PY
  done
  n=$((n + 1))
done

imported=$(metric "$NS_D" http://10.77.2.2:8080 ladder_kv_imported_blocks_total)
refused=$(metric "$NS_D" http://10.77.2.2:8080 ladder_kv_refused_blocks_total)
transfers=$(metric "$NS_R" http://127.0.0.1:8080 ladder_router_transfers_total)
[ "${imported:-0}" -gt 0 ] || fail "the decode host imported no KV blocks"
[ "${refused:-x}" = 0 ] || fail "the decode host refused $refused KV blocks (a key or format mismatch)"
[ "${transfers:-0}" -ge 2 ] || fail "the router counted $transfers transfers, expected at least 2 (alpha's first prompt, beta's)"

# Zero cross-tenant hits on either host, with a prompt neither tenant sent
# yet: alpha's request moves its blocks; alpha's longer one extends it (the
# prefill host hits its own cache, only the new blocks move); beta's longer
# one hits nothing on the prefill host and imports all its own blocks on the
# decode host (a hit on alpha's would have imported none).
hits() { metric "$NS_P" http://10.77.1.2:8080 ladder_engine_prefix_cache_hit_tokens_total; }
imports() { metric "$NS_D" http://10.77.2.2:8080 ladder_kv_imported_blocks_total; }
SHORT="Tom had a small blue boat. He took it to the lake every day. His sister Sue came with him."
X="{\"prompt\":\"$SHORT\",\"max_tokens\":4}"
Y="{\"prompt\":\"$SHORT $STORY\",\"max_tokens\":4}"
h0=$(hits); i0=$(imports)
post http://127.0.0.1:8080 key-alpha "$X" >/dev/null
h1=$(hits); i1=$(imports)
post http://127.0.0.1:8080 key-alpha "$Y" >/dev/null
h2=$(hits); i2=$(imports)
post http://127.0.0.1:8080 key-beta "$Y" >/dev/null
h3=$(hits); i3=$(imports)
[ "$h1" = "$h0" ] && [ $((i1 - i0)) -gt 0 ] || fail "alpha's first request: prefill hits $h0 -> $h1, imports $i0 -> $i1"
[ "$h2" -gt "$h1" ] && [ $((i2 - i1)) -gt 0 ] || fail "alpha's longer request: prefill hits $h1 -> $h2, imports $i1 -> $i2"
[ "$h3" = "$h2" ] || fail "beta hit alpha's blocks on the prefill host ($h2 -> $h3 hit tokens)"
[ $((i3 - i2)) -eq $((i2 - i0)) ] || fail "beta imported $((i3 - i2)) blocks on the decode host, alpha $((i2 - i0)) for the same prompt: a cross-tenant hit"
per_req=$((i3 - i2))
for ns_url in "$NS_P http://10.77.1.2:8080" "$NS_D http://10.77.2.2:8080"; do
  set -- $ns_url
  used=$(ip netns exec "$1" curl -s "$2/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["kv_blocks_used"])')
  [ "$used" = 0 ] || fail "$2 still holds $used KV blocks"
done

# Kill the decode host's worker mid-stream.
LONG="{\"prompt\":\"$STORY\",\"max_tokens\":400,\"ignore_eos\":true,\"stream\":true,\"temperature\":0}"
ip netns exec "$NS_R" curl -sN -X POST http://127.0.0.1:8080/v1/completions -H 'Authorization: Bearer key-alpha' \
  -H 'Content-Type: application/json' -d "$LONG" >"$WORK/stream.txt" &
CURL=$!
for _ in $(seq 600); do grep -q '^data: ' "$WORK/stream.txt" 2>/dev/null && break; sleep 0.05; done
grep -q '^data: ' "$WORK/stream.txt" || fail "the long stream never started"
kill -9 "$PID_decode"
wait "$CURL" || true
grep -q '"worker_lost"' "$WORK/stream.txt" || fail "the killed worker's stream did not end with a worker_lost error:
$(tail -c 600 "$WORK/stream.txt")"
grep -q 'data: \[DONE\]' "$WORK/stream.txt" || fail "the failed stream was not terminated with [DONE]"
code=$(ip netns exec "$NS_R" curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/health)
[ "$code" = 200 ] || fail "the router's /health says $code after losing its decode worker"
after=$(post http://127.0.0.1:8080 key-alpha '{"prompt":"Once upon a time","max_tokens":4}')
echo "$after" | grep -q '"no_worker"' || fail "with no decode worker left a request should get a no_worker error, got: $after"
used=$(ip netns exec "$NS_P" curl -s http://10.77.1.2:8080/health | python3 -c 'import json,sys; print(json.load(sys.stdin)["kv_blocks_used"])')
[ "$used" = 0 ] || fail "the prefill host still holds $used KV blocks after the decode host died"

echo "netns test: 3 namespaces, 6 requests equal to rung 1, $imported blocks imported, 0 refused; no cross-tenant hit ($per_req blocks per tenant); decode host killed mid-stream: clean error, router healthy"
echo "netns test: PASS"
