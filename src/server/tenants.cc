#include "server/tenants.h"

#include <openssl/crypto.h>

#include <fstream>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "common/file_io.h"
#include "common/sha256.h"

namespace ladder::server {

TenantRegistry TenantRegistry::anonymous() {
  TenantRegistry reg;
  TenantConfig t;
  t.name = "anonymous";
  t.cache_scope = "anonymous";
  t.reserved_share = 0;
  reg.tenants_.push_back(std::move(t));
  reg.requires_key_ = false;
  return reg;
}

TenantRegistry TenantRegistry::single_key(const std::string& api_key) {
  TenantRegistry reg;
  TenantConfig t;
  t.name = "default";
  t.cache_scope = "default";
  t.api_keys = {api_key};
  reg.tenants_.push_back(std::move(t));
  reg.keys_.emplace_back(digest(api_key), 0);
  return reg;
}

bool TenantRegistry::is_admin(std::string_view api_key) const {
  const Digest d = digest(api_key);
  bool found = false;
  for (const Digest& k : admin_keys_) found |= CRYPTO_memcmp(k.data(), d.data(), d.size()) == 0;
  return found;
}

void TenantRegistry::add_admin_key(const std::string& api_key) { admin_keys_.push_back(digest(api_key)); }

TenantRegistry::Digest TenantRegistry::digest(std::string_view key) { return sha256(key); }

int TenantRegistry::authenticate(std::string_view api_key) const {
  if (!requires_key_) return 0;
  Digest d = digest(api_key);
  int found = -1;
  for (const auto& [key_digest, index] : keys_) {
    // No early exit: the loop's time does not depend on where a match is.
    bool equal = CRYPTO_memcmp(key_digest.data(), d.data(), d.size()) == 0;
    found = equal ? index : found;
  }
  return found;
}

namespace {

template <typename T>
Status read_number(const toml::table& t, const char* key, const std::string& where, T lo, T hi, T* out) {
  const toml::node* node = t.get(key);
  if (node == nullptr) return Status::ok();
  double v = 0;
  if (auto i = node->value_exact<int64_t>()) {
    v = static_cast<double>(*i);
  } else if (auto f = node->value_exact<double>()) {
    v = *f;
  } else {
    return invalid_argument(where + ": '" + key + "' must be a number");
  }
  if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi))) {
    std::ostringstream msg;
    msg << where << ": '" << key << "' = " << v << " is outside [" << lo << ", " << hi << "]";
    return invalid_argument(msg.str());
  }
  *out = static_cast<T>(v);
  return Status::ok();
}

}  // namespace

Result<TenantRegistry> TenantRegistry::from_toml_file(const std::string& path) {
  auto text = read_file(path);
  if (!text.is_ok()) return Status(text.status().code(), "tenants file: " + text.status().message());
  return from_toml_string(*text, path);
}

