#include "grammar/tool_call_parser.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace ladder::grammar {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool is_tool_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

bool is_mistral(ToolCallFormat f) {
  return f == ToolCallFormat::kMistralJsonArray || f == ToolCallFormat::kMistralArgs;
}

// A JSON string literal's value, or nothing when it is not one.
bool decode_json_string(const std::string& literal, std::string* out) {
  nlohmann::json v = nlohmann::json::parse(literal, nullptr, false);
  if (v.is_discarded() || !v.is_string()) return false;
  *out = v.get<std::string>();
  return true;
}

}  // namespace

ToolCallParser::ToolCallParser(ToolCallFormat format, uint64_t id_seed)
    : format_(format),
      rng_(id_seed),
      mode_(format == ToolCallFormat::kLlama3Json ? Mode::kStart : Mode::kContent) {}

ToolCallStreamDelta ToolCallParser::push(std::string_view text) {
  buf_.append(text);
  run(false);
  return std::exchange(out_, {});
}

ToolCallStreamDelta ToolCallParser::finish(bool cut_off) {
  cut_off_ = cut_off;
  run(true);
  if (in_call_) {
    if (header_sent_ && args_done_) {
      end_call(true);  // named, its arguments whole: only the closing syntax is missing
    } else if (header_sent_) {
      // Its arguments do not parse: not a call of the whole result.
      end_call(false);
      result_.tool_calls.pop_back();
    } else if (tentative_) {
      abandon_call();  // a Llama reply's JSON that never named a call: content
      run(true);
    } else {
      in_call_ = false;  // a marker opened it: none of it is content
      pos_ = buf_.size();
    }
  }
  // What a waiting state still holds is spaces or a cut-off marker, except
  // at the very start of a Llama reply, where it is the reply.
  if (mode_ == Mode::kStart) emit_content(std::string_view(buf_).substr(pos_));
  buf_.clear();
  pos_ = 0;
  return std::exchange(out_, {});
}

void ToolCallParser::run(bool at_end) {
  while (pos_ < buf_.size() && step(at_end)) {
  }
  // Keep an undecided call's text: it may yet turn out to be content.
  const size_t keep = in_call_ && !header_sent_ ? std::min(call_start_, pos_) : pos_;
  buf_.erase(0, keep);
  pos_ -= keep;
  if (in_call_ && !header_sent_) call_start_ -= keep;
}

bool ToolCallParser::at_marker(std::string_view marker, bool* partial) const {
  std::string_view rest = std::string_view(buf_).substr(pos_);
  *partial = false;
  if (rest.substr(0, marker.size()) == marker) return true;
  *partial = rest.size() < marker.size() && marker.substr(0, rest.size()) == rest;
  return false;
}

