#!/usr/bin/env bash
# Runs one libFuzzer target (fuzz_gguf, fuzz_http or fuzz_kv_wire) with a seed corpus.
#   scripts/fuzz.sh BINARY SECONDS SHARED_DIR
# fuzz_gguf seeds: every GGUF under SHARED_DIR/models and SHARED_DIR/tokenizers,
# cut to 64 KiB (the header and metadata are where the parser's decisions
# are), plus two small valid files written here byte by byte (every metadata
# type, nested arrays, quantized tensors), so that the "parses" path is
# covered from the start.
# fuzz_http seeds: whole HTTP requests for both endpoints (streaming, chat
# with several roles, token-id prompts, chunked bodies, stop strings), so the
# request builder is reached from the start.
# fuzz_kv_wire seeds: KV transfers of 0, 1 and 3 blocks in three formats and
# two acknowledgements, written by the target's own encoder on start.
# Crash inputs are kept under BINARY's folder in artifacts/. Exits non-zero
# when the fuzzer finds a crash, leak, timeout or OOM.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 FUZZ_BINARY SECONDS SHARED_DIR" >&2
  exit 2
fi
bin=$1
seconds=$2
shared=$3
[[ -x "$bin" ]] || { echo "fuzz.sh: $bin is not an executable" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus="$work/corpus"
mkdir -p "$corpus"
artifacts="$(cd "$(dirname "$bin")" && pwd)/artifacts"
mkdir -p "$artifacts"

n_seeds=0
case "$(basename "$bin")" in
fuzz_gguf)
for f in "$shared"/models/*.gguf "$shared"/tokenizers/*.gguf; do
  [[ -f "$f" ]] || continue
  head -c 65536 "$f" > "$corpus/$(basename "$f").seed"
  n_seeds=$((n_seeds + 1))
done

python3 - "$corpus" <<'PY'
import struct, sys
out = sys.argv[1]

def s(x): b = x.encode(); return struct.pack("<Q", len(b)) + b
def kv(key, t, payload): return s(key) + struct.pack("<I", t) + payload
def arr(t, items): return struct.pack("<IQ", t, len(items)) + b"".join(items)
def tensor(name, dims, t, off): return s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", t, off)

def gguf(kvs, tensors, blobs, align=32):
    head = struct.pack("<IIQQ", 0x46554747, 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)
    head += b"\0" * (-len(head) % align)
    data = b""
    for blob in blobs:
        data += blob + b"\0" * (-len(blob) % align)
    return head + data

kvs = [
    kv("general.architecture", 8, s("llama")),
    kv("u8", 0, struct.pack("<B", 7)), kv("i8", 1, struct.pack("<b", -7)),
    kv("u16", 2, struct.pack("<H", 700)), kv("i16", 3, struct.pack("<h", -700)),
    kv("u32", 4, struct.pack("<I", 70000)), kv("i32", 5, struct.pack("<i", -70000)),
    kv("f32", 6, struct.pack("<f", 0.5)), kv("bool", 7, b"\x01"),
    kv("u64", 10, struct.pack("<Q", 1 << 40)), kv("i64", 11, struct.pack("<q", -(1 << 40))),
    kv("f64", 12, struct.pack("<d", 0.25)),
    kv("tokens", 9, arr(8, [s("a"), s("b"), s("<0x0A>")])),
    kv("nested", 9, arr(9, [arr(5, [struct.pack("<i", 1), struct.pack("<i", 2)]), arr(8, [s("x")])])),
]
# F32 [8], Q4_0 [32], Q4_K [256], Q6_K [256], F16 [4, 2]
shapes = [("f32", [8], 0, 32), ("q4_0", [32], 2, 18), ("q4_k", [256], 12, 144), ("q6_k", [256], 14, 210), ("f16", [4, 2], 1, 16)]
tensors, blobs, off = [], [], 0
for i, (name, dims, t, nbytes) in enumerate(shapes):
    tensors.append(tensor(name, dims, t, off))
    blobs.append(bytes((j * 37 + i) % 251 for j in range(nbytes)))
    off += nbytes + (-nbytes % 32)
open(out + "/crafted-all-types.seed", "wb").write(gguf(kvs, tensors, blobs))
open(out + "/crafted-align64.seed", "wb").write(
    gguf([kv("general.alignment", 4, struct.pack("<I", 64))], [tensor("w", [8], 0, 0)], [b"\1" * 32], align=64))
PY
n_seeds=$((n_seeds + 2))
  ;;
fuzz_http)
  python3 - "$corpus" <<'PY'
import json, sys
out = sys.argv[1]
def req(path, body, extra=""):
    b = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(b)}\r\n\r\n").encode() + b
seeds = {
    "completion": req("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}),
    "completion-stream": req("/v1/completions", {"prompt": "a", "stream": True, "stream_options": {"include_usage": True},
                                                "stop": ["x", "\n"], "logprobs": 2, "seed": 3}),
    "token-ids": req("/v1/completions", {"prompt": [1, 403, 407], "max_tokens": 2, "return_token_ids": True}),
    "chat": req("/v1/chat/completions", {"messages": [{"role": "system", "content": "s"},
                                                      {"role": "user", "content": [{"type": "text", "text": "hi</s>"}]},
                                                      {"role": "assistant", "content": "yo"},
                                                      {"role": "user", "content": "<|im_start|>system"}],
                                         "max_completion_tokens": 4, "logprobs": True, "top_logprobs": 2},
                "x-ladder-deadline-ms: 500\r\n"),
    "chat-kwargs": req("/v1/chat/completions", {"messages": [{"role": "user", "content": "q"}],
                                                "chat_template_kwargs": {"enable_thinking": False},
                                                "add_generation_prompt": False}),
}
body = b'{"prompt":"chunked","max_tokens":1}'
seeds["chunked"] = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
for name, data in seeds.items():
    open(f"{out}/{name}.seed", "wb").write(data)
PY
  n_seeds=6
  ;;
fuzz_kv_wire)
  LADDER_FUZZ_SEED_DIR="$corpus" "$bin" -runs=0 "$corpus" > /dev/null 2>&1 || true
  n_seeds=$(find "$corpus" -name '*.seed' | wc -l)
  ;;
*)
  echo "fuzz.sh: no seeds known for $(basename "$bin")" >&2
  exit 2
  ;;
esac
echo "fuzz.sh: $n_seeds seeds, running $bin for ${seconds}s"

log="$work/fuzz.log"
status=0
"$bin" "$corpus" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" > "$log" 2>&1 || status=$?

if [[ $status -ne 0 ]]; then
  tail -n 60 "$log"  # the crash report and the reproducer's path
else
  grep -E '^#[0-9]+[[:space:]]+DONE|^stat::' "$log" || tail -n 10 "$log"
fi
execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
echo "fuzz.sh: executions run: $execs (in ${seconds}s); exit status $status"
if [[ $status -ne 0 ]]; then
  echo "fuzz.sh: the fuzzer reported a failure; reproducer(s) in $artifacts" >&2
fi
exit "$status"
