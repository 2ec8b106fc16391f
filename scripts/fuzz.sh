#!/usr/bin/env bash
# Runs the GGUF libFuzzer target.
#   scripts/fuzz.sh BINARY SECONDS SHARED_DIR
# Seeds: every GGUF under SHARED_DIR/models and SHARED_DIR/tokenizers, cut to
# 64 KiB (the header and metadata are where the parser's decisions are), plus
# two small valid files written here byte by byte (every metadata type,
# nested arrays, quantized tensors), so that the "parses" path is covered
# from the start. Crash inputs are kept under BINARY's folder in artifacts/.
# Exits non-zero when the fuzzer finds a crash, leak, timeout or OOM.
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
