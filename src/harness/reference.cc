#include "harness/reference.h"

#include <algorithm>
#include <fstream>

namespace ladder::harness {

using nlohmann::json;

std::vector<std::string> request_keys(const std::vector<WorkloadRequest>& scheduled) {
  std::vector<std::string> keys;
  keys.reserve(scheduled.size());
  std::map<std::string, int> seen;
  for (const auto& r : scheduled) {
    json identity = request_to_json(r);
    identity.erase("t");  // when it is sent does not change what it asks
    identity["input_tokens_prompt"] = r.input_tokens >= 0 ? r.prompt : "";  // the synthesized text
    const std::string digest = sha256_hex(identity.dump());
    keys.push_back(digest + "#" + std::to_string(seen[digest]++));
  }
  return keys;
}

void Reference::add_results(const std::vector<RequestResult>& results) {
  for (const auto& r : results) {
    if (r.http_status != 200 || !r.error.empty() || r.finish_reason.empty()) {
      std::string reason = !r.error.empty() ? r.error : r.http_status != 200 ? "HTTP " + std::to_string(r.http_status)
                                                                             : "no finish_reason";
      missing.push_back({{"key", r.key}, {"index", r.index}, {"reason", reason}});
      continue;
    }
    ReferenceEntry e;
    e.key = r.key;
    e.index = r.index;
    e.source_line = r.source_line;
    e.tenant = r.tenant;
    e.slice = r.slice;
    e.finish_reason = r.finish_reason;
    e.has_token_ids = r.has_token_ids;
    e.token_ids = r.token_ids;
    e.text = r.text;
    e.logprobs = r.logprobs;
    e.prompt_sha256 = r.prompt_sha256;
    entries[e.key] = std::move(e);
  }
}

size_t Reference::with_token_ids() const {
  size_t n = 0;
  for (const auto& [k, e] : entries) n += e.has_token_ids ? 1 : 0;
  return n;
}

json reference_to_json(const Reference& ref) {
  json requests = json::array();
  std::vector<const ReferenceEntry*> ordered;
  for (const auto& [k, e] : ref.entries) ordered.push_back(&e);
  std::sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) { return a->index < b->index; });
  for (const ReferenceEntry* e : ordered) {
    requests.push_back({{"key", e->key},
                        {"index", e->index},
                        {"source_line", e->source_line},
                        {"tenant", e->tenant},
                        {"slice", e->slice},
                        {"finish_reason", e->finish_reason},
                        {"token_ids", e->has_token_ids ? json(e->token_ids) : json(nullptr)},
                        {"text", e->text},
                        {"logprobs", logprobs_to_json(e->logprobs)},
                        {"prompt_sha256", e->prompt_sha256}});
  }
  return {{"kind", "ladder.reference"},
          {"schema_version", kReferenceSchemaVersion},
          {"created", ref.created},
          {"fingerprint_sha256", ref.fingerprint_sha256},
          {"server_fingerprint_sha256", ref.server_fingerprint_sha256},
          {"configuration", ref.configuration},
          {"workload", {{"source", ref.workload_source}, {"digest_sha256", ref.workload_digest}}},
          {"top_k", ref.top_k},
          {"requests", std::move(requests)},
          {"missing", ref.missing}};
}

Result<Reference> reference_from_json(const json& j, const std::string& source) {
  auto bad = [&](const std::string& what) { return invalid_argument(source + ": not a ladder reference (" + what + ")"); };
  if (!j.is_object() || j.value("kind", "") != "ladder.reference") return bad("kind is not ladder.reference");
  if (j.value("schema_version", 0) != kReferenceSchemaVersion) {
    return bad("schema_version " + j.value("schema_version", json()).dump() + ", this build reads " +
               std::to_string(kReferenceSchemaVersion));
  }
  if (!j.contains("requests") || !j["requests"].is_array()) return bad("no requests array");
  Reference ref;
  ref.created = j.value("created", "");
  ref.fingerprint_sha256 = j.value("fingerprint_sha256", "");
  ref.server_fingerprint_sha256 = j.value("server_fingerprint_sha256", "");
  ref.configuration = j.value("configuration", json::object());
  ref.workload_source = j.value("/workload/source"_json_pointer, "");
  ref.workload_digest = j.value("/workload/digest_sha256"_json_pointer, "");
  ref.top_k = j.value("top_k", kReferenceTopK);
  for (const json& m : j.value("missing", json::array())) ref.missing.push_back(m);
  for (const json& r : j["requests"]) {
    if (!r.is_object() || !r.contains("key") || !r["key"].is_string() || !r.contains("text") || !r["text"].is_string()) {
      return bad("a request without a key or text");
    }
    ReferenceEntry e;
    e.key = r["key"].get<std::string>();
    e.index = r.value("index", size_t{0});
    e.source_line = r.value("source_line", 0);
    e.tenant = r.value("tenant", "");
    e.slice = r.value("slice", "");
    e.finish_reason = r.value("finish_reason", "");
    if (r.contains("token_ids") && r["token_ids"].is_array()) {
      e.has_token_ids = true;
      for (const json& id : r["token_ids"]) {
        if (!id.is_number_integer()) return bad("a token id that is not an integer");
        e.token_ids.push_back(id.get<int64_t>());
      }
    }
    e.text = r["text"].get<std::string>();
    e.logprobs = logprobs_from_json(r.value("logprobs", json::array()));
    e.prompt_sha256 = r.value("prompt_sha256", "");
    ref.entries[e.key] = std::move(e);
  }
  return ref;
}

Status save_reference(const std::string& path, const Reference& ref) {
  std::ofstream out(path, std::ios::binary);
  if (!out) return io_error("cannot write reference " + path);
  out << reference_to_json(ref).dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  if (!out) return io_error("write failed: " + path);
  return Status::ok();
}

Result<Reference> load_reference(const std::string& path) {
  LADDER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return invalid_argument(path + ": not valid JSON");
  return reference_from_json(j, path);
}

}  // namespace ladder::harness
