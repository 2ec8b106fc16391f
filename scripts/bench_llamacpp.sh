#!/usr/bin/env bash
# Ladder against llama.cpp on the same synthetic GGUF files, in paired
# rounds: each round runs `ladder bench model` and then llama.cpp's
# llama-bench and llama-batched-bench on one model, so every ratio divides
# figures taken moments apart on a shared machine; the summary gives the
# median and the range of the per-round ratios.
#
# Usage: scripts/bench_llamacpp.sh LLAMA_CPP_BUILD_DIR [LADDER_BUILD_DIR]
#   LLAMA_CPP_BUILD_DIR holds bin/llama-bench and bin/llama-batched-bench of a
#   llama.cpp you built yourself (CPU only, e.g. cmake -DGGML_NATIVE=ON). This
#   script never downloads or builds llama.cpp. A tree without those tools:
#   set LLAMA_BENCH="BUILD/bench/llamacpp_timing bench" and
#   LLAMA_BATCHED_BENCH="BUILD/bench/llamacpp_timing batched" (Ladder built
#   with -DLADDER_LLAMA_CPP_INCLUDE/LIBS, bench/CMakeLists.txt).
# Environment: LADDER_BENCH_THREADS (2), LADDER_BENCH_ROUNDS (5),
#   LADDER_BENCH_TYPES ("f32 f16 bf16 q8_0 q4_0 q4_k q6_k"),
#   LADDER_BENCH_PRESET (110m; 1b for Llama-3.2-1B shapes, weights far past
#   the caches), LADDER_BENCH_MODELS (the model cache of scripts/bench.sh).
#   On a shared, loaded machine export OMP_WAIT_POLICY=passive: llama.cpp's
#   OpenMP threads otherwise spin at every barrier and its decode collapses
#   (docs/BENCHMARKS.md, Intel Xeon). On a quiet one leave it unset: passive
#   threads sleep between operations, which cut llama.cpp's 2-thread decode
#   by 10-40% on the Zen 5 VM (docs/BENCHMARKS.md, ninth session).
set -euo pipefail
if [[ $# -lt 1 ]]; then
  sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
LLAMA=$1
BUILD_DIR=${2:-build}
LADDER="$BUILD_DIR/src/cli/ladder"
THREADS=${LADDER_BENCH_THREADS:-2}
ROUNDS=${LADDER_BENCH_ROUNDS:-5}
TYPES=${LADDER_BENCH_TYPES:-"f32 f16 bf16 q8_0 q4_0 q4_k q6_k"}
PRESET=${LADDER_BENCH_PRESET:-110m}
MODELS=${LADDER_BENCH_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/ladder/bench}
read -ra LLAMA_BENCH <<<"${LLAMA_BENCH:-$LLAMA/bin/llama-bench}"
read -ra LLAMA_BATCHED <<<"${LLAMA_BATCHED_BENCH:-$LLAMA/bin/llama-batched-bench}"
for tool in "${LLAMA_BENCH[0]}" "${LLAMA_BATCHED[0]}" "$LADDER"; do
  [[ -x "$tool" ]] || { echo "error: $tool not found or not executable" >&2; exit 2; }
done
command -v python3 > /dev/null || { echo "error: python3 is needed to read the results" >&2; exit 2; }
mkdir -p "$MODELS"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs; model $PRESET; threads $THREADS; rounds $ROUNDS; llama.cpp OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset (active: spinning)}"
"$LADDER" info | sed -n '/kernel fingerprint/,/AMX/p'
for T in $TYPES; do
  M="$MODELS/$PRESET-$T.gguf"
  [[ -f "$M" ]] || "$LADDER" synth --preset "$PRESET" --dtype "$T" -o "$M"
  for R in $(seq 1 "$ROUNDS"); do
    echo "== $T round $R/$ROUNDS (load average $(cut -d' ' -f1 /proc/loadavg))"
    "$LADDER" bench model -m "$M" --batch 1,16 --steps 32 --prompt 512 --repeats 1 -t "$THREADS" \
      2> /dev/null > "$OUT/ladder-$T-$R.txt"
    "${LLAMA_BENCH[@]}" -m "$M" -t "$THREADS" -p 512 -n 32 -r 1 -o csv \
      2> /dev/null > "$OUT/llama-$T-$R.csv"
    "${LLAMA_BATCHED[@]}" -m "$M" -t "$THREADS" -c 2048 -b 2048 -ub 512 -npp 64 -ntg 32 -npl 16 \
      2> /dev/null > "$OUT/batched-$T-$R.txt" || true
  done
done

python3 - "$OUT" "$ROUNDS" $TYPES << 'EOF'
import csv, re, statistics, sys
out, rounds, types = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def ladder(path):
    r = {}
    for line in open(path):
        m = re.match(r"(decode batch (\d+)|prefill \d+ tokens( \((AMX|vectors)\))?)\s+([\d.]+)\s+(\d+)?", line)
        if not m:
            continue
        if m.group(2):
            r["b" + m.group(2)] = float(m.group(5))
            if m.group(2) == "1":
                bw = re.search(r"(\d+)% of BW", line)
                r["bw1"] = float(bw.group(1)) if bw else None
        elif m.group(4) != "vectors":
            r["pp"] = float(m.group(5))
        else:
            r["pp_vec"] = float(m.group(5))
    return r

def llama(path):
    r = {}
    for row in csv.DictReader(open(path)):
        if int(row["n_gen"]) > 0:
            r["b1"] = float(row["avg_ts"])
        elif int(row["n_prompt"]) > 0:
            r["pp"] = float(row["avg_ts"])
    return r

def batched(path):
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 8 and cells[2] == "16":
            return {"b16": float(cells[7])}
    return {}

def summary(values):
    v = [x for x in values if x is not None]
    if not v:
        return "n/a"
    return f"{statistics.median(v):.2f}x ({min(v):.2f}-{max(v):.2f})"

print()
print("| weights | Ladder decode b=1 (% of read roofline) | llama.cpp b=1 | ratio b=1 | Ladder b=16 | llama.cpp b=16 | ratio b=16 | Ladder prefill 512 | llama.cpp pp512 | ratio prefill |")
print("|---|---|---|---|---|---|---|---|---|---|")
for t in types:
    L = [ladder(f"{out}/ladder-{t}-{i}.txt") for i in range(1, rounds + 1)]
    C = [llama(f"{out}/llama-{t}-{i}.csv") for i in range(1, rounds + 1)]
    B = [batched(f"{out}/batched-{t}-{i}.txt") for i in range(1, rounds + 1)]
    med = lambda rs, k: statistics.median([r[k] for r in rs if r.get(k)]) if any(r.get(k) for r in rs) else float("nan")
    ratio = lambda a, b, k, kb=None: [x.get(k) / y.get(kb or k) if x.get(k) and y.get(kb or k) else None for x, y in zip(a, b)]
    bw = [r.get("bw1") for r in L if r.get("bw1") is not None]
    bw_text = f"{statistics.median(bw):.0f}% ({min(bw):.0f}-{max(bw):.0f})" if bw else "n/a"
    print(f"| {t.upper()} | {med(L,'b1'):.1f} ({bw_text}) | {med(C,'b1'):.1f} | {summary(ratio(L,C,'b1'))} "
          f"| {med(L,'b16'):.1f} | {med(B,'b16'):.1f} | {summary(ratio(L,B,'b16'))} "
          f"| {med(L,'pp'):.1f} | {med(C,'pp'):.1f} | {summary(ratio(L,C,'pp'))} |")
    vec = [r.get("pp") / r.get("pp_vec") for r in L if r.get("pp") and r.get("pp_vec")]
    if vec:
        print(f"|  | prefill with AMX / without: {summary(vec)} | | | | | | | | |")
print()
print("tok/s are medians over rounds; ratios are Ladder / llama.cpp per round: median (range).")
EOF
