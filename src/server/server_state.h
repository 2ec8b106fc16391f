// ServerState: where a serving process (`ladder serve` or `ladder route`)
// stands, as /health and /metrics report it.
#pragma once

namespace ladder::server {

enum class ServerState { kLoading, kReady, kDraining, kStopped };

// "loading", "ready" or "draining" (a stopped server is still draining to
// anyone who can reach it).
inline const char* state_name(ServerState s) {
  switch (s) {
    case ServerState::kLoading: return "loading";
    case ServerState::kReady: return "ready";
    case ServerState::kDraining:
    case ServerState::kStopped: return "draining";
  }
  return "unknown";
}

}  // namespace ladder::server
