// What the filter files share: the registry's shape and the argument and
// attribute helpers that jinja2's filters use (make_attrgetter & co).
#pragma once

#include <functional>
#include <map>
#include <string>

#include "common/status.h"
#include "jinja/value.h"

namespace ladder::jinja {

using FilterFn = Result<Value> (*)(const Value&, const CallArgs&);
using FilterTable = std::map<std::string, FilterFn, std::less<>>;

// The filters over sequences and mappings (sequence_filters.cc).
void add_sequence_filters(FilterTable& table);

inline bool arg_bool(const CallArgs& args, size_t index, const char* name, bool fallback) {
  const Value* v = args.get(index, name);
  return v ? v->truthy() : fallback;
}

// A dotted attribute path ("a.b", "0") walked as jinja2's make_attrgetter
// does: item lookup per part, digit parts as integers.
Result<Value> attr_path(const Value& item, const Value& attribute);

// Python's hash() refuses lists, dicts and what holds them.
bool is_hashable(const Value& v);

}  // namespace ladder::jinja
