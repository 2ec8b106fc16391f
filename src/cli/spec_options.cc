#include "cli/spec_options.h"

#include "engine/draft.h"
#include "engine/model_draft.h"

namespace ladder::cli {

void add_spec_options(CLI::App* cmd, SpecCliOptions* o) {
  cmd->add_option("--spec", o->spec,
                  "Speculative decoding: ngram (prompt lookup), draft:FILE (a GGUF sharing the vocabulary), self-q4 "
                  "(the model requantized to Q4_0), early-exit:L (its first L layers), or off")
      ->capture_default_str()
      ->check([](const std::string& v) {
        auto spec = engine::parse_draft_spec(v);
        return spec.is_ok() ? std::string() : spec.status().message();
      });
  cmd->add_option("--spec-k", o->k, "Most draft tokens per verify cycle")
      ->capture_default_str()
      ->check(CLI::Range(1, static_cast<int>(engine::kMaxSpecK)));
  cmd->add_flag("--spec-fixed", o->fixed,
                "Always speculate with --spec-k (no measured control of k and no switching off)");
}

Result<engine::SpeculativeConfig> speculative_config(const SpecCliOptions& o, const model::ModelBundle& bundle,
                                                     const engine::EngineConfig& engine) {
  LADDER_ASSIGN_OR_RETURN(engine::DraftSpec spec, engine::parse_draft_spec(o.spec));
  engine::SpeculativeConfig sc;
  sc.k = o.k;
  sc.adaptive = !o.fixed;
  LADDER_ASSIGN_OR_RETURN(sc.draft,
                          engine::make_draft(spec, *bundle.model, *bundle.file, engine::draft_options_for(engine)));
  return sc;
}

}  // namespace ladder::cli
