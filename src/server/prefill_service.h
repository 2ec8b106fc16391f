// PrefillService: what a `ladder serve --role prefill` worker does for the
// router (rung 2). POST /internal/prefill with the client's API key and
//   {"prompt": [token ids], "transfer_id": "...", "decode_kv": "HOST:PORT",
//    "deadline_ms": remaining ms (optional),
//    "skip_blocks": leading blocks the decode worker holds already (optional)}
// computes the prompt's KV through the engine (its admission, prefix cache
// and scheduler as for any request, as the tenant the key names), and sends
// the full blocks before the prompt's last token to the decode worker's KV
// port under transfer_id. It answers once the decode worker acknowledged:
//   {"blocks": N, "bytes": B, "cached_tokens": C, "prefill_ms": P,
//    "transfer_ms": T}
// or with an OpenAI-style error (429 when its engine cannot take the request,
// 502 when the decode worker cannot be reached or refuses the blocks).
//
// Only the blocks travel: the prefill worker computes the prompt up to and
// including the first token after its last full block before the last prompt
// token, and the decode worker computes from there, so its sampler starts the
// output exactly as a single server's would.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "engine/engine.h"
#include "server/http_server.h"
#include "server/kv_link.h"
#include "server/stream_pump.h"
#include "server/tenants.h"
#include "server/work_queue.h"

namespace ladder::server {

struct PrefillServices {
  engine::Engine* engine = nullptr;
  StreamPump* pump = nullptr;
  const TenantRegistry* tenants = nullptr;
  KvLinkMetrics* metrics = nullptr;
  WorkQueue* senders = nullptr;  // the blocking sends run here, off the pump thread
  std::chrono::milliseconds send_timeout{30000};
};

// Handles one POST /internal/prefill; `api_key` is the bearer key sent.
// `done` is called once, when the response has been handed to the channel.
void handle_prefill(const PrefillServices& services, const HttpRequest& request, const std::string& api_key,
                    std::shared_ptr<ResponseChannel> channel, std::function<void()> done);

// The prompt a prefill worker computes for a request of `prompt` (see above):
// its first (n - 1) / block_size * block_size + 1 tokens; empty when there is
// no full block before the last token (nothing worth sending).
std::vector<int32_t> prefill_prompt(const std::vector<int32_t>& prompt, int block_size);

}  // namespace ladder::server
