// RequestBuilder: an HTTP request's JSON -> an immutable GenerationPlan: the
// engine request (prompt tokens through the chat template and tokenizer,
// sampling, stop criteria, the tenant's scheduling class and cache scope),
// the response's identity and shape. The server checks HTTP and JSON shape
// here; the engine owns every bound on tokens (Engine::submit).
//
// Building tokenizes, which is work: the server runs it off the HTTP io
// threads. A prompt whose bytes alone prove it is over the input bound (more
// bytes than max_input_tokens times the longest token) is refused before it
// is tokenized.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/request.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_cache.h"
#include "grammar/tool_call_format.h"
#include "server/api_error.h"
#include "server/http_server.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/prompt_scorer.h"
#include "server/reasoning_parser.h"
#include "server/response_writer.h"
#include "server/responses_output.h"
#include "server/tenants.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace ladder::server {

struct GenerationPlan {
  ApiKind kind = ApiKind::kCompletion;
  ResponseMeta meta;
  engine::Request request;
  bool stream = false;
  ResponseShape shape;
  std::optional<ReasoningMarkers> reasoning;  // chat with a thinking template
  bool reasoning_starts_inside = false;       // the prompt opened it
  int32_t n = 1;                              // choices, each its own engine request
  // Completions with several prompts: each one's tokens (request.prompt is
  // the first); choice i answers prompts[i / n_per_prompt]. Empty: one prompt.
  std::vector<std::vector<int32_t>> prompts;
  int32_t n_per_prompt = 1;
  // echo: each prompt's text (in prompt order), which its choices begin with.
  std::vector<std::string> echo;
  // The prompt tokens' logprobs, with this many alternatives each (vLLM's
  // prompt_logprobs, or echo with logprobs); the backend computes them into
  // prompt_scores (one list per prompt, in prompt order) before it runs the
  // request.
  std::optional<int32_t> prompt_logprobs;
  bool prompt_logprobs_json = false;  // the response carries vLLM's prompt_logprobs
  bool echo_logprobs = false;         // each echoed prompt's logprobs lead its choices' logprobs
  std::vector<std::shared_ptr<const std::vector<PromptTokenScore>>> prompt_scores;
  // The grammar each choice's output must match (response_format, forced
  // tool calls); null: free text. Each engine request gets its own matcher.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // Tool calls are parsed out of the output in this format (tools given and
  // tool_choice not "none").
  std::optional<grammar::ToolCallFormat> tool_format;
  // Set for POST /v1/responses (meta.kind kResponses; kind is kChat).
  std::shared_ptr<const ResponsesContext> responses;
  int tenant = 0;
  std::string user;  // the client's opaque user id, for the access log
  // The workload slice the client names (header x-ladder-slice, as `ladder
  // replay` sends it); empty: none (shadow verification classifies it).
  std::string slice;
  // Re-run on the rung-1 reference after it finishes (serve --shadow-rate);
  // request.sampling.seed is then set, so the reference samples the same.
  bool shadow = false;
  uint64_t shadow_generation = 0;  // the configuration serving it (ShadowVerifier::generation())
  std::chrono::steady_clock::time_point arrival;
};

class RequestBuilder {
 public:
  struct Model {
    const tokenizer::Tokenizer* tokenizer = nullptr;
    const tokenizer::ChatTemplate* chat_template = nullptr;
    std::string served_model_name;
    std::string system_fingerprint;  // every response's (empty: not sent)
    // Add grammar::tool_preamble to the system message when a request has
    // tools (the template does not render them itself).
    bool tool_preamble = false;
    std::string model_path;   // also accepted as the model name
    int64_t max_input_tokens = 0;  // the engine's bound, for the byte pre-check
    // Compiled grammars for this vocabulary (response_format, tools); shared
    // across requests, thread-safe.
    grammar::GrammarCache* grammars = nullptr;
    const grammar::TokenVocabulary* vocabulary = nullptr;
    grammar::ToolCallFormat tool_format = grammar::ToolCallFormat::kHermes;
    std::string reasoning_parser = "auto";  // PlannerOptions::reasoning_parser
  };
  explicit RequestBuilder(Model model);

  // nullopt and *out filled, or the error to answer with.
  std::optional<ApiError> build(ApiKind kind, const HttpRequest& http, int tenant_index, const TenantConfig& tenant,
                                GenerationPlan* out) const;

  // POST /tokenize: the ids a prompt or a conversation becomes (a chat form
  // exactly as /v1/chat/completions would send it to the model).
  std::optional<ApiError> tokenize(TokenizeRequest& request, std::vector<int32_t>* ids) const;
  // A model name a request may use (empty: the default); else the 404.
  std::optional<ApiError> check_model(const std::string& name) const;
  // Token ids (parsed as non-negative) all inside the vocabulary; else the 400 naming `param`.
  std::optional<ApiError> check_vocabulary(const std::vector<int32_t>& ids, const char* param) const;
  const tokenizer::Tokenizer& tokenizer() const { return *model_.tokenizer; }

 private:
  std::optional<ApiError> check_prompt_bytes(size_t bytes, const char* param) const;
  // The conversation's prompt through the chat template (tools preamble,
  // continuation of a final assistant message); the reasoning markers into
  // *plan.
  std::optional<ApiError> chat_prompt(ChatRequest& c, bool add_bos, GenerationPlan* plan,
                                      std::vector<int32_t>* ids) const;
  // The grammar an output constraint asks for (response_format, guided_*).
  std::optional<ApiError> constrain(const ResponseFormat& format, GenerationPlan* plan) const;
  // vLLM's stop, special-token, truncation, priority and logprob extensions.
  std::optional<ApiError> apply_extensions(const GenerationOptions& options, const TenantConfig& tenant,
                                           GenerationPlan* plan) const;
  // The grammar text for a response_format, or for forced tool calls.
  std::optional<ApiError> compile(const std::string& gbnf, const std::string& param, GenerationPlan* plan) const;

  Model model_;
  size_t max_token_bytes_ = 1;  // the longest token piece of the vocabulary
  std::optional<ReasoningMarkers> reasoning_;
  std::vector<int32_t> tool_markers_;  // special tokens that mark tool calls in tool_format
};

// A RequestBuilder with what it refers to kept alive: the grammar vocabulary
// and compiled-grammar cache, the tool-call format detected in the template.
// `ladder serve` and `ladder route` plan requests through the same one, so a
// request is accepted or refused the same way by both.
struct PlannerOptions {
  std::string served_model_name;
  std::string model_path;
  std::string system_fingerprint;
  int64_t max_input_tokens = 0;
  // Describe tools in the system message when the template does not render them.
  bool tool_preamble = true;
  // Thinking text into reasoning_content: "auto" (between the markers the
  // chat template names, if any), "deepseek_r1" / "qwen3" (<think> ...
  // </think>), "none" (all output is content).
  std::string reasoning_parser = "auto";
};
class Planner {
 public:
  // The tokenizer and template must outlive the planner.
  Planner(const tokenizer::Tokenizer& tokenizer, const tokenizer::ChatTemplate& chat_template,
          const PlannerOptions& options);
  const RequestBuilder& builder() const { return *builder_; }

 private:
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
  std::unique_ptr<grammar::GrammarCache> grammars_;
  std::unique_ptr<RequestBuilder> builder_;
};

// A response id: prefix + 24 hex digits from a cryptographic RNG (never a
// counter, so ids reveal nothing about other requests).
std::string random_response_id(const char* prefix);

}  // namespace ladder::server
