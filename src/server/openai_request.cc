#include "server/openai_request.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "engine/stop_criteria.h"
#include "server/json_fields.h"

namespace ladder::server {

using ojson = nlohmann::ordered_json;

namespace {

// A list of token ids, each in [0, 2^31).
std::optional<ApiError> token_ids(const ojson& v, const std::string& param, std::vector<int32_t>* out) {
  if (!v.is_array()) return invalid_field(param, "'" + param + "' must be a list of token ids");
  for (const auto& e : v) {
    if (!e.is_number_integer() || (!e.is_number_unsigned() && e.get<int64_t>() < 0) ||
        (e.is_number_unsigned() && e.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))) {
      return invalid_field(param, "'" + param + "' must hold non-negative integer token ids");
    }
    out->push_back(static_cast<int32_t>(e.get<int64_t>()));
  }
  return std::nullopt;
}

// vLLM's sampling extensions.
std::optional<ApiError> parse_vllm_extras(Fields& f, GenerationOptions* o) {
  LADDER_API_TRY(f.integer("min_tokens", 0, 1 << 30, &o->min_tokens));
  if (const ojson* ids = f.find("stop_token_ids")) {
    LADDER_API_TRY(token_ids(*ids, "stop_token_ids", &o->stop_token_ids));
    if (o->stop_token_ids.size() > kMaxLogitBiasEntries) {
      return invalid_field("stop_token_ids", "at most " + std::to_string(kMaxLogitBiasEntries) + " stop token ids");
    }
  }
  LADDER_API_TRY(f.boolean("include_stop_str_in_output", &o->include_stop_str_in_output));
  LADDER_API_TRY(f.boolean("skip_special_tokens", &o->skip_special_tokens));
  // Accepted: it changes how a slow Hugging Face tokenizer joins special
  // tokens; Ladder writes each token's own text and adds no spaces.
  bool spaces = true;
  LADDER_API_TRY(f.boolean("spaces_between_special_tokens", &spaces));
  int64_t truncate = 0;
  LADDER_API_TRY(f.integer("truncate_prompt_tokens", -1, 1 << 30, &truncate));
  if (truncate == 0 && f.find("truncate_prompt_tokens") != nullptr) {
    return invalid_field("truncate_prompt_tokens", "'truncate_prompt_tokens' must be >= 1 (or -1: the input bound)");
  }
  if (truncate != 0) o->truncate_prompt_tokens = truncate;
  int64_t priority = 0;
  LADDER_API_TRY(f.integer("priority", -kMaxRequestPriority, kMaxRequestPriority, &priority));
  o->priority = static_cast<int32_t>(priority);
  int64_t prompt_logprobs = -1;
  LADDER_API_TRY(f.integer("prompt_logprobs", 0, engine::kMaxTopLogprobs, &prompt_logprobs));
  if (prompt_logprobs >= 0) o->prompt_logprobs = static_cast<int32_t>(prompt_logprobs);
  return std::nullopt;
}

// llama.cpp server's names for what the OpenAI fields also say.
std::optional<ApiError> parse_llama_cpp_extras(Fields& f, bool chat, GenerationOptions* o) {
  LADDER_API_TRY(f.number("typical_p", 0.0, 1.0, &o->sampling.typical_p));
  if (o->sampling.typical_p <= 0.0f) return invalid_field("typical_p", "'typical_p' must be in (0, 1]");
  // Accepted: the prefix cache is always on (per tenant), which is what
  // cache_prompt: true asks for; false cannot turn it off for one request.
  if (const ojson* cache = f.find("cache_prompt"); cache != nullptr && !cache->is_boolean()) {
    return invalid_field("cache_prompt", "'cache_prompt' must be a boolean");
  }
  int64_t n_probs = 0;
  LADDER_API_TRY(f.integer("n_probs", 0, engine::kMaxTopLogprobs, &n_probs));
  if (n_probs > 0) {
    // llama.cpp: the top n_probs alternatives of each token.
    if (o->logprobs && o->sampling.top_logprobs != n_probs) {
      return invalid_field("n_probs", std::string("'n_probs' and '") + (chat ? "top_logprobs" : "logprobs") +
                                          "' disagree; send one of them");
    }
    o->logprobs = true;
    o->sampling.top_logprobs = static_cast<int32_t>(n_probs);
  }
  return std::nullopt;
}

// The output constraints beside response_format: vLLM's guided_* (and its
// newer structured_outputs object), llama.cpp's grammar and json_schema. At
// most one constraint per request.
std::optional<ApiError> parse_guided(Fields& f, GenerationOptions* o) {
  ResponseFormat& rf = o->response_format;
  auto claim = [&](const std::string& param) -> std::optional<ApiError> {
    if (rf.kind != ResponseFormat::Kind::kText) {
      return invalid_field(param, "'" + param + "' and '" + rf.param +
                                      "' both constrain the output; send only one of them");
    }
    rf.param = param;
    return std::nullopt;
  };
  auto schema_of = [&](const ojson& v, const std::string& param) -> std::optional<ApiError> {
    ojson schema = v;
    if (v.is_string()) {
      try {
        if (!parse_json_within_depth(v.get_ref<const std::string&>(), &schema)) {
          return invalid_field(param, "'" + param + "' " + nests_too_deep());
        }
      } catch (const ojson::exception&) {
        return invalid_field(param, "'" + param + "' is a string that is not JSON");
      }
    }
    if (!schema.is_object() && !schema.is_boolean()) {
      return invalid_field(param, "'" + param + "' must be a JSON Schema object");
    }
    LADDER_API_TRY(claim(param));
    rf.kind = ResponseFormat::Kind::kJsonSchema;
    rf.schema = std::move(schema);
    return std::nullopt;
  };
  auto text_of = [&](const ojson& v, const std::string& param, ResponseFormat::Kind kind) -> std::optional<ApiError> {
    if (!v.is_string() || v.get<std::string>().empty()) {
      return invalid_field(param, "'" + param + "' must be a non-empty string");
    }
    LADDER_API_TRY(claim(param));
    rf.kind = kind;
    rf.text = v.get<std::string>();
    return std::nullopt;
  };
  auto choice_of = [&](const ojson& v, const std::string& param) -> std::optional<ApiError> {
    if (!v.is_array() || v.empty() || v.size() > 1024) {
      return invalid_field(param, "'" + param + "' must be a list of 1 to 1024 strings");
    }
    std::vector<std::string> choices;
    for (const auto& c : v) {
      if (!c.is_string() || c.get<std::string>().empty()) {
        return invalid_field(param, "'" + param + "' must hold non-empty strings");
      }
      choices.push_back(c.get<std::string>());
    }
    LADDER_API_TRY(claim(param));
    rf.kind = ResponseFormat::Kind::kChoice;
    rf.choices = std::move(choices);
    return std::nullopt;
  };
  if (const ojson* v = f.find("guided_json")) LADDER_API_TRY(schema_of(*v, "guided_json"));
  if (const ojson* v = f.find("json_schema")) LADDER_API_TRY(schema_of(*v, "json_schema"));
  if (const ojson* v = f.find("guided_regex")) LADDER_API_TRY(text_of(*v, "guided_regex", ResponseFormat::Kind::kRegex));
  if (const ojson* v = f.find("guided_choice")) LADDER_API_TRY(choice_of(*v, "guided_choice"));
  if (const ojson* v = f.find("guided_grammar")) {
    LADDER_API_TRY(text_of(*v, "guided_grammar", ResponseFormat::Kind::kGrammar));
  }
  if (const ojson* v = f.find("grammar")) LADDER_API_TRY(text_of(*v, "grammar", ResponseFormat::Kind::kGrammar));
  if (const ojson* so = f.find("structured_outputs")) {
    if (!so->is_object()) return invalid_field("structured_outputs", "'structured_outputs' must be an object");
    Fields sf(*so);
    if (const ojson* v = sf.find("json")) LADDER_API_TRY(schema_of(*v, "structured_outputs.json"));
    if (const ojson* v = sf.find("regex")) {
      LADDER_API_TRY(text_of(*v, "structured_outputs.regex", ResponseFormat::Kind::kRegex));
    }
    if (const ojson* v = sf.find("choice")) LADDER_API_TRY(choice_of(*v, "structured_outputs.choice"));
    if (const ojson* v = sf.find("grammar")) {
      LADDER_API_TRY(text_of(*v, "structured_outputs.grammar", ResponseFormat::Kind::kGrammar));
    }
    bool json_object = false;
    LADDER_API_TRY(sf.boolean("json_object", &json_object));
    if (json_object) {
      LADDER_API_TRY(claim("structured_outputs.json_object"));
      rf.kind = ResponseFormat::Kind::kJsonObject;
    }
    LADDER_API_TRY(sf.leftovers("structured_outputs"));
  }
  return std::nullopt;
}

// Fields common to both endpoints. `chat` selects the chat form of logprobs
// (a boolean plus top_logprobs) over the completions form (an integer).
std::optional<ApiError> parse_options(Fields& f, bool chat, GenerationOptions* o) {
  LADDER_API_TRY(f.string("model", &o->model));
  LADDER_API_TRY(f.string("user", &o->user));
  LADDER_API_TRY(f.string("safety_identifier", &o->user));
  int64_t n = 1;
  LADDER_API_TRY(f.integer("n", 1, kMaxChoices, &n));
  o->n = static_cast<int32_t>(n);

  const int64_t kMaxTokensCap = 1 << 30;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    int64_t v = -1;
    LADDER_API_TRY(f.integer(key, 1, kMaxTokensCap, &v));
    if (v >= 1) o->max_tokens = v;
  }
  engine::SamplingParams& s = o->sampling;
  LADDER_API_TRY(f.number("temperature", 0.0, 2.0, &s.temperature));
  LADDER_API_TRY(f.number("top_p", 0.0, 1.0, &s.top_p));
  if (s.top_p <= 0.0f) return invalid_field("top_p", "'top_p' must be in (0, 1]");
  int64_t top_k = 0;
  LADDER_API_TRY(f.integer("top_k", -1, 1 << 20, &top_k));
  s.top_k = top_k < 0 ? 0 : static_cast<int32_t>(top_k);  // -1 = off, as in vLLM
  LADDER_API_TRY(f.number("min_p", 0.0, 1.0, &s.min_p));
  LADDER_API_TRY(f.number("presence_penalty", -2.0, 2.0, &s.presence_penalty));
  LADDER_API_TRY(f.number("frequency_penalty", -2.0, 2.0, &s.frequency_penalty));
  LADDER_API_TRY(f.number("repetition_penalty", 0.01, 100.0, &s.repetition_penalty));
  if (const ojson* bias = f.find("logit_bias")) {
    if (!bias->is_object()) return invalid_field("logit_bias", "'logit_bias' must be an object of token id -> bias");
    if (bias->size() > kMaxLogitBiasEntries) {
      return invalid_field("logit_bias", "'logit_bias' may name at most " + std::to_string(kMaxLogitBiasEntries) +
                                             " tokens");
    }
    for (auto it = bias->begin(); it != bias->end(); ++it) {
      const std::string& key = it.key();
      char* end = nullptr;
      errno = 0;
      const long long id = key.empty() ? -1 : std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || errno != 0 || id < 0 || id > std::numeric_limits<int32_t>::max()) {
        return invalid_field("logit_bias", "'logit_bias' keys must be token ids, got '" + key + "'");
      }
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < -100 ||
          it->get<double>() > 100) {
        return invalid_field("logit_bias", "'logit_bias' values must be numbers in [-100, 100]");
      }
      s.logit_bias.emplace_back(static_cast<int32_t>(id), it->get<float>());
    }
  }
  if (const ojson* rf = f.find("response_format")) {
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
      return invalid_field("response_format", "'response_format' must be an object with a 'type'");
    }
    Fields rff(*rf);
    std::string type;
    LADDER_API_TRY(rff.string("type", &type));
    if (type == "text") {
      o->response_format.kind = ResponseFormat::Kind::kText;
    } else if (type == "json_object") {
      o->response_format.kind = ResponseFormat::Kind::kJsonObject;
    } else if (type == "json_schema") {
      const ojson* js = rff.find("json_schema");
      if (js == nullptr || !js->is_object()) {
        return invalid_field("response_format.json_schema", "'json_schema' must be an object with a 'schema'");
      }
      Fields jf(*js);
      std::string name;
      LADDER_API_TRY(jf.string("name", &name));
      std::string description;
      LADDER_API_TRY(jf.string("description", &description));
      bool strict = false;  // the output is always held to the schema
      LADDER_API_TRY(jf.boolean("strict", &strict));
      const ojson* schema = jf.find("schema");
      if (schema == nullptr) {
        return invalid_field("response_format.json_schema.schema", "'json_schema.schema' is required");
      }
      if (!schema->is_object() && !schema->is_boolean()) {
        return invalid_field("response_format.json_schema.schema", "'json_schema.schema' must be a JSON Schema object");
      }
      if (auto e = jf.leftovers("response_format.json_schema")) return e;
      o->response_format.kind = ResponseFormat::Kind::kJsonSchema;
      o->response_format.schema = *schema;
      o->response_format.param = "response_format";
    } else {
      return invalid_field("response_format.type",
                           "'response_format.type' must be 'text', 'json_object' or 'json_schema', got '" + type + "'");
    }
    if (auto e = rff.leftovers("response_format")) return e;
  }
  if (const ojson* seed = f.find("seed")) {
    if (!seed->is_number_integer()) return invalid_field("seed", "'seed' must be an integer");
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }

  if (chat) {
    LADDER_API_TRY(f.boolean("logprobs", &o->logprobs));
    int64_t top = 0;
    LADDER_API_TRY(f.integer("top_logprobs", 0, engine::kMaxTopLogprobs, &top));
    if (top > 0 && !o->logprobs) return invalid_field("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    s.top_logprobs = static_cast<int32_t>(top);
  } else {
    int64_t top = -1;
    LADDER_API_TRY(f.integer("logprobs", 0, engine::kMaxTopLogprobs, &top));
    if (top >= 0) {
      o->logprobs = true;
      s.top_logprobs = static_cast<int32_t>(top);
    }
  }

  if (const ojson* stop = f.find("stop")) {
    if (stop->is_string()) {
      o->stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > engine::kMaxStopStrings) {
        return invalid_field("stop", "at most " + std::to_string(engine::kMaxStopStrings) + " stop strings are allowed");
      }
      for (const auto& e : *stop) {
        if (!e.is_string()) return invalid_field("stop", "'stop' must be a string or a list of strings");
        o->stop.push_back(e.get<std::string>());
      }
    } else {
      return invalid_field("stop", "'stop' must be a string or a list of strings");
    }
    for (const auto& st : o->stop) {
      if (st.empty()) return invalid_field("stop", "stop strings must not be empty");
      if (st.size() > engine::kMaxStopStringBytes) {
        return invalid_field("stop",
                             "stop strings are limited to " + std::to_string(engine::kMaxStopStringBytes) + " bytes");
      }
    }
  }

  LADDER_API_TRY(f.boolean("ignore_eos", &o->ignore_eos));
  LADDER_API_TRY(f.boolean("return_token_ids", &o->return_token_ids));
  LADDER_API_TRY(f.boolean("stream", &o->stream));
  if (const ojson* so = f.find("stream_options")) {
    if (!so->is_object()) return invalid_field("stream_options", "'stream_options' must be an object");
    if (!o->stream) return invalid_field("stream_options", "'stream_options' is only allowed with 'stream': true");
    Fields sf(*so);
    if (auto e = sf.boolean("include_usage", &o->include_usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
    LADDER_API_TRY(sf.leftovers("stream_options"));
  }
  // Accepted because Ladder does exactly what they ask: nothing is stored,
  // prefixes are cached per tenant automatically, and one tier serves all.
  LADDER_API_TRY(f.only_false("store", "Ladder does not store completions; 'store' must be false or absent"));
  LADDER_API_TRY(f.refused("metadata", "'metadata' is only used with stored completions, which Ladder does not keep"));
  if (const ojson* tier = f.find("service_tier")) {
    if (!tier->is_string() || (*tier != "auto" && *tier != "default")) {
      return invalid_field("service_tier", "Ladder serves one tier: 'service_tier' must be 'auto' or 'default'");
    }
  }
  if (const ojson* key = f.find("prompt_cache_key"); key != nullptr && !key->is_string()) {
    return invalid_field("prompt_cache_key", "'prompt_cache_key' must be a string");
  }
  LADDER_API_TRY(parse_vllm_extras(f, o));
  LADDER_API_TRY(parse_llama_cpp_extras(f, chat, o));
  LADDER_API_TRY(parse_guided(f, o));
  if (Status st = s.validate(); !st.is_ok()) return invalid_field("", st.message());
  return std::nullopt;
}

// Keys the OpenAI API defines that Ladder does not honour yet: refused with
// the reason, before the generic "unsupported parameter".
std::optional<ApiError> refuse_unsupported(Fields& f, bool chat) {
  if (chat) {
    LADDER_API_TRY(f.refused("functions", "'functions' is deprecated and not supported; use 'tools'"));
    LADDER_API_TRY(f.refused("function_call", "'function_call' is deprecated and not supported; use 'tool_choice'"));
    LADDER_API_TRY(f.refused("audio", "audio output is not supported"));
    if (const ojson* m = f.find("modalities")) {
      if (!(m->is_array() && m->size() == 1 && (*m)[0] == "text")) {
        return invalid_field("modalities", "Ladder produces text only: 'modalities' must be [\"text\"]");
      }
    }
    LADDER_API_TRY(f.refused("prediction", "predicted outputs are not supported"));
    LADDER_API_TRY(f.refused("reasoning_effort", "'reasoning_effort' is not supported; use chat_template_kwargs "
                                                 "where the model's template takes a reasoning switch"));
    LADDER_API_TRY(f.refused("verbosity", "'verbosity' is not supported"));
    LADDER_API_TRY(f.refused("web_search_options", "web search is not supported"));
  } else {
    LADDER_API_TRY(f.refused("suffix", "suffix (insertion) is not supported"));
    int64_t best_of = 1;
    LADDER_API_TRY(f.integer("best_of", 1, std::numeric_limits<int64_t>::max(), &best_of));
    if (best_of != 1) return invalid_field("best_of", "only best_of = 1 is supported");
  }
  return std::nullopt;
}

// A message's content: a string, a list of text parts (the template decides
// how they are joined), or null (an assistant message that only calls tools).
std::optional<ApiError> check_content(const ojson& m, const std::string& where, bool required) {
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    if (required) return invalid_field(where + ".content", where + ".content is required");
    return std::nullopt;
  }
  if (content->is_string()) return std::nullopt;
  if (content->is_array()) {
    for (const auto& part : *content) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
        return invalid_field(where + ".content", "only text content parts are supported");
      }
    }
    return std::nullopt;
  }
  return invalid_field(where + ".content", where + ".content must be a string or a list of text parts");
}

