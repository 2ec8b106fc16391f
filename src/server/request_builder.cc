#include "server/request_builder.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "common/check.h"
#include "grammar/token_vocabulary.h"
#include "grammar/gbnf_builder.h"
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/tool_call_grammar.h"
#include "harness/workload.h"
#include "server/deadline.h"
#include "server/openai_request.h"

namespace ladder::server {

std::string random_response_id(const char* prefix) {
  unsigned char bytes[12];
  LADDER_CHECK(RAND_bytes(bytes, sizeof bytes) == 1, "the system random generator failed");
  static const char* kHex = "0123456789abcdef";
  std::string id(prefix);
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

namespace {
// Distinct grammars (response formats, tool sets) kept compiled.
constexpr size_t kGrammarCacheEntries = 64;
}  // namespace

Planner::Planner(const tokenizer::Tokenizer& tokenizer, const tokenizer::ChatTemplate& chat_template,
                 const PlannerOptions& options) {
  RequestBuilder::Model bm;
  bm.system_fingerprint = options.system_fingerprint;
  bm.tokenizer = &tokenizer;
  bm.chat_template = &chat_template;
  bm.served_model_name = options.served_model_name;
  bm.model_path = options.model_path;
  bm.max_input_tokens = options.max_input_tokens;
  bm.reasoning_parser = options.reasoning_parser;
  vocabulary_ = grammar::TokenVocabulary::from_tokenizer(tokenizer);
  grammars_ = std::make_unique<grammar::GrammarCache>(vocabulary_, kGrammarCacheEntries);
  bm.grammars = grammars_.get();
  bm.vocabulary = vocabulary_.get();
  const grammar::DetectedToolCallFormat tools =
      grammar::detect_tool_call_format(chat_template.source(), vocabulary_.get());
  bm.tool_format = tools.format;
  spdlog::info("tool calls: {} format{}", grammar::tool_call_format_name(tools.format),
               tools.detected ? "" : " (nothing in the template names one; the default)");
  bm.tool_preamble = options.tool_preamble && !chat_template.renders_tools();
  if (!chat_template.renders_tools()) {
    spdlog::info(options.tool_preamble
                     ? "the chat template does not render tools: a request's tools are described in its system "
                       "message (the tools preamble; --tool-preamble off to leave them out)"
                     : "the chat template does not render tools and --tool-preamble is off: the model sees a "
                       "request's tools only through a forced call's grammar (tool_choice required or a function)");
  }
  builder_ = std::make_unique<RequestBuilder>(bm);
}

RequestBuilder::RequestBuilder(Model model) : model_(std::move(model)) {
  LADDER_CHECK(model_.tokenizer != nullptr && model_.chat_template != nullptr, "a builder needs a tokenizer and template");
  for (int32_t id = 0; id < model_.tokenizer->n_vocab(); ++id) {
    max_token_bytes_ = std::max(max_token_bytes_, model_.tokenizer->token_piece(id).size());
  }
  if (model_.reasoning_parser == "auto") {
    reasoning_ = reasoning_markers_of_template(model_.chat_template->source());
  } else if (model_.reasoning_parser == "deepseek_r1" || model_.reasoning_parser == "qwen3") {
    reasoning_ = ReasoningMarkers{"<think>", "</think>"};
  } else {
    LADDER_CHECK(model_.reasoning_parser == "none", "unknown reasoning parser");
  }
  if (model_.vocabulary != nullptr) {
    // Markers the vocabulary holds as special tokens would write no text;
    // the tool-call parser needs to see them.
    for (const std::string& marker : grammar::tool_call_markers(model_.tool_format)) {
      const int32_t id = model_.vocabulary->find_token(marker);
      if (id >= 0 && model_.vocabulary->is_special(id)) tool_markers_.push_back(id);
    }
  }
}

std::optional<ApiError> RequestBuilder::compile(const std::string& gbnf, const std::string& param,
                                                GenerationPlan* plan) const {
  if (model_.grammars == nullptr || model_.vocabulary == nullptr) {
    return invalid_field(param, "'" + param + "' needs a grammar, which this server cannot build");
  }
  if (!model_.vocabulary->covers_all_bytes()) {
    return invalid_field(param, "this model's vocabulary cannot spell every byte, so '" + param +
                                    "' cannot be enforced");
  }
  auto compiled = model_.grammars->get(gbnf);
  if (!compiled.is_ok()) return api_error_from_status(compiled.status(), param);
  plan->grammar = *compiled;
  return std::nullopt;
}

std::optional<ApiError> RequestBuilder::check_prompt_bytes(size_t bytes, const char* param) const {
  const auto limit = static_cast<size_t>(model_.max_input_tokens) * max_token_bytes_;
  if (model_.max_input_tokens <= 0 || bytes <= limit) return std::nullopt;
  ApiError e = invalid_field(param, "the prompt has " + std::to_string(bytes) + " bytes, more than " +
                                        std::to_string(model_.max_input_tokens) + " input tokens can hold");
  e.code = "context_length_exceeded";
  return e;
}

std::optional<ApiError> RequestBuilder::check_vocabulary(const std::vector<int32_t>& ids, const char* param) const {
  const int32_t n_vocab = model_.tokenizer->n_vocab();
  for (int32_t id : ids) {
    if (id >= n_vocab) {
      return invalid_field(param, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                      std::to_string(n_vocab));
    }
  }
  return std::nullopt;
}

std::optional<ApiError> RequestBuilder::check_model(const std::string& name) const {
  if (name.empty() || name == model_.served_model_name || name == model_.model_path) return std::nullopt;
  return not_found_error("the model '" + name + "' does not exist; this server serves '" + model_.served_model_name +
                             "'",
                         "model_not_found");
}

namespace {

// The bytes of the last text of a message's content (a string, or the last
// text part).
std::string last_text_of(const nlohmann::ordered_json& message) {
  const auto content = message.find("content");
  if (content == message.end()) return {};
  if (content->is_string()) return content->get<std::string>();
  if (content->is_array() && !content->empty() && content->back().is_object()) {
    return content->back().value("text", "");
  }
  return {};
}

// Where a final message's text ends in the rendered prompt: after its last
// occurrence (or, as templates often trim, of the trimmed text); npos when
// the template did not write it verbatim.
size_t end_of_final_text(const std::string& rendered, const std::string& text) {
  const size_t first = text.find_first_not_of(" \n\t\r"), last = text.find_last_not_of(" \n\t\r");
  const std::string trimmed = first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
  for (const std::string* t : {&text, &trimmed}) {
    if (t->empty()) continue;
    const size_t at = rendered.rfind(*t);
    if (at != std::string::npos) return at + t->size();
  }
  return std::string::npos;
}

// Bounds on a client's grammar, regex or choices (compiling is work done
// before any queue).
constexpr size_t kMaxConstraintBytes = 64 * 1024;

}  // namespace

std::optional<ApiError> RequestBuilder::chat_prompt(ChatRequest& c, bool add_bos, GenerationPlan* plan,
                                                    std::vector<int32_t>* ids) const {
  size_t content_bytes = 0;
  for (const auto& m : c.messages) content_bytes += m.dump().size();
  if (auto err = check_prompt_bytes(content_bytes, "messages")) return err;
  if (c.tools && c.tool_choice.kind != ToolChoice::Kind::kNone && model_.tool_preamble && c.messages.is_array()) {
    // The template would drop the tools silently: tell the model about
    // them in the system message (a first one is extended, else added).
    const std::string preamble = grammar::tool_preamble(*c.tools, model_.tool_format);
    if (!c.messages.empty() && c.messages[0].is_object() && c.messages[0].value("role", "") == "system" &&
        c.messages[0].contains("content") && c.messages[0]["content"].is_string()) {
      c.messages[0]["content"] = c.messages[0]["content"].get<std::string>() + "\n\n" + preamble;
    } else {
      c.messages.insert(c.messages.begin(), nlohmann::ordered_json{{"role", "system"}, {"content", preamble}});
    }
  }
  // A final assistant message with text is continued (assistant prefill):
  // rendered without a generation prompt and cut where its text ends, so
  // the template's end-of-turn never reaches the model.
  const nlohmann::ordered_json& last = c.messages.back();
  const std::string final_text = last.value("role", "") == "assistant" && !last.contains("tool_calls")
                                     ? last_text_of(last)
                                     : std::string();
  const bool continues =
      c.continue_final_message.value_or(!final_text.empty() && !(c.add_generation_prompt_given && c.add_generation_prompt));
  auto input = tokenizer::ChatRenderInput::from_openai(c.messages, c.tools ? &*c.tools : nullptr);
  if (!input.is_ok()) return api_error_from_status(input.status(), "messages");
  tokenizer::ChatRenderInput& in = *input;
  in.add_generation_prompt = continues ? false : c.add_generation_prompt;
  in.kwargs = std::move(c.template_kwargs);
  in.bos_token = model_.tokenizer->bos_text();
  in.eos_token = model_.tokenizer->eos_text();
  auto rendered = model_.chat_template->render(in);
  if (!rendered.is_ok()) return invalid_field("messages", "the chat template failed: " + rendered.status().message());
  if (continues) {
    const size_t end = end_of_final_text(rendered->bytes(), final_text);
    if (end == std::string::npos) {
      return invalid_field("continue_final_message",
                           "the chat template does not write the final assistant message's text as sent, so it "
                           "cannot be continued; send continue_final_message: false");
    }
    *rendered = rendered->substr(0, end);
  }
  // Special-token markers count only where the template wrote them: a
  // literal "</s>" or "<|im_start|>" in a message stays text.
  *ids = model_.tokenizer->encode_rendered(*rendered, add_bos);
  if (reasoning_) {
    plan->reasoning = reasoning_;
    const std::string& text = rendered->bytes();
    const size_t end = text.find_last_not_of(" \n\t");
    const std::string_view trimmed(text.data(), end == std::string::npos ? 0 : end + 1);
    plan->reasoning_starts_inside = trimmed.size() >= reasoning_->open.size() &&
                                    trimmed.substr(trimmed.size() - reasoning_->open.size()) == reasoning_->open;
  }
  return std::nullopt;
}

std::optional<ApiError> RequestBuilder::constrain(const ResponseFormat& f, GenerationPlan* plan) const {
  using Kind = ResponseFormat::Kind;
  size_t bytes = f.text.size();
  for (const std::string& choice : f.choices) bytes += choice.size();
  if (bytes > kMaxConstraintBytes) {
    return invalid_field(f.param, "'" + f.param + "' is " + std::to_string(bytes) + " bytes; at most " +
                                      std::to_string(kMaxConstraintBytes) + " are compiled");
  }
  Result<std::string> gbnf = std::string();
  switch (f.kind) {
    case Kind::kText: return std::nullopt;
    case Kind::kJsonObject: gbnf = grammar::json_object_gbnf(); break;
    case Kind::kJsonSchema: gbnf = grammar::json_schema_to_gbnf(f.schema); break;
    case Kind::kRegex: gbnf = grammar::regex_to_gbnf(f.text); break;
    case Kind::kGrammar: gbnf = f.text; break;
    case Kind::kChoice: {
      std::vector<std::string> alternatives;
      for (const std::string& choice : f.choices) alternatives.push_back(grammar::GbnfBuilder::literal(choice));
      gbnf = grammar::GbnfBuilder().text(grammar::GbnfBuilder::alternation(alternatives));
      break;
    }
  }
  if (!gbnf.is_ok()) return api_error_from_status(gbnf.status(), f.param);
  return compile(*gbnf, f.param, plan);
}

std::optional<ApiError> RequestBuilder::tokenize(TokenizeRequest& req, std::vector<int32_t>* ids) const {
  if (auto err = check_model(req.model)) return err;
  const tokenizer::Tokenizer& tok = *model_.tokenizer;
  if (req.chat) {
    if (auto err = check_model(req.chat->options.model)) return err;
    GenerationPlan scratch;
    return chat_prompt(*req.chat, req.add_special.value_or(tok.add_bos_default()), &scratch, ids);
  }
  if (auto err = check_prompt_bytes(req.text.size(), req.llama_cpp ? "content" : "prompt")) return err;
  *ids = tok.encode(req.text, req.add_special.value_or(tok.add_bos_default()), req.parse_special);
  return std::nullopt;
}

std::optional<ApiError> RequestBuilder::apply_extensions(const GenerationOptions& options, const TenantConfig& tenant,
                                                         GenerationPlan* plan) const {
  engine::Request& r = plan->request;
  const tokenizer::Tokenizer& tok = *model_.tokenizer;
  if (auto err = check_vocabulary(options.stop_token_ids, "stop_token_ids")) return err;
  r.stop.stop_token_ids.insert(options.stop_token_ids.begin(), options.stop_token_ids.end());
  r.stop.include_stop_text = options.include_stop_str_in_output;
  r.show_special_tokens = !options.skip_special_tokens;
  if (options.min_tokens > 0) {
    if (plan->grammar) {
      return invalid_field("min_tokens", "'min_tokens' cannot be combined with a grammar (an output constraint or a "
                                         "forced tool call): the grammar decides where the output ends");
    }
    if (options.max_tokens && options.min_tokens > *options.max_tokens) {
      return invalid_field("min_tokens", "'min_tokens' (" + std::to_string(options.min_tokens) +
                                             ") is more than 'max_tokens' (" + std::to_string(*options.max_tokens) + ")");
    }
    r.sampling.min_tokens = options.min_tokens;
    r.sampling.banned_before_min.assign(r.stop.stop_token_ids.begin(), r.stop.stop_token_ids.end());
    std::sort(r.sampling.banned_before_min.begin(), r.sampling.banned_before_min.end());
  }
  if (options.truncate_prompt_tokens) {
    // The prompt's last k tokens (-1: as many as the input bound allows).
    const int64_t k = *options.truncate_prompt_tokens > 0 ? *options.truncate_prompt_tokens : model_.max_input_tokens;
    auto cut = [k](std::vector<int32_t>& ids) {
      if (k > 0 && static_cast<int64_t>(ids.size()) > k) ids.erase(ids.begin(), ids.end() - k);
    };
    cut(r.prompt);
    for (auto& p : plan->prompts) cut(p);
    for (size_t i = 0; i < plan->echo.size(); ++i) {
      plan->echo[i] = tok.decode(plan->prompts.empty() ? r.prompt : plan->prompts[i]);
    }
  }
  // Within the tenant's priority, never above it: lower values first, as in vLLM.
  r.scheduling.priority = tenant.priority * (2 * kMaxRequestPriority + 1) - options.priority;
  if (options.prompt_logprobs) {
    if (options.stream) {
      return invalid_field("prompt_logprobs", "'prompt_logprobs' is not available with 'stream': true");
    }
    plan->prompt_logprobs = *options.prompt_logprobs;
    plan->prompt_logprobs_json = true;
  }
  if (options.echo && options.logprobs) {
    plan->echo_logprobs = true;
    plan->prompt_logprobs = std::max(plan->prompt_logprobs.value_or(0), r.sampling.top_logprobs);
  }
  return std::nullopt;
}

std::optional<ApiError> RequestBuilder::build(ApiKind kind, const HttpRequest& http, int tenant_index,
                                              const TenantConfig& tenant, GenerationPlan* out) const {
  const tokenizer::Tokenizer& tok = *model_.tokenizer;
  GenerationOptions options;
  GenerationPlan& plan = *out;
  plan.kind = kind;
  plan.arrival = http.received;
  plan.tenant = tenant_index;
  engine::Request& r = plan.request;

  if (kind == ApiKind::kCompletion) {
    CompletionRequest c;
    if (auto err = parse_completion_request(http.body, &c)) return err;
    options = std::move(c.options);
    for (CompletionRequest::Prompt& p : c.prompts) {
      std::vector<int32_t> ids;
      if (p.tokens) {
        if (auto err = check_vocabulary(*p.tokens, "prompt")) return err;
        ids = std::move(*p.tokens);
      } else {
        if (auto err = check_prompt_bytes(p.text.size(), "prompt")) return err;
        // Completions take the prompt as plain text: special-token markers in
        // it are not parsed (send token ids for those). Chat requests get them
        // from the template only.
        ids = tok.encode(p.text, tok.add_bos_default(), /*parse_special=*/false);
      }
      if (options.echo) plan.echo.push_back(p.tokens ? tok.decode(ids) : p.text);
      plan.prompts.push_back(std::move(ids));
    }
    r.prompt = plan.prompts.front();
    if (plan.prompts.size() == 1) plan.prompts.clear();
  } else {
    ChatRequest c;
    if (auto err = parse_chat_request(http.body, &c)) return err;
    options = std::move(c.options);
    if (c.tools) {
      auto tools = grammar::parse_openai_tools(*c.tools);
      if (!tools.is_ok()) return api_error_from_status(tools.status(), "tools");
      using Kind = ToolChoice::Kind;
      if (c.tool_choice.kind != Kind::kNone) {
        plan.tool_format = model_.tool_format;
        r.shown_special_tokens = tool_markers_;
      }
      if (c.tool_choice.kind == Kind::kRequired || c.tool_choice.kind == Kind::kFunction) {
        grammar::ToolGrammarOptions go;
        go.format = model_.tool_format;
        go.function = c.tool_choice.function;
        go.parallel = c.parallel_tool_calls;
        auto gbnf = grammar::tool_call_gbnf(*tools, go, model_.vocabulary);
        if (!gbnf.is_ok()) return api_error_from_status(gbnf.status(), "tool_choice");
        if (auto err = compile(*gbnf, "tool_choice", &plan)) return err;
      }
    }
    if (auto err = chat_prompt(c, tok.add_bos_default(), &plan, &r.prompt)) return err;
  }
  if (auto err = check_model(options.model)) return err;
  if (r.prompt.empty()) return invalid_field(kind == ApiKind::kChat ? "messages" : "prompt", "the prompt is empty");

  if (auto err = constrain(options.response_format, &plan)) return err;
  if (plan.grammar && options.ignore_eos) {
    return invalid_field("ignore_eos", "'ignore_eos' cannot be combined with a grammar (an output constraint or a "
                                       "forced tool call): the grammar decides where the output ends");
  }
  plan.n_per_prompt = options.n;
  plan.n = options.n * static_cast<int32_t>(std::max<size_t>(1, plan.prompts.size()));
  if (plan.n > kMaxChoices) {
    return invalid_field("n", "prompts x n is " + std::to_string(plan.n) + "; at most " +
                                  std::to_string(kMaxChoices) + " choices in one request");
  }
  r.sampling = options.sampling;
  r.stop.max_tokens = options.max_tokens.value_or(0);
  r.stop.stop_strings = options.stop;
  if (!options.ignore_eos) {
    for (int32_t id : tok.end_of_generation_ids()) r.stop.stop_token_ids.insert(id);
  }
  r.scheduling.tenant = tenant_index;
  r.cache_scope = tenant.cache_scope;
  if (auto err = apply_extensions(options, tenant, &plan)) return err;

  const std::string deadline = http.header("x-ladder-deadline-ms");
  if (!deadline.empty()) {
    const std::optional<double> ms = parse_deadline_ms(deadline);
    if (!ms) {
      return invalid_field("x-ladder-deadline-ms",
                           "header x-ladder-deadline-ms must be a positive number of ms, at most 1e9");
    }
    r.scheduling.deadline = deadline_after(plan.arrival, *ms);
  } else if (tenant.slo.ttft_ms > 0) {
    r.scheduling.deadline = deadline_after(plan.arrival, tenant.slo.ttft_ms);
  }

  plan.slice = http.header("x-ladder-slice");
  if (!plan.slice.empty() && !harness::is_header_slice_name(plan.slice)) {
    return invalid_field("x-ladder-slice",
                         "header x-ladder-slice names a workload slice: 1 to 64 letters, digits, '_', '-' or '.'");
  }

  plan.meta.kind = kind;
  plan.meta.id = random_response_id(kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-");
  plan.meta.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  plan.meta.model = model_.served_model_name;
  plan.meta.system_fingerprint = model_.system_fingerprint;
  plan.stream = options.stream;
  plan.shape.logprobs = options.logprobs;
  plan.shape.token_ids = options.return_token_ids;
  plan.shape.include_usage = options.include_usage;
  plan.user = options.user;
  return std::nullopt;
}

}  // namespace ladder::server
