#include "server/openai_response.h"

namespace ladder::server {

using nlohmann::json;

std::string dump_json(const json& doc) { return doc.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_data(const json& chunk) { return "data: " + dump_json(chunk) + "\n\n"; }

json usage_json(const UsageInfo& u) {
  const engine::SpecUsage& sp = u.speculative;
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}},
            {"completion_tokens_details",
             {{"accepted_prediction_tokens", sp.accepted}, {"rejected_prediction_tokens", sp.rejected()}}}};
  if (sp.eligible) {
    j["ladder_speculative"] = {{"proposed", sp.proposed},
                               {"accepted", sp.accepted},
                               {"cycles", sp.cycles},
                               {"tokens_per_cycle", sp.tokens_per_cycle()},
                               {"draft_ms", static_cast<double>(sp.draft_us) / 1000.0},
                               {"verify_ms", static_cast<double>(sp.verify_us) / 1000.0},
                               {"k", sp.k},
                               {"enabled", sp.enabled},
                               {"predicted_gain", sp.predicted_gain},
                               {"measured_gain", sp.measured_gain > 0 ? json(sp.measured_gain) : json(nullptr)}};
  }
  return j;
}

json timings_json(const ServerTimings& t) {
  return {{"tenant", t.tenant},           {"queued_ms", t.queued_ms},         {"ttft_ms", t.ttft_ms},
          {"decode_ms", t.decode_ms},     {"e2e_ms", t.e2e_ms},               {"prompt_tokens", t.prompt_tokens},
          {"cached_tokens", t.cached_tokens}, {"completion_tokens", t.completion_tokens},
          {"preemptions", t.preemptions}};
}

namespace {

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

json base(const ResponseMeta& meta, const char* object) {
  json j = {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
  if (!meta.system_fingerprint.empty()) j["system_fingerprint"] = meta.system_fingerprint;
  return j;
}

const char* chunk_object(ApiKind kind) {
  return kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion";
}

}  // namespace

json logprobs_json(ApiKind kind, const std::vector<TokenLogprobEntry>& entries, size_t text_offset) {
  if (kind == ApiKind::kChat) {
    json content = json::array();
    for (const auto& e : entries) {
      json top = json::array();
      for (const auto& [piece, lp] : e.top) top.push_back({{"token", piece}, {"logprob", lp}, {"bytes", bytes_of(piece)}});
      content.push_back({{"token", e.piece}, {"logprob", e.logprob}, {"bytes", bytes_of(e.piece)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  size_t offset = text_offset;
  for (const auto& e : entries) {
    tokens.push_back(e.piece);
    if (e.known) {
      token_logprobs.push_back(e.logprob);
      json top = json::object();
      for (const auto& [piece, lp] : e.top) top[piece] = lp;
      top_logprobs.push_back(top);
    } else {
      token_logprobs.push_back(nullptr);
      top_logprobs.push_back(nullptr);
    }
    offsets.push_back(offset);
    offset += e.piece.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

json chat_role_chunk(const ResponseMeta& meta, const ResponseShape& shape, int32_t index) {
  json c = base(meta, "chat.completion.chunk");
  c["choices"] = json::array({{{"index", index},
                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                               {"logprobs", nullptr},
                               {"finish_reason", nullptr}}});
  if (shape.include_usage) c["usage"] = nullptr;
  return c;
}

namespace {

// OpenAI's streamed tool call: the first delta of a call names it (id, type,
// function.name, empty arguments); later ones carry argument fragments.
json tool_call_deltas_json(const std::vector<grammar::ToolCallDelta>& deltas) {
  json calls = json::array();
  for (const grammar::ToolCallDelta& d : deltas) {
    json call = {{"index", d.index}};
    if (!d.id.empty()) {
      call["id"] = d.id;
      call["type"] = "function";
      call["function"] = {{"name", d.name}, {"arguments", d.arguments}};
    } else {
      call["function"] = {{"arguments", d.arguments}};
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

}  // namespace

json delta_chunk(const ResponseMeta& meta, const ChoiceDelta& delta, const ResponseShape& shape, size_t text_offset,
                 int32_t index) {
  json c = base(meta, chunk_object(meta.kind));
  json choice = {{"index", index}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  if (meta.kind == ApiKind::kChat) {
    json d = json::object();
    if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
    if (!delta.content.empty() || (delta.reasoning.empty() && delta.tool_calls.empty())) d["content"] = delta.content;
    if (!delta.tool_calls.empty()) d["tool_calls"] = tool_call_deltas_json(delta.tool_calls);
    choice["delta"] = std::move(d);
  } else {
    choice["text"] = delta.content;
  }
  if (shape.logprobs && !delta.logprobs.empty()) choice["logprobs"] = logprobs_json(meta.kind, delta.logprobs, text_offset);
  if (shape.token_ids) choice["token_ids"] = delta.token_ids;
  c["choices"] = json::array({choice});
  if (shape.include_usage) c["usage"] = nullptr;
  return c;
}

json final_chunk(const ResponseMeta& meta, const std::string& finish_reason, const ServerTimings* timings,
                 const ResponseShape& shape, int32_t index) {
  json c = base(meta, chunk_object(meta.kind));
  json choice = {{"index", index}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
  if (meta.kind == ApiKind::kChat) {
    choice["delta"] = json::object();
  } else {
    choice["text"] = "";
  }
  c["choices"] = json::array({choice});
  if (shape.include_usage) c["usage"] = nullptr;
  if (timings != nullptr) c["ladder"] = timings_json(*timings);
  return c;
}

json usage_chunk(const ResponseMeta& meta, const UsageInfo& usage) {
  json c = base(meta, chunk_object(meta.kind));
  c["choices"] = json::array();
  c["usage"] = usage_json(usage);
  return c;
}

json full_response(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, const ResponseShape& shape,
                   const UsageInfo& usage, const ServerTimings& timings) {
  const bool chat = meta.kind == ApiKind::kChat;
  json r = base(meta, chat ? "chat.completion" : "text_completion");
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& result = choices[i];
    json choice = {{"index", i}, {"logprobs", nullptr}, {"finish_reason", result.finish_reason}};
    if (chat) {
      json message = {{"role", "assistant"}, {"content", result.text.content}};
      if (!result.text.reasoning.empty()) message["reasoning_content"] = result.text.reasoning;
      if (!result.tool_calls.empty()) {
        json calls = json::array();
        for (const grammar::ToolCall& call : result.tool_calls) {
          calls.push_back(
              {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        }
        message["tool_calls"] = std::move(calls);
        if (result.text.content.empty()) message["content"] = nullptr;
      }
      choice["message"] = std::move(message);
    } else {
      choice["text"] = result.text.content;
    }
    if (shape.logprobs) choice["logprobs"] = logprobs_json(meta.kind, result.text.logprobs, 0);
    if (shape.token_ids) choice["token_ids"] = result.text.token_ids;
    // vLLM: each completion choice has its prompt's; a chat response has one.
    if (!chat && !result.prompt_logprobs.is_null()) choice["prompt_logprobs"] = result.prompt_logprobs;
    list.push_back(std::move(choice));
  }
  if (chat && !choices.empty() && !choices[0].prompt_logprobs.is_null()) {
    r["prompt_logprobs"] = choices[0].prompt_logprobs;
  }
  r["choices"] = std::move(list);
  r["usage"] = usage_json(usage);
  r["ladder"] = timings_json(timings);
  return r;
}

}  // namespace ladder::server
