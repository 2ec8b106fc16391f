// Tenants: who may call the server, from a TOML file, and what each one is
// guaranteed. A tenant's cache scope isolates its prefix-cache blocks from
// every other tenant's (DESIGN.md invariant 2); the server sets it from the
// API key, never from the request.
//
//   admin_api_keys = ["sk-admin"]  # may read per-tenant figures on /metrics
//
//   [[tenant]]
//   name = "alpha"
//   api_keys = ["sk-alpha-1"]
//   priority = 1            # larger = scheduled first
//   cache_scope = "alpha"   # default: the name
//   reserved_share = 0.5    # fraction of the running slots held for it
//   max_concurrent = 8      # running at once; 0 = no cap beyond capacity
//   max_queued = 32         # waiting at once; 0 = only the global queue bound
//   shadow = false          # never re-run its requests for shadow verification
//                           # (serve --shadow-rate; default true)
//   [tenant.slo]
//   ttft_ms = 500           # default deadline for the first token; 0 = none
//   tpot_ms = 100
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/sha256.h"
#include "common/status.h"
#include "engine/admission.h"

namespace ladder::server {

struct TenantSlo {
  double ttft_ms = 0;  // 0 = no deadline
  double tpot_ms = 0;
};

struct TenantConfig {
  std::string name;
  std::vector<std::string> api_keys;
  int32_t priority = 0;
  std::string cache_scope;
  double reserved_share = 0;
  int32_t max_concurrent = 0;
  int32_t max_queued = 0;
  TenantSlo slo;
  bool shadow = true;  // its requests may be sampled for shadow verification
};

class TenantRegistry {
 public:
  // One anonymous tenant that needs no key.
  static TenantRegistry anonymous();
  // One tenant ("default") whose only key is `api_key` (`ladder serve --api-key`).
  static TenantRegistry single_key(const std::string& api_key);
  // Errors name the file and the offending tenant/field (kInvalidArgument),
  // or say the file cannot be read (kIo).
  static Result<TenantRegistry> from_toml_file(const std::string& path);
  static Result<TenantRegistry> from_toml_string(std::string_view text, const std::string& source = "tenants");

  // The tenant index owning `api_key`; -1 when no tenant has it. Keys are
  // compared as SHA-256 digests in constant time, and every key is compared
  // whatever matches, so timing reveals neither the key nor which tenant.
  int authenticate(std::string_view api_key) const;
  // Anonymous mode: every request belongs to tenant 0 and no key is needed.
  bool requires_key() const { return requires_key_; }
  // Whether `api_key` is an admin key (constant time, as authenticate()).
  bool is_admin(std::string_view api_key) const;
  void add_admin_key(const std::string& api_key);

  const std::vector<TenantConfig>& tenants() const { return tenants_; }
  const TenantConfig& tenant(int index) const { return tenants_.at(static_cast<size_t>(index)); }
  size_t size() const { return tenants_.size(); }

 private:
  using Digest = Sha256Digest;
  static Digest digest(std::string_view key);

  std::vector<TenantConfig> tenants_;
  std::vector<std::pair<Digest, int>> keys_;  // (sha256(key), tenant index)
  std::vector<Digest> admin_keys_;
  bool requires_key_ = true;
};

// Each tenant's share of the running slots and queue, as admission takes them.
std::vector<engine::TenantBudget> tenant_budgets(const TenantRegistry& tenants);

}  // namespace ladder::server
