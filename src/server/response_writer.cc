#include "server/response_writer.h"

namespace ladder::server {

ResponseWriter::ResponseWriter(const tokenizer::Tokenizer& tokenizer, ResponseMeta meta, WriterOptions options,
                               std::shared_ptr<ResponseChannel> channel)
    : tokenizer_(tokenizer), meta_(std::move(meta)), options_(std::move(options)), channel_(std::move(channel)) {}

void ResponseWriter::start_stream() {
  if (started_) return;
  started_ = true;
  channel_->start_stream(200, "text/event-stream", {{"X-Request-Id", meta_.id}});
  if (meta_.kind == ApiKind::kChat) channel_->send(sse_data(chat_role_chunk(meta_, options_.shape)));
}

void ResponseWriter::on_token(const engine::StreamEvent& ev) {
  const engine::SampledToken& t = ev.token;
  if (options_.shape.logprobs) {
    TokenLogprobEntry e;
    e.token = t.token;
    e.piece = std::string(tokenizer_.token_piece(t.token));
    e.logprob = t.logprob;
    for (const auto& alt : t.top) e.top.emplace_back(std::string(tokenizer_.token_piece(alt.token)), alt.logprob);
    pending_.logprobs.push_back(std::move(e));
  }
  if (options_.shape.token_ids) pending_.token_ids.push_back(t.token);
  emit(ev.text, /*flush_reasoning=*/false);
}

void ResponseWriter::emit(const std::string& text, bool flush_reasoning) {
  ChoiceDelta d = std::move(pending_);
  pending_ = {};
  if (options_.reasoning) {
    ReasoningParser::Split s = options_.reasoning->feed(text);
    if (flush_reasoning) {
      ReasoningParser::Split rest = options_.reasoning->flush();
      s.reasoning += rest.reasoning;
      s.content += rest.content;
    }
    d.reasoning = std::move(s.reasoning);
    d.content = std::move(s.content);
  } else {
    d.content = text;
  }
  if (!d.content.empty()) answered_ = true;
  const size_t offset = text_offset_;
  text_offset_ += d.content.size();
  if (!options_.stream) {
    body_.content += d.content;
    body_.reasoning += d.reasoning;
    for (auto& e : d.logprobs) body_.logprobs.push_back(std::move(e));
    body_.token_ids.insert(body_.token_ids.end(), d.token_ids.begin(), d.token_ids.end());
    return;
  }
  // Token ids and logprobs ride with the text they belong to; a token that
  // released no text yet waits (unless it is all there is to say).
  if (d.content.empty() && d.reasoning.empty()) {
    pending_ = std::move(d);
    return;
  }
  start_stream();
  channel_->send(sse_data(delta_chunk(meta_, d, options_.shape, offset)));
}

void ResponseWriter::finish(const engine::StreamEvent& ev, const std::string& finish_reason,
                            const ServerTimings& timings) {
  emit(ev.text, /*flush_reasoning=*/true);
  UsageInfo usage{ev.usage.prompt_tokens, ev.usage.completion_tokens, ev.usage.cached_prompt_tokens,
                  ev.usage.speculative};
  if (options_.stream) {
    start_stream();
    if (!pending_.empty()) {
      // Tokens that released no text (an end-of-sequence id) still report
      // their logprobs and ids.
      channel_->send(sse_data(delta_chunk(meta_, pending_, options_.shape, text_offset_)));
      pending_ = {};
    }
    channel_->send(sse_data(final_chunk(meta_, finish_reason, timings, options_.shape)));
    if (options_.shape.include_usage) channel_->send(sse_data(usage_chunk(meta_, usage)));
    channel_->send(kSseDone);
    channel_->finish();
    return;
  }
  for (auto& e : pending_.logprobs) body_.logprobs.push_back(std::move(e));
  body_.token_ids.insert(body_.token_ids.end(), pending_.token_ids.begin(), pending_.token_ids.end());
  pending_ = {};
  HttpResponse r;
  r.body = dump_json(full_response(meta_, body_, finish_reason, options_.shape, usage, timings));
  channel_->respond(std::move(r));
}

void ResponseWriter::fail(const ApiError& e) {
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
