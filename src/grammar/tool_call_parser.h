// ToolCallParser: model output text -> OpenAI tool calls plus the remaining
// content, incrementally. push() takes the text as it is generated and
// returns what can be said for sure so far, as OpenAI streams it:
//
//   content            text that is certainly not part of a call (markers,
//                      and the whitespace around calls, are never content;
//                      a suffix that could begin a marker is held back)
//   tool_calls deltas  per call: first {index, id, name} once the name is
//                      known, then argument fragments whose concatenation is
//                      the call's `arguments` (the JSON text the model wrote
//                      for them; "{}" when a complete call had none)
//
// finish() releases what was held back. parse_tool_calls() is push(all) +
// finish(), so a stream split anywhere gives the same result as the whole.
// A call still open at the end counts when its name and its whole arguments
// value were written (only closing syntax is missing); otherwise it is not a
// call: result() leaves it out (a stream has sent its fragments, which end
// with finish_reason "length"), and the text of one whose name was not yet
// known is dropped, never content.
// finish(cut_off = true), for output cut by max_tokens, also drops a marker
// left half written at the end.
// A call whose JSON turns out malformed before its name is known is not a
// call: its text becomes content. Llama 3 calls count only as the whole reply
// (an object whose first key is "name" or "type"); other JSON is content.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/json_value_scanner.h"
#include "grammar/tool_call_format.h"

namespace ladder::grammar {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct ToolCallDelta {
  int32_t index = 0;
  std::string id;         // set in a call's first delta only
  std::string name;       // set in a call's first delta only
  std::string arguments;  // a fragment (empty in the first delta)
};

struct ToolCallStreamDelta {
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && tool_calls.empty(); }
};

struct ParsedToolCalls {
  std::string content;
  std::vector<ToolCall> tool_calls;
};

class ToolCallParser {
 public:
  // id_seed seeds the call ids ("call_" + 24 alphanumerics; 9 alphanumerics
  // for the Mistral formats, whose templates require that shape).
  ToolCallParser(ToolCallFormat format, uint64_t id_seed);

  ToolCallStreamDelta push(std::string_view text);
  ToolCallStreamDelta finish(bool cut_off = false);

  // Everything returned so far, assembled.
  const ParsedToolCalls& result() const { return result_; }

 private:
  enum class Mode {
    kStart,         // Llama: before the first non-space byte
    kContent,       // text, looking for the opening marker
    kPlainContent,  // Llama: text that holds no call, to the end
    kArrayOpen,     // Mistral, after [TOOL_CALLS]: spaces, then '[' (a JSON array) or a name
    kBeforeObject,  // spaces, then a call object's '{'
    kObject,        // inside a call object
    kArrayNext,     // Mistral array: ',' or ']'
    kLlamaNext,     // Llama: ';' and spaces, then another '{' or text
    kCloseTag,      // Hermes: spaces, then </tool_call>
    kAfterCall,     // spaces after a call, then content
    kName,          // Mistral args: the name, up to [CALL_ID] or [ARGS]
    kCallId,        // Mistral args: the id, up to [ARGS]
    kArgs,          // Mistral args: spaces, then the arguments value
  };
  enum class Obj { kOpen, kKeyOrEnd, kKey, kColon, kValueStart, kValue, kCommaOrEnd, kKeyAfterComma };

  // Runs the state machine over buf_ from pos_; at_end: no more text comes.
  void run(bool at_end);
  bool step(bool at_end);  // one move; false when it must wait for more text
  bool step_object(char c);
  // buf_ at pos_ starts with `marker` (true), might once more text comes
  // (*partial), or does not.
  bool at_marker(std::string_view marker, bool* partial) const;

  void emit_content(std::string_view text);
  void begin_call(bool tentative);
  void emit_header();
  void emit_arguments(std::string_view text);
  void end_call(bool complete);
  // The current call is not a call after all: its text becomes content.
  void abandon_call();
  bool value_done();
  std::string make_id();

  ToolCallFormat format_;
  std::mt19937_64 rng_;
  std::string buf_;
  size_t pos_ = 0;
  Mode mode_;
  ToolCallStreamDelta out_;  // what this push returns
  ParsedToolCalls result_;
  int32_t index_ = 0;
  bool cut_off_ = false;  // finish(true): the output was cut off

  // The call being read.
  bool in_call_ = false;
  bool tentative_ = false;
  size_t call_start_ = 0;  // where its text begins in buf_ (kept until its name is known)
  Obj obj_ = Obj::kOpen;
  int n_keys_ = 0;
  std::string key_raw_;
  bool key_escape_ = false;
  std::string key_;
  JsonValueScanner scanner_;
  std::string value_raw_;
  std::string name_;
  std::string id_;
  bool header_sent_ = false;
  bool args_seen_ = false;
  bool args_done_ = false;  // its arguments value is complete
  std::string pending_args_;  // arguments read before the name
};

ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text, uint64_t id_seed);

}  // namespace ladder::grammar
