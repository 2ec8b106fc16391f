# Sourced by the speculation climb scripts: runs `ladder climb` on
# $OUT/policy.toml with $MODEL, then prints the verdict, the ledger and, per
# load, each rung's decision with its speculation figures (tokens per verify
# cycle, acceptance). Needs LADDER, MODEL and OUT.
run_climb_and_report() {
  "$LADDER" climb --policy "$OUT/policy.toml" -m "$MODEL" --out "$OUT/climb" --ledger "$OUT/ledger.jsonl" \
    >"$OUT/climb.out" 2>"$OUT/climb.log" || { tail -n 20 "$OUT/climb.log" >&2; return 1; }
  cat "$OUT/climb.out"
  echo
  "$LADDER" ledger show "$OUT/ledger.jsonl"
  echo "per load: rung, decision, speculative tokens per verify cycle and acceptance (the rung's own replays)"
  jq -r '[.load, .rung, .decision, (.figures.speculative_tokens_per_cycle // "-"), (.figures.speculative_accepted_rate // "-")] | @tsv' \
    "$OUT/ledger.jsonl"
}
