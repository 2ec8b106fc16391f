// libFuzzer target for the server's request path before the engine: the
// HTTP parser (with the server's bounds), then -- for a request that parses
// -- the OpenAI request parser and the request builder (chat template and
// tokenizer of a real model, stories260K from $LADDER_SHARED_DIR or
// ../shared). Every input must end in a request plan or a clean error: an
// HTTP status of 400/413, or an ApiError of 400/404 naming what was wrong.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "model/model_bundle.h"
#include "server/http_server.h"
#include "server/request_builder.h"
#include "tokenizer/chat_template.h"

namespace ladder::server {
namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_http: %s\n", what.c_str());
  std::abort();
}

struct Model {
  gguf::GgufFile file;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  tokenizer::ChatTemplate chat_template = tokenizer::ChatTemplate::chatml();
  std::unique_ptr<RequestBuilder> builder;
};

const Model& model() {
  static const Model* m = [] {
    const char* dir = std::getenv("LADDER_SHARED_DIR");
    const std::string path = std::string(dir != nullptr ? dir : "../shared") + "/models/stories260K.gguf";
    auto file = gguf::GgufFile::open(path);
    if (!file.is_ok()) fail("cannot open " + path + " (set LADDER_SHARED_DIR): " + file.status().message());
    auto* out = new Model{std::move(file).value(), nullptr, tokenizer::ChatTemplate::chatml(), nullptr};
    auto tok = tokenizer::Tokenizer::from_gguf(out->file);
    if (!tok.is_ok()) fail(tok.status().message());
    out->tokenizer = std::move(tok).value();
    if (auto t = tokenizer::chat_template_from_gguf(out->file); t.is_ok()) out->chat_template = std::move(t).value();
    RequestBuilder::Model bm;
    bm.tokenizer = out->tokenizer.get();
    bm.chat_template = &out->chat_template;
    bm.served_model_name = "stories260K";
    bm.model_path = path;
    bm.max_input_tokens = 511;
    out->builder = std::make_unique<RequestBuilder>(bm);
    return out;
  }();
  return *m;
}

}  // namespace
}  // namespace ladder::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ladder::server;  // NOLINT
  HttpServerConfig limits;
  limits.max_body_bytes = 64 * 1024;
  limits.max_header_bytes = 8 * 1024;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ParsedRequest parsed = parse_http_request(bytes, limits);
  if (!parsed.request) {
    if (parsed.error_status != 0 && parsed.error_status != 400 && parsed.error_status != 413) {
      fail("an unparsable request got status " + std::to_string(parsed.error_status));
    }
    if (parsed.error_status != 0 && parsed.error_message.empty()) fail("an error without a message");
    return 0;
  }
  const HttpRequest& req = *parsed.request;
  if (req.body.size() > limits.max_body_bytes) fail("a body over the limit was accepted");
  const std::string path = req.path();
  const ApiKind kind = path == "/v1/chat/completions" ? ApiKind::kChat : ApiKind::kCompletion;
  TenantConfig tenant;
  tenant.name = "fuzz";
  tenant.cache_scope = "fuzz";
  GenerationPlan plan;
  if (auto err = model().builder->build(kind, req, 0, tenant, &plan)) {
    if (err->http_status != 400 && err->http_status != 404) fail("build error status " + std::to_string(err->http_status));
    if (err->message.empty()) fail("an error without a message");
    return 0;
  }
  if (plan.request.prompt.empty()) fail("a plan with an empty prompt");
  for (int32_t id : plan.request.prompt) {
    if (id < 0 || id >= model().tokenizer->n_vocab()) fail("a prompt token outside the vocabulary");
  }
  return 0;
}