Result<TenantRegistry> TenantRegistry::from_toml_string(std::string_view text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << source << ": " << e.description() << " (line " << e.source().begin.line << ")";
    return invalid_argument(msg.str());
  }
  const toml::array* list = doc["tenant"].as_array();
  if (list == nullptr || list->empty()) {
    return invalid_argument(source + ": needs at least one [[tenant]] table");
  }
  TenantRegistry reg;
  for (auto&& [key, node] : doc) {
    if (key != "tenant" && key != "admin_api_keys") {
      return invalid_argument(source + ": unknown top-level key '" + std::string(key.str()) +
                              "' (expected [[tenant]] tables and admin_api_keys)");
    }
  }
  if (const toml::node* admin = doc.get("admin_api_keys")) {
    const toml::array* keys = admin->as_array();
    if (keys == nullptr) return invalid_argument(source + ": 'admin_api_keys' must be a list of strings");
    for (const auto& k : *keys) {
      auto key = k.value<std::string>();
      if (!key || key->empty()) return invalid_argument(source + ": every admin api key must be a non-empty string");
      reg.add_admin_key(*key);
    }
  }
  std::set<std::string> names;
  std::set<Digest> seen_keys;
  double total_share = 0;
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::table* t = list->get(i)->as_table();
    std::string where = source + ": tenant #" + std::to_string(i + 1);
    if (t == nullptr) return invalid_argument(where + " is not a table");
    static const std::set<std::string, std::less<>> kKeys = {
        "name", "api_keys", "cache_scope", "priority", "reserved_share", "max_concurrent", "max_queued", "slo",
        "shadow"};
    for (auto&& [key, node] : *t) {
      if (kKeys.count(key.str()) == 0) {
        return invalid_argument(where + ": unknown key '" + std::string(key.str()) + "'");
      }
    }
    TenantConfig cfg;
    auto name = (*t)["name"].value<std::string>();
    if (!name || name->empty()) return invalid_argument(where + ": 'name' (a non-empty string) is required");
    cfg.name = *name;
    where = source + ": tenant '" + cfg.name + "'";
    if (!names.insert(cfg.name).second) return invalid_argument(where + " is defined twice");
    const toml::array* keys = (*t)["api_keys"].as_array();
    if (keys == nullptr || keys->empty()) return invalid_argument(where + ": 'api_keys' (a non-empty list of strings) is required");
    for (const auto& k : *keys) {
      auto key = k.value<std::string>();
      if (!key || key->empty()) return invalid_argument(where + ": every api key must be a non-empty string");
      Digest d = digest(*key);
      if (!seen_keys.insert(d).second) return invalid_argument(where + ": an api key is listed twice");
      cfg.api_keys.push_back(*key);
      reg.keys_.emplace_back(d, static_cast<int>(i));
    }
    cfg.cache_scope = (*t)["cache_scope"].value_or(cfg.name);
    if (cfg.cache_scope.empty()) return invalid_argument(where + ": 'cache_scope' must not be empty");
    LADDER_RETURN_IF_ERROR(read_number<int32_t>(*t, "priority", where, -1000, 1000, &cfg.priority));
    LADDER_RETURN_IF_ERROR(read_number<double>(*t, "reserved_share", where, 0.0, 1.0, &cfg.reserved_share));
    LADDER_RETURN_IF_ERROR(read_number<int32_t>(*t, "max_concurrent", where, 0, 1 << 20, &cfg.max_concurrent));
    LADDER_RETURN_IF_ERROR(read_number<int32_t>(*t, "max_queued", where, 0, 1 << 20, &cfg.max_queued));
    if (const toml::node* shadow = t->get("shadow")) {
      if (!shadow->is_boolean()) return invalid_argument(where + ": 'shadow' must be true or false");
      cfg.shadow = shadow->as_boolean()->get();
    }
    if (const toml::table* slo = (*t)["slo"].as_table()) {
      for (auto&& [key, node] : *slo) {
        if (key != "ttft_ms" && key != "tpot_ms") {
          return invalid_argument(where + " slo: unknown key '" + std::string(key.str()) + "' (ttft_ms, tpot_ms)");
        }
      }
      LADDER_RETURN_IF_ERROR(read_number<double>(*slo, "ttft_ms", where + " slo", 0.0, 1e9, &cfg.slo.ttft_ms));
      LADDER_RETURN_IF_ERROR(read_number<double>(*slo, "tpot_ms", where + " slo", 0.0, 1e9, &cfg.slo.tpot_ms));
    }
    total_share += cfg.reserved_share;
    reg.tenants_.push_back(std::move(cfg));
  }
  if (total_share > 1.0 + 1e-9) {
    return invalid_argument(source + ": reserved_share values add up to " + std::to_string(total_share) +
                            ", more than 1");
  }
  return reg;
}

std::vector<engine::TenantBudget> tenant_budgets(const TenantRegistry& tenants) {
  std::vector<engine::TenantBudget> budgets;
  for (const TenantConfig& t : tenants.tenants()) {
    budgets.push_back({t.reserved_share, t.max_concurrent, t.max_queued, t.priority});
  }
  return budgets;
}

}  // namespace ladder::server
