// jinja2's filters and tests, Python's str/dict/list methods, and attribute /
// item access with the semantics of jinja2's ImmutableSandboxedEnvironment
// (methods that mutate a list or dict are refused, as Hugging Face renders).
// Errors come back without a line; the interpreter adds it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "jinja/value.h"

namespace ladder::jinja {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);
// Every filter / test / method of a str, dict or list value the interpreter
// implements (the differential tests walk them all).
std::vector<std::string> filter_names();
std::vector<std::string> test_names();
std::vector<std::string> method_names(Kind kind);

Result<Value> apply_filter(std::string_view name, const Value& input, const CallArgs& args);
Result<bool> apply_test(std::string_view name, const Value& input, const CallArgs& args);

// `obj.name`: a method, a dict key, a namespace attribute; Undefined when
// missing (an error only for attribute access on an Undefined).
Result<Value> get_attribute(const Value& obj, const std::string& name);
// Python's getattr(obj, name) in the sandbox: methods and namespace
// attributes, never dict keys (the `attr` filter).
Result<Value> get_python_attribute(const Value& obj, const std::string& name);
// `obj[key]`: index (negative from the end), dict key, then attribute.
Result<Value> get_item(const Value& obj, const Value& key);
// `obj[start:stop:step]` on lists, tuples and strings (null = omitted).
Result<Value> get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step);

}  // namespace ladder::jinja
