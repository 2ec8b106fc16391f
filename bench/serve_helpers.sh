# Sourced by the bench scripts: one `ladder serve` at a time on a free port.
# start_server LOG ARGS... starts it (ARGS go to `$LADDER serve`), waits for
# "listening on" and sets URL; stop_server ends it (also on exit).
SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

start_server() {
  local log="$1"
  shift
  "$LADDER" serve --port 0 --threads "$THREADS" --max-queue 1024 "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 600); do
    if grep -q "listening on" "$log"; then
      URL=$(grep -o "http://[0-9.:]*" "$log" | head -1)
      return 0
    fi
    sleep 0.1
  done
  echo "the server did not start; see $log" >&2
  exit 1
}
