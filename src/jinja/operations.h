// Python semantics of the operators a template applies to Values: arithmetic,
// comparison, membership, iteration, and json.dumps for `tojson`.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "jinja/value.h"

namespace ladder::jinja {

// op: + - * / // % ** ~
Result<Value> binary_op(std::string_view op, const Value& a, const Value& b);
// op: == != < <= > >= in notin
Result<bool> compare_op(std::string_view op, const Value& a, const Value& b);
// Python's a < b for sortable values (numbers, strings, sequences); error otherwise.
Result<bool> less_than(const Value& a, const Value& b);
Result<bool> contains(const Value& container, const Value& item);
// What `for x in v` walks: list/tuple items, dict keys, string characters,
// nothing for Undefined. None, numbers, ... are not iterable (an error).
Result<List> iterate(const Value& v);
// len(v): strings in code points; Undefined is 0.
Result<int64_t> length_of(const Value& v);

struct JsonDumpOptions {
  // Python's indent=None when unset; a number of spaces or a literal string.
  bool has_indent = false;
  std::string indent;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // \uXXXX escapes (surrogate pairs) for non-ASCII
};
// json.dumps(v, ensure_ascii=False, ...), with the marks of the strings in v.
Result<Text> json_dumps(const Value& v, const JsonDumpOptions& options);

// Undefined's error, as a Status (for operations that jinja2's Undefined refuses).
Status undefined_error(const Value& v);

}  // namespace ladder::jinja
