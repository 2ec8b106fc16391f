#include "server/response_writer.h"

#include "common/check.h"

namespace ladder::server {

ResponseWriter::ResponseWriter(const tokenizer::Tokenizer& tokenizer, ResponseMeta meta, WriterOptions options,
                               std::shared_ptr<ResponseChannel> channel)
    : tokenizer_(tokenizer), meta_(std::move(meta)), options_(std::move(options)), channel_(std::move(channel)) {
  LADDER_CHECK(options_.n >= 1, "a response has at least one choice");
  if (options_.responses != nullptr) {
    LADDER_CHECK(options_.n == 1, "a Responses API response has one choice");
    responses_ = std::make_unique<ResponsesOutput>(meta_, options_.responses->skeleton, options_.stream, channel_);
  }
  choices_.resize(static_cast<size_t>(options_.n));
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    if (options_.reasoning) c.reasoning.emplace(*options_.reasoning, options_.reasoning_starts_inside);
    if (options_.tool_format) c.tools.emplace(*options_.tool_format, options_.tool_id_seed + i);
    if (i < options_.echo.size()) c.echo = options_.echo[i];
    if (i >= options_.prompt_scores.size() || options_.prompt_scores[i] == nullptr) continue;
    const std::vector<PromptTokenScore>& scores = *options_.prompt_scores[i];
    if (options_.echo_logprobs) {
      for (const PromptTokenScore& p : scores) {
        TokenLogprobEntry e = entry_of(p.token, p.logprob, p.top, static_cast<size_t>(options_.echo_top_logprobs));
        e.known = p.scored;
        c.pending.logprobs.push_back(std::move(e));
      }
    }
    if (options_.prompt_logprobs >= 0) c.result.prompt_logprobs = prompt_logprobs_json(scores);
  }
}

TokenLogprobEntry ResponseWriter::entry_of(int32_t token, float logprob, const std::vector<engine::TokenLogprob>& top,
                                           size_t n_top) const {
  TokenLogprobEntry e;
  e.token = token;
  e.piece = std::string(tokenizer_.token_piece(token));
  e.logprob = logprob;
  for (size_t i = 0; i < top.size() && i < n_top; ++i) {
    e.top.emplace_back(std::string(tokenizer_.token_piece(top[i].token)), top[i].logprob);
  }
  return e;
}

nlohmann::json ResponseWriter::prompt_logprobs_json(const std::vector<PromptTokenScore>& scores) const {
  nlohmann::json list = nlohmann::json::array();
  for (const PromptTokenScore& p : scores) {
    if (!p.scored) {
      list.push_back(nullptr);
      continue;
    }
    nlohmann::json at = nlohmann::json::object();
    auto add = [&](int32_t id, float logprob, int64_t rank) {
      at[std::to_string(id)] = {{"logprob", logprob},
                                {"rank", rank},
                                {"decoded_token", std::string(tokenizer_.token_piece(id))}};
    };
    add(p.token, p.logprob, p.rank);
    const size_t n = std::min(p.top.size(), static_cast<size_t>(options_.prompt_logprobs));
    for (size_t i = 0; i < n; ++i) {
      if (p.top[i].token != p.token) add(p.top[i].token, p.top[i].logprob, static_cast<int64_t>(i) + 1);
    }
    list.push_back(std::move(at));
  }
  return list;
}

void ResponseWriter::start_stream() {
  if (started_) return;
  started_ = true;
  channel_->start_stream(200, "text/event-stream", {{"X-Request-Id", meta_.id}});
}

void ResponseWriter::send_delta(int32_t index, ChoiceDelta delta, size_t offset) {
  if (responses_) {
    responses_->delta(delta);
    return;
  }
  start_stream();
  Choice& c = choices_[static_cast<size_t>(index)];
  if (meta_.kind == ApiKind::kChat && !c.role_sent) {
    c.role_sent = true;
    channel_->send(sse_data(chat_role_chunk(meta_, options_.shape, index)));
  }
  if (!delta.empty()) channel_->send(sse_data(delta_chunk(meta_, delta, options_.shape, offset, index)));
}

void ResponseWriter::on_token(int32_t index, const engine::StreamEvent& ev) {
  if (ended_) return;
  Choice& c = choices_.at(static_cast<size_t>(index));
  const engine::SampledToken& t = ev.token;
  if (options_.shape.logprobs) c.pending.logprobs.push_back(entry_of(t.token, t.logprob, t.top, t.top.size()));
  if (options_.shape.token_ids) c.pending.token_ids.push_back(t.token);
  emit(index, ev.text, /*at_end=*/false, /*cut_off=*/false);
}

