// jinja2's filters and tests, Python's str/dict/list methods, and attribute /
// item access with the semantics of jinja2's ImmutableSandboxedEnvironment
// (methods that mutate a list or dict are refused, as Hugging Face renders).
// Errors come back without a line; the interpreter adds it.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "tokenizer/chat/value.h"

namespace ladder::chat {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

Result<Value> apply_filter(std::string_view name, const Value& input, const CallArgs& args);
Result<bool> apply_test(std::string_view name, const Value& input, const CallArgs& args);

// `obj.name`: a method, a dict key, a namespace attribute; Undefined when
// missing (an error only for attribute access on an Undefined).
Result<Value> get_attribute(const Value& obj, const std::string& name);
// `obj[key]`: index (negative from the end), dict key, then attribute.
Result<Value> get_item(const Value& obj, const Value& key);
// `obj[start:stop:step]` on lists, tuples and strings (null = omitted).
Result<Value> get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step);

}  // namespace ladder::chat
