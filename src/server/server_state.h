// Internal to the server module: the state ApiServer's two halves share
// (api_server.cc: life cycle and routing; generation.cc: admission, engine
// streams and responses). Not for use outside src/server.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/llama_model.h"
#include "server/admission.h"
#include "server/api_error.h"
#include "server/api_server.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/stream_pump.h"
#include "server/tenants.h"
#include "server/text_stream.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ladder::server {

using Clock = std::chrono::steady_clock;

enum class ServerState { kLoading, kReady, kDraining, kStopped };

HttpResponse error_response(const ApiError& e);

// One generation request from parse to its last byte.
struct Job {
  ApiKind kind = ApiKind::kCompletion;
  ResponseMeta meta;
  GenerationOptions options;
  int tenant = 0;
  std::vector<int32_t> prompt;
  int64_t max_tokens = 0;
  std::optional<Clock::time_point> deadline;
  std::shared_ptr<ResponseChannel> channel;
  Clock::time_point arrival;

  // Under State::mu.
  uint64_t ticket = 0;
  bool queued = false;
  bool submitted = false;
  bool done = false;
  engine::RequestId engine_id = 0;

  // Pump thread only.
  std::unique_ptr<TextStream> text;
  std::string full_text;
  std::vector<TokenLogprobEntry> logprobs;
  size_t text_offset = 0;
  bool stream_started = false;  // SSE headers sent
  std::atomic<bool> client_gone{false};
};

struct ApiServer::State {
  ServeConfig config;
  TenantRegistry tenants = TenantRegistry::anonymous();
  std::unique_ptr<HttpServer> http;
  ServerMetrics metrics;
  std::atomic<ServerState> state{ServerState::kLoading};

  // Loaded by load(); immutable afterwards.
  std::optional<gguf::GgufFile> file;
  std::unique_ptr<model::LlamaModel> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::optional<tokenizer::ChatTemplate> chat_template;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<StreamPump> pump;
  int64_t context_length = 0;
  int64_t max_input = 0;
  int64_t max_output = 0;

  mutable std::mutex mu;  // admission, jobs
  std::unique_ptr<AdmissionController> admission;
  std::map<uint64_t, std::shared_ptr<Job>> jobs;  // by ticket, queued or running
  Clock::time_point drain_started;
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool finished = false;

  // --- routing ---
  void handle(HttpRequest req, std::shared_ptr<ResponseChannel> ch);
  void handle_generate(ApiKind kind, HttpRequest& req, std::shared_ptr<ResponseChannel> ch);
  std::optional<ApiError> prepare(ApiKind kind, HttpRequest& req, Job& job);
  // The caller's tenant index from its bearer key; -1 when none matches.
  int authenticate(const HttpRequest& req) const;
  void record_rejection(int tenant, int status);
  HttpResponse health() const;
  HttpResponse models() const;
  HttpResponse metrics_page() const;

  // --- generation ---
  void admit(std::shared_ptr<Job> job);
  void submit(std::shared_ptr<Job> job);
  void on_disconnect(const std::shared_ptr<Job>& job);
  void on_event(const std::shared_ptr<Job>& job, const engine::StreamEvent& ev);
  void release(const std::shared_ptr<Job>& job, int64_t tokens);
  void expire_queued();
  void check_drain();
  void stop_all();
};

}  // namespace ladder::server