void ResponseWriter::emit(int32_t index, const std::string& text, bool at_end, bool cut_off) {
  Choice& c = choices_[static_cast<size_t>(index)];
  ChoiceDelta d = std::move(c.pending);
  c.pending = {};
  if (c.reasoning) {
    ReasoningParser::Split s = c.reasoning->feed(text);
    if (at_end) {
      ReasoningParser::Split rest = c.reasoning->flush();
      s.reasoning += rest.reasoning;
      s.content += rest.content;
    }
    d.reasoning = std::move(s.reasoning);
    d.content = std::move(s.content);
  } else {
    d.content = std::exchange(c.echo, {}) + text;
  }
  if (c.tools) {
    // The answer goes through the tool-call parser: calls come out as
    // tool_calls, the rest (never a marker) as content.
    grammar::ToolCallStreamDelta td = c.tools->push(d.content);
    if (at_end) {
      grammar::ToolCallStreamDelta rest = c.tools->finish(cut_off);
      td.content += rest.content;
      for (auto& call : rest.tool_calls) td.tool_calls.push_back(std::move(call));
    }
    d.content = std::move(td.content);
    d.tool_calls = std::move(td.tool_calls);
  }
  if (!d.content.empty() || !d.tool_calls.empty()) answered_ = true;
  const size_t offset = c.text_offset;
  c.text_offset += d.content.size();
  if (!options_.stream) {
    ChoiceDelta& body = c.result.text;
    body.content += d.content;
    body.reasoning += d.reasoning;
    for (auto& e : d.logprobs) body.logprobs.push_back(std::move(e));
    body.token_ids.insert(body.token_ids.end(), d.token_ids.begin(), d.token_ids.end());
    return;
  }
  // Token ids and logprobs ride with the text they belong to; a token that
  // released no text yet waits (unless it is all there is to say).
  if (d.content.empty() && d.reasoning.empty() && d.tool_calls.empty() && !at_end) {
    c.pending = std::move(d);
    return;
  }
  send_delta(index, std::move(d), offset);
}

void ResponseWriter::finish_choice(int32_t index, const engine::StreamEvent& ev, const std::string& finish_reason) {
  if (ended_) return;
  emit(index, ev.text, /*at_end=*/true, /*cut_off=*/finish_reason == "length");
  Choice& c = choices_[static_cast<size_t>(index)];
  std::string reason = finish_reason;
  if (c.tools && !c.tools->result().tool_calls.empty() && reason == "stop") reason = "tool_calls";
  c.result.finish_reason = reason;
  if (c.tools) c.result.tool_calls = c.tools->result().tool_calls;
  if (!options_.stream || responses_) return;
  bool last = true;
  for (const Choice& other : choices_) last = last && !other.result.finish_reason.empty();
  // Timings describe the whole request: they ride on the last final chunk,
  // which finish() sends.
  if (last) {
    last_finished_ = index;
  } else {
    channel_->send(sse_data(final_chunk(meta_, reason, nullptr, options_.shape, index)));
  }
}

void ResponseWriter::finish(const UsageInfo& usage, const ServerTimings& timings) {
  if (ended_) return;
  ended_ = true;
  if (responses_) {
    responses_->finish(choices_[0].result, usage, timings, options_.responses->on_response);
    return;
  }
  if (options_.stream) {
    start_stream();
    // The last choice to finish closes with the timings.
    const Choice& last = choices_[static_cast<size_t>(last_finished_)];
    channel_->send(sse_data(final_chunk(meta_, last.result.finish_reason, &timings, options_.shape, last_finished_)));
    if (options_.shape.include_usage) channel_->send(sse_data(usage_chunk(meta_, usage)));
    channel_->send(kSseDone);
    channel_->finish();
    return;
  }
  std::vector<ChoiceResult> results;
  for (Choice& c : choices_) results.push_back(std::move(c.result));
  HttpResponse r;
  r.body = dump_json(full_response(meta_, results, options_.shape, usage, timings));
  channel_->respond(std::move(r));
}

void ResponseWriter::fail(const ApiError& e) {
  if (ended_) return;
  ended_ = true;
  if (responses_ && responses_->started()) {
    responses_->fail(e);
    return;
  }
  if (started_) {
    channel_->send(sse_data(nlohmann::json::parse(e.body())));
    channel_->send(kSseDone);
    channel_->finish();
    return;
  }
  HttpResponse r;
  r.status = e.http_status;
  r.body = e.body();
  if (e.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  channel_->respond(std::move(r));
}

}  // namespace ladder::server