// tools, tool_choice, parallel_tool_calls. The tools' shape is checked where
// they are compiled (grammar::parse_openai_tools); here only what the
// request's other fields need.
std::optional<ApiError> parse_tools(Fields& f, ChatRequest* out) {
  const ojson* tools = f.find("tools");
  if (tools != nullptr) {
    if (!tools->is_array()) return invalid_field("tools", "'tools' must be a list");
    if (!tools->empty()) out->tools = *tools;
  }
  if (const ojson* choice = f.find("tool_choice")) {
    ToolChoice& c = out->tool_choice;
    if (choice->is_string()) {
      const std::string v = choice->get<std::string>();
      if (v == "auto") {
        c.kind = ToolChoice::Kind::kAuto;
      } else if (v == "none") {
        c.kind = ToolChoice::Kind::kNone;
      } else if (v == "required") {
        c.kind = ToolChoice::Kind::kRequired;
      } else {
        return invalid_field("tool_choice", "'tool_choice' must be 'auto', 'none', 'required' or a function, got '" +
                                                v + "'");
      }
    } else if (choice->is_object() && choice->value("type", "") == "function" && choice->contains("function") &&
               (*choice)["function"].is_object() && (*choice)["function"].contains("name") &&
               (*choice)["function"]["name"].is_string()) {
      c.kind = ToolChoice::Kind::kFunction;
      c.function = (*choice)["function"]["name"].get<std::string>();
    } else {
      return invalid_field("tool_choice", "'tool_choice' must be 'auto', 'none', 'required' or "
                                          "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    if (!out->tools && c.kind != ToolChoice::Kind::kNone) {
      return invalid_field("tool_choice", "'tool_choice' needs 'tools'");
    }
  }
  LADDER_API_TRY(f.boolean("parallel_tool_calls", &out->parallel_tool_calls));
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_completion_request(std::string_view body, CompletionRequest* out) {
  ojson doc;
  LADDER_API_TRY(parse_body(body, &doc));
  Fields f(doc);
  const ojson* prompt = f.find("prompt");
  if (prompt == nullptr) return invalid_field("prompt", "'prompt' is required");
  // One prompt (a string, or a list of token ids), or several (a list of
  // strings, or a list of token-id lists): OpenAI's shapes.
  auto one = [&](const ojson& p) -> std::optional<ApiError> {
    CompletionRequest::Prompt q;
    if (p.is_string()) {
      q.text = p.get<std::string>();
    } else if (p.is_array() && !p.empty()) {
      q.tokens.emplace();
      LADDER_API_TRY(token_ids(p, "prompt", &*q.tokens));
    } else {
      return invalid_field("prompt", "each prompt must be a string or a non-empty list of token ids");
    }
    out->prompts.push_back(std::move(q));
    return std::nullopt;
  };
  if (prompt->is_string() || (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number())) {
    LADDER_API_TRY(one(*prompt));
  } else if (prompt->is_array() && !prompt->empty()) {
    if (prompt->size() > kMaxChoices) {
      return invalid_field("prompt", "at most " + std::to_string(kMaxChoices) + " prompts in one request");
    }
    for (const auto& p : *prompt) LADDER_API_TRY(one(p));
  } else {
    return invalid_field("prompt", "'prompt' must be a string, a list of token ids, or a non-empty list of those");
  }
  LADDER_API_TRY(parse_options(f, /*chat=*/false, &out->options));
  LADDER_API_TRY(f.boolean("echo", &out->options.echo));
  LADDER_API_TRY(refuse_unsupported(f, /*chat=*/false));
  return f.leftovers("");
}

std::optional<ApiError> parse_chat_request(std::string_view body, ChatRequest* out) {
  ojson doc;
  LADDER_API_TRY(parse_body(body, &doc));
  Fields f(doc);
  const ojson* messages = f.find("messages");
  if (messages == nullptr || !messages->is_array() || messages->empty()) {
    return invalid_field("messages", "'messages' must be a non-empty list");
  }
  for (size_t i = 0; i < messages->size(); ++i) {
    const ojson& m = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return invalid_field(where, where + " must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return invalid_field(where + ".role", where + ".role must be a string");
    const std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "developer") {
      return invalid_field(where + ".role", "unknown role '" + r + "'");
    }
    LADDER_API_TRY(check_content(m, where, /*required=*/r != "assistant"));
    for (auto it = m.begin(); it != m.end(); ++it) {
      const std::string& k = it.key();
      const bool known = k == "role" || k == "content" || k == "name" ||
                         (k == "tool_calls" && r == "assistant") || (k == "tool_call_id" && r == "tool");
      if (!known) return invalid_field(where + "." + k, "unsupported message field '" + k + "' for role '" + r + "'");
    }
  }
  out->messages = *messages;
  out->add_generation_prompt_given = f.find("add_generation_prompt") != nullptr;
  LADDER_API_TRY(f.boolean("add_generation_prompt", &out->add_generation_prompt));
  LADDER_API_TRY(f.optional_boolean("continue_final_message", &out->continue_final_message));
  if (out->continue_final_message.value_or(false)) {
    if (out->add_generation_prompt_given && out->add_generation_prompt) {
      return invalid_field("continue_final_message",
                           "'continue_final_message' and 'add_generation_prompt' cannot both be true");
    }
    const ojson& last = messages->back();
    if (last.value("role", "") != "assistant" || !last.contains("content") || last["content"].is_null()) {
      return invalid_field("continue_final_message",
                           "'continue_final_message' needs a last message from the assistant with content");
    }
  }
  if (const ojson* kw = f.find("chat_template_kwargs")) {
    if (!kw->is_object()) return invalid_field("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    out->template_kwargs = *kw;
  }
  LADDER_API_TRY(parse_tools(f, out));
  LADDER_API_TRY(parse_options(f, /*chat=*/true, &out->options));
  LADDER_API_TRY(refuse_unsupported(f, /*chat=*/true));
  if (out->tools && out->tool_choice.kind != ToolChoice::Kind::kNone && out->tool_choice.kind != ToolChoice::Kind::kAuto &&
      out->options.response_format.kind != ResponseFormat::Kind::kText) {
    return invalid_field(out->options.response_format.param,
                         "a forced tool call ('tool_choice') and '" + out->options.response_format.param +
                             "' cannot both constrain the output");
  }
  return f.leftovers("");
}


std::optional<ApiError> parse_embeddings_request(std::string_view body, EmbeddingsRequest* out) {
  ojson doc;
  LADDER_API_TRY(parse_body(body, &doc));
  Fields f(doc);
  LADDER_API_TRY(f.string("model", &out->model));
  LADDER_API_TRY(f.string("user", &out->user));
  const ojson* input = f.find("input");
  if (input == nullptr) return invalid_field("input", "'input' is required");
  using Input = EmbeddingsRequest::Input;
  if (input->is_string()) {
    out->inputs.push_back(Input{input->get<std::string>(), std::nullopt});
  } else if (input->is_array() && !input->empty() && (*input)[0].is_number()) {
    Input one;
    one.tokens.emplace();
    LADDER_API_TRY(token_ids(*input, "input", &*one.tokens));
    out->inputs.push_back(std::move(one));
  } else if (input->is_array() && !input->empty()) {
    for (const auto& e : *input) {
      if (e.is_string()) {
        out->inputs.push_back(Input{e.get<std::string>(), std::nullopt});
      } else if (e.is_array() && !e.empty()) {
        Input one;
        one.tokens.emplace();
        LADDER_API_TRY(token_ids(e, "input", &*one.tokens));
        out->inputs.push_back(std::move(one));
      } else {
        return invalid_field("input", "'input' lists must hold strings or non-empty lists of token ids");
      }
    }
  } else {
    return invalid_field("input", "'input' must be a string, a list of strings, or token ids");
  }
  if (out->inputs.size() > kMaxEmbeddingInputs) {
    return invalid_field("input", "at most " + std::to_string(kMaxEmbeddingInputs) + " inputs per request");
  }
  for (const Input& in : out->inputs) {
    if (!in.tokens && in.text.empty()) return invalid_field("input", "inputs must not be empty");
  }
  std::string format = "float";
  LADDER_API_TRY(f.string("encoding_format", &format));
  if (format != "float" && format != "base64") {
    return invalid_field("encoding_format", "'encoding_format' must be 'float' or 'base64'");
  }
  out->base64 = format == "base64";
  int64_t dims = -1;
  LADDER_API_TRY(f.integer("dimensions", 1, 1 << 20, &dims));
  if (dims > 0) out->dimensions = dims;
  return f.leftovers("");
}

std::optional<ApiError> parse_tokenize_request(std::string_view body, TokenizeRequest* out) {
  ojson doc;
  LADDER_API_TRY(parse_body(body, &doc));
  Fields f(doc);
  LADDER_API_TRY(f.string("model", &out->model));
  if (doc.contains("messages")) {
    // vLLM's chat form: the chat fields go to the chat parser (which refuses
    // what it does not know), the rest is read here.
    ojson chat = ojson::object();
    for (const char* key : {"messages", "add_generation_prompt", "continue_final_message", "chat_template_kwargs",
                            "tools", "model"}) {
      if (const ojson* v = f.find(key)) chat[key] = *v;
    }
    LADDER_API_TRY(f.optional_boolean("add_special_tokens", &out->add_special));
    LADDER_API_TRY(f.boolean("return_token_strs", &out->token_strs));
    LADDER_API_TRY(f.leftovers(""));
    out->chat.emplace();
    return parse_chat_request(chat.dump(), &*out->chat);
  }
  if (f.find("content") != nullptr) {
    out->llama_cpp = true;
    LADDER_API_TRY(f.string("content", &out->text));
    out->add_special = false;  // llama.cpp's default
    LADDER_API_TRY(f.optional_boolean("add_special", &out->add_special));
    out->parse_special = true;
    LADDER_API_TRY(f.boolean("parse_special", &out->parse_special));
    LADDER_API_TRY(f.boolean("with_pieces", &out->with_pieces));
    return f.leftovers("");
  }
  const ojson* prompt = f.find("prompt");
  if (prompt == nullptr || !prompt->is_string()) {
    return invalid_field("prompt", "'prompt' (a string), 'messages' or llama.cpp's 'content' is required");
  }
  out->text = prompt->get<std::string>();
  LADDER_API_TRY(f.optional_boolean("add_special_tokens", &out->add_special));
  LADDER_API_TRY(f.boolean("return_token_strs", &out->token_strs));
  return f.leftovers("");
}

std::optional<ApiError> parse_detokenize_request(std::string_view body, DetokenizeRequest* out) {
  ojson doc;
  LADDER_API_TRY(parse_body(body, &doc));
  Fields f(doc);
  LADDER_API_TRY(f.string("model", &out->model));
  const ojson* tokens = f.find("tokens");
  if (tokens == nullptr) return invalid_field("tokens", "'tokens' (a list of token ids) is required");
  LADDER_API_TRY(token_ids(*tokens, "tokens", &out->tokens));
  return f.leftovers("");
}

}  // namespace ladder::server