bool ToolCallParser::step(bool at_end) {
  const char c = buf_[pos_];
  bool partial = false;
  switch (mode_) {
    case Mode::kStart: {
      size_t i = pos_;
      while (i < buf_.size() && is_space(buf_[i])) ++i;
      if (i == buf_.size()) return false;
      std::string_view rest = std::string_view(buf_).substr(i);
      if (rest.substr(0, kPythonTag.size()) == kPythonTag) {
        pos_ = i + kPythonTag.size();
        mode_ = Mode::kBeforeObject;
        return true;
      }
      if (!at_end && rest.size() < kPythonTag.size() && kPythonTag.substr(0, rest.size()) == rest)
        return false;
      if (rest[0] == '{') {
        begin_call(true);  // the leading spaces belong to it, should it be content
        mode_ = Mode::kObject;
        pos_ = i;
        return true;
      }
      mode_ = Mode::kPlainContent;
      return true;
    }
    case Mode::kPlainContent:
      emit_content(std::string_view(buf_).substr(pos_));
      pos_ = buf_.size();
      return false;
    case Mode::kContent: {
      const std::string_view marker = format_ == ToolCallFormat::kHermes ? kHermesOpen : kMistralCalls;
      const size_t k = buf_.find(marker, pos_);
      if (k != std::string::npos) {
        size_t end = k;
        while (end > pos_ && is_space(buf_[end - 1])) --end;  // spaces before a call are not content
        emit_content(std::string_view(buf_).substr(pos_, end - pos_));
        pos_ = k + marker.size();
        mode_ = format_ == ToolCallFormat::kHermes ? Mode::kBeforeObject : Mode::kArrayOpen;
        return true;
      }
      // Hold back what could begin the marker, and trailing spaces (at the
      // end of output that was cut off, they are dropped).
      size_t end = buf_.size();
      if (!at_end || cut_off_) {
        for (size_t len = std::min(marker.size() - 1, buf_.size() - pos_); len > 0; --len) {
          if (buf_.compare(buf_.size() - len, len, marker.data(), len) == 0) {
            end -= len;
            break;
          }
        }
        while (end > pos_ && is_space(buf_[end - 1])) --end;
      }
      emit_content(std::string_view(buf_).substr(pos_, end - pos_));
      pos_ = end;
      return false;
    }
    case Mode::kArrayOpen:
      // Either Mistral form may follow the marker, whichever the template shows.
      if (is_space(c)) {
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        mode_ = Mode::kBeforeObject;
      } else if (is_tool_name_char(c)) {
        begin_call(false);
        mode_ = Mode::kName;
      } else {
        mode_ = Mode::kContent;
      }
      return true;
    case Mode::kBeforeObject:
      if (is_space(c)) {
        ++pos_;
      } else if (c == '{') {
        begin_call(format_ == ToolCallFormat::kLlama3Json);
        mode_ = Mode::kObject;
      } else {
        mode_ = format_ == ToolCallFormat::kLlama3Json ? Mode::kPlainContent : Mode::kContent;
      }
      return true;
    case Mode::kObject:
      if (step_object(c)) ++pos_;
      return true;
    case Mode::kArrayNext:
      if (is_space(c)) {
        ++pos_;
      } else if (c == ',') {
        ++pos_;
        mode_ = Mode::kBeforeObject;
      } else if (c == ']') {
        ++pos_;
        mode_ = Mode::kAfterCall;
      } else {
        mode_ = Mode::kContent;
      }
      return true;
    case Mode::kLlamaNext:
      if (is_space(c) || c == ';') {
        ++pos_;
      } else if (c == '{') {
        begin_call(true);
        mode_ = Mode::kObject;
      } else {
        mode_ = Mode::kPlainContent;
      }
      return true;
    case Mode::kCloseTag:
      if (is_space(c)) {
        ++pos_;
        return true;
      }
      if (at_marker(kHermesClose, &partial)) {
        pos_ += kHermesClose.size();
        mode_ = Mode::kAfterCall;
        return true;
      }
      if (partial) return false;
      mode_ = Mode::kContent;
      return true;
    case Mode::kAfterCall:
      if (is_space(c)) {
        ++pos_;
      } else {
        mode_ = Mode::kContent;
      }
      return true;
    case Mode::kName:
    case Mode::kCallId: {
      if (at_marker(kMistralArgs, &partial)) {
        pos_ += kMistralArgs.size();
        if (name_.empty()) {
          abandon_call();
          return true;
        }
        emit_header();
        mode_ = Mode::kArgs;
        return true;
      }
      if (partial) return false;
      if (mode_ == Mode::kName && at_marker(kMistralCallId, &partial)) {
        pos_ += kMistralCallId.size();
        mode_ = Mode::kCallId;
        return true;
      }
      if (partial) return false;
      if (!is_tool_name_char(c)) {
        abandon_call();
        return true;
      }
      (mode_ == Mode::kName ? name_ : id_).push_back(c);
      ++pos_;
      return true;
    }
    case Mode::kArgs: {
      if (scanner_.kind() == 0 && is_space(c)) {
        ++pos_;
        return true;
      }
      JsonValueScanner::Step s = scanner_.feed(c);
      if (s == JsonValueScanner::Step::kError) {
        end_call(false);
        mode_ = Mode::kContent;
        return true;
      }
      if (s != JsonValueScanner::Step::kEndBefore) {
        emit_arguments(std::string_view(&c, 1));
        ++pos_;
      }
      if (s != JsonValueScanner::Step::kMore) {
        end_call(true);
        mode_ = Mode::kAfterCall;
      }
      return true;
    }
  }
  return false;
}

