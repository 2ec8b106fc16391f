#include "harness/sse_stream.h"

#include <optional>

namespace ladder::harness {

using nlohmann::json;

void SseParser::feed(std::string_view bytes, std::vector<std::string>& events) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t nl = bytes.find('\n', pos);
    if (nl == std::string_view::npos) {
      pending_.append(bytes.substr(pos));
      return;
    }
    pending_.append(bytes.substr(pos, nl - pos));
    if (!pending_.empty() && pending_.back() == '\r') pending_.pop_back();
    take_line(pending_, events);
    pending_.clear();
    pos = nl + 1;
  }
}

void SseParser::take_line(std::string_view line, std::vector<std::string>& events) {
  if (line.empty()) {
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment / keep-alive
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  }
  // event:, id:, retry: carry nothing the measurements use.
}

namespace {

std::string string_or_empty(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::optional<int64_t> integer_at(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

void take_usage(const json& u, RequestResult& r) {
  if (auto c = integer_at(u, "completion_tokens")) r.output_tokens = *c;
  if (auto p = integer_at(u, "prompt_tokens")) r.prompt_tokens = *p;
  SpeculativeUsage& s = r.speculative;
  if (auto d = u.find("completion_tokens_details"); d != u.end() && d->is_object()) {
    if (auto v = integer_at(*d, "accepted_prediction_tokens")) s.accepted_prediction_tokens = v;
    if (auto v = integer_at(*d, "rejected_prediction_tokens")) s.rejected_prediction_tokens = v;
  }
  if (auto l = u.find("ladder_speculative"); l != u.end() && l->is_object()) {
    if (auto v = integer_at(*l, "proposed")) s.proposed = v;
    if (auto v = integer_at(*l, "accepted")) s.accepted = v;
    if (auto v = integer_at(*l, "cycles")) s.cycles = v;
  }
}

// Appends a choice's token_ids (return_token_ids); true when it carried any.
bool take_token_ids(const json& choice, RequestResult& r) {
  auto ids = choice.find("token_ids");
  if (ids == choice.end() || !ids->is_array()) return false;
  r.has_token_ids = true;
  for (const json& id : *ids) {
    if (id.is_number_integer()) r.token_ids.push_back(id.get<int64_t>());
  }
  return !ids->empty();
}

}  // namespace

void StreamAccumulator::take_chunk(const json& j, double t_ms) {
  if (!j.is_object()) return;
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    r_.error = e->is_object() ? string_or_empty(*e, "message") : e->dump();
    if (r_.error.empty()) r_.error = e->dump();
    if (e->is_object()) r_.error_code = string_or_empty(*e, "code");
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) take_usage(*u, r_);
  if (auto l = j.find("ladder"); l != j.end() && l->is_object()) {
    if (!r_.server_timings.is_object()) r_.server_timings = json::object();
    r_.server_timings.update(*l);
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty()) return;
  const json& c = (*choices)[0];
  if (!c.is_object()) return;
  std::string answer, reasoning;
  if (auto d = c.find("delta"); d != c.end() && d->is_object()) {
    answer = string_or_empty(*d, "content");
    reasoning = string_or_empty(*d, "reasoning_content");
    if (reasoning.empty()) reasoning = string_or_empty(*d, "reasoning");
  } else if (auto m = c.find("message"); m != c.end() && m->is_object()) {
    answer = string_or_empty(*m, "content");
    reasoning = string_or_empty(*m, "reasoning_content");
  } else {
    answer = string_or_empty(c, "text");
  }
  if (auto f = c.find("finish_reason"); f != c.end() && f->is_string()) r_.finish_reason = f->get<std::string>();
  const bool ids = take_token_ids(c, r_);
  if (auto lp = c.find("logprobs"); lp != c.end() && !lp->is_null()) append_logprobs(*lp, r_.logprobs);
  // A chunk may carry ids but no text yet (a character split across tokens).
  if (answer.empty() && reasoning.empty() && !ids) return;
  ++r_.token_chunks;
  if (!r_.ttft_ms) r_.ttft_ms = t_ms;
  if (!answer.empty() && !r_.ttfat_ms) r_.ttfat_ms = t_ms;
  if (last_token_ms_ >= 0) r_.itl_ms.push_back(t_ms - last_token_ms_);
  last_token_ms_ = t_ms;
  r_.text += answer;
  r_.reasoning_text += reasoning;
}

void StreamAccumulator::on_event(const std::string& data, double t_ms) {
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  ++r_.sse_events;
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    if (r_.error.empty()) r_.error = "unparsable SSE data: " + data.substr(0, 200);
    return;
  }
  take_chunk(j, t_ms);
}

void StreamAccumulator::on_whole_body(const std::string& body, double t_ms) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    if (r_.error.empty()) r_.error = "response is neither SSE nor JSON: " + body.substr(0, 200);
    return;
  }
  take_chunk(j, t_ms);
}

void StreamAccumulator::finish(double t_ms) {
  r_.e2e_ms = t_ms;
  if (r_.ttft_ms && r_.output_tokens >= 2) {
    r_.tpot_ms = (r_.e2e_ms - *r_.ttft_ms) / static_cast<double>(r_.output_tokens - 1);
  }
}

}  // namespace ladder::harness
