#include "tokenizer/incremental_detokenizer.h"

#include <algorithm>

#include "common/utf8.h"

namespace ladder::tokenizer {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special,
                                               bool at_sequence_start)
    : tokenizer_(&tokenizer), skip_special_(skip_special) {
  state_ = at_sequence_start ? tokenizer.initial_decode_state() : DecodeState{};
}

void IncrementalDetokenizer::show_special(std::vector<int32_t> ids) {
  std::sort(ids.begin(), ids.end());
  shown_ = std::move(ids);
}

std::string IncrementalDetokenizer::push(int32_t id) {
  const bool skip = skip_special_ && !std::binary_search(shown_.begin(), shown_.end(), id);
  tokenizer_->append_piece(id, skip, &state_, &pending_);
  // Emit every complete character and every ill-formed subpart (as U+FFFD);
  // keep a well-formed prefix that more bytes could still complete.
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Step step = utf8_step(pending_, pos);
    if (step.kind == Utf8Kind::kIncomplete) break;
    if (step.kind == Utf8Kind::kChar) {
      out.append(pending_, pos, step.length);
    } else {
      append_utf8(kReplacementChar, &out);
    }
    pos += step.length;
  }
  pending_.erase(0, pos);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out = sanitize_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace ladder::tokenizer