// One byte of a call object {"name": ..., "arguments": ..., ...}. Returns
// whether the byte was consumed (false: it is read again in the new mode).
bool ToolCallParser::step_object(char c) {
  auto fail = [&]() {
    if (header_sent_) {
      end_call(false);
      mode_ = format_ == ToolCallFormat::kLlama3Json ? Mode::kPlainContent : Mode::kContent;
    } else {
      abandon_call();
    }
    return false;
  };
  switch (obj_) {
    case Obj::kOpen:
      if (c != '{') return fail();
      obj_ = Obj::kKeyOrEnd;
      return true;
    case Obj::kKeyOrEnd:
    case Obj::kKeyAfterComma:
      if (is_space(c)) return true;
      if (c == '"') {
        key_raw_ = "\"";
        key_escape_ = false;
        obj_ = Obj::kKey;
        return true;
      }
      if (c == '}' && obj_ == Obj::kKeyOrEnd) break;  // the object ends
      return fail();
    case Obj::kKey: {
      key_raw_.push_back(c);
      if (key_escape_) {
        key_escape_ = false;
        return true;
      }
      if (c == '\\') key_escape_ = true;
      if (c != '"') return true;
      if (!decode_json_string(key_raw_, &key_)) return fail();
      ++n_keys_;
      // A bare JSON reply is a Llama call only if it starts like one.
      if (tentative_ && n_keys_ == 1 && key_ != "name" && key_ != "type") return fail();
      obj_ = Obj::kColon;
      return true;
    }
    case Obj::kColon:
      if (is_space(c)) return true;
      if (c != ':') return fail();
      obj_ = Obj::kValueStart;
      return true;
    case Obj::kValueStart:
      if (is_space(c)) return true;
      scanner_ = JsonValueScanner();
      value_raw_.clear();
      obj_ = Obj::kValue;
      [[fallthrough]];
    case Obj::kValue: {
      JsonValueScanner::Step s = scanner_.feed(c);
      if (s == JsonValueScanner::Step::kError) return fail();
      if (s == JsonValueScanner::Step::kEndBefore) {
        obj_ = Obj::kCommaOrEnd;
        if (!value_done()) return fail();
        return step_object(c);
      }
      const bool streamed = (key_ == "arguments" || key_ == "parameters") && scanner_.kind() != '"';
      if (streamed) {
        emit_arguments(std::string_view(&c, 1));
      } else {
        value_raw_.push_back(c);
      }
      if (s == JsonValueScanner::Step::kEnd) {
        obj_ = Obj::kCommaOrEnd;
        if (!value_done()) return fail();
      }
      return true;
    }
    case Obj::kCommaOrEnd:
      if (is_space(c)) return true;
      if (c == ',') {
        obj_ = Obj::kKeyAfterComma;
        return true;
      }
      if (c != '}') return fail();
      break;  // the object ends
  }
  // The closing brace of the call object.
  if (!header_sent_) return fail();  // no name: not a call
  end_call(true);
  switch (format_) {
    case ToolCallFormat::kHermes: mode_ = Mode::kCloseTag; break;
    case ToolCallFormat::kMistralJsonArray:
    case ToolCallFormat::kMistralArgs: mode_ = Mode::kArrayNext; break;  // objects come in the array form
    case ToolCallFormat::kLlama3Json: mode_ = Mode::kLlamaNext; break;
  }
  return true;
}

// A value of the call object is complete; false when it makes the object no call.
bool ToolCallParser::value_done() {
  if (key_ == "arguments" || key_ == "parameters") args_done_ = true;
  if (key_ == "name") {
    if (header_sent_ || !decode_json_string(value_raw_, &name_) || name_.empty()) return false;
    emit_header();
  } else if ((key_ == "arguments" || key_ == "parameters") && scanner_.kind() == '"') {
    // Arguments written as a JSON string holding the JSON text.
    std::string text;
    if (!decode_json_string(value_raw_, &text)) return false;
    emit_arguments(text);
  }
  return true;
}

void ToolCallParser::emit_content(std::string_view text) {
  if (text.empty()) return;
  out_.content.append(text);
  result_.content.append(text);
}

void ToolCallParser::begin_call(bool tentative) {
  in_call_ = true;
  tentative_ = tentative;
  call_start_ = pos_;
  obj_ = Obj::kOpen;
  n_keys_ = 0;
  key_.clear();
  name_.clear();
  id_.clear();
  header_sent_ = false;
  args_seen_ = false;
  args_done_ = false;
  pending_args_.clear();
  scanner_ = JsonValueScanner();
}

void ToolCallParser::emit_header() {
  header_sent_ = true;
  const std::string id = id_.empty() ? make_id() : id_;
  out_.tool_calls.push_back({index_, id, name_, ""});
  result_.tool_calls.push_back({id, name_, ""});
  if (!pending_args_.empty()) emit_arguments(std::exchange(pending_args_, {}));
}

void ToolCallParser::emit_arguments(std::string_view text) {
  args_seen_ = true;
  if (!header_sent_) {
    pending_args_.append(text);
    return;
  }
  if (!out_.tool_calls.empty() && out_.tool_calls.back().index == index_ &&
      out_.tool_calls.back().id.empty()) {
    out_.tool_calls.back().arguments.append(text);
  } else {
    out_.tool_calls.push_back({index_, "", "", std::string(text)});
  }
  result_.tool_calls.back().arguments.append(text);
}

void ToolCallParser::end_call(bool complete) {
  if (complete && !args_seen_) emit_arguments("{}");
  in_call_ = false;
  ++index_;
}

void ToolCallParser::abandon_call() {
  in_call_ = false;
  pos_ = call_start_;
  mode_ = format_ == ToolCallFormat::kLlama3Json ? Mode::kPlainContent : Mode::kContent;
}

std::string ToolCallParser::make_id() {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = is_mistral(format_) ? "" : "call_";
  const int n = is_mistral(format_) ? 9 : 24;
  for (int i = 0; i < n; ++i) id.push_back(kAlnum[rng_() % (sizeof(kAlnum) - 1)]);
  return id;
}

ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text, uint64_t id_seed) {
  ToolCallParser parser(format, id_seed);
  parser.push(text);
  parser.finish();
  return parser.result();
}

}  // namespace ladder::grammar
