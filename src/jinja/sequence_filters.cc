// jinja2's filters over sequences and mappings. map, select, reject,
// selectattr, rejectattr, unique, batch and items are generators in jinja2:
// they fail only when their result is consumed, after the items made before
// the failure, and map / select / reject / selectattr / rejectattr yield
// nothing at all for a false input (none, 0, "", [], undefined).
#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/filter_support.h"
#include "jinja/operations.h"
#include "jinja/string_util.h"
#include "jinja/text_ops.h"

namespace ladder::jinja {
namespace {

// The result of a generator filter: `fill` appends the items and returns the
// first error, which the generator raises when consumed.
template <typename Fill>
Value generator(Fill&& fill) {
  List out;
  Status s = fill(out);
  return Value::iterator(std::move(out), std::move(s));
}

// jinja2's ignore_case: strings folded to lower case for comparing.
Value fold(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py_lower(v.as_string()));
  return v;
}

// make_multi_attrgetter: the sort key of an item is the list of its
// comma-separated attributes (the item itself when none is given), so keys
// compare as Python lists do (equal elements first, then `<`).
Result<Value> multi_key(const Value& item, const Value* attribute, bool case_sensitive) {
  List key;
  if (!attribute || attribute->is_none()) {
    key.push_back(fold(item, case_sensitive));
  } else if (!attribute->is_string()) {
    LADDER_ASSIGN_OR_RETURN(Value a, attr_path(item, *attribute));
    key.push_back(fold(a, case_sensitive));
  } else {
    const std::string& path = attribute->as_string();
    size_t start = 0;
    while (true) {
      size_t comma = path.find(',', start);
      LADDER_ASSIGN_OR_RETURN(Value a, attr_path(item, Value(path.substr(start, comma - start))));
      key.push_back(fold(a, case_sensitive));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return Value::list(std::move(key));
}

Status sort_values(List& items, bool reverse, const std::function<Result<Value>(const Value&)>& key) {
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& v : items) {
    LADDER_ASSIGN_OR_RETURN(Value k, key(v));
    keyed.emplace_back(std::move(k), v);
  }
  Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    if (!error.is_ok()) return false;
    Result<bool> lt = reverse ? less_than(b.first, a.first) : less_than(a.first, b.first);
    if (!lt.is_ok()) {
      error = lt.status();
      return false;
    }
    return *lt;
  });
  LADDER_RETURN_IF_ERROR(error);
  for (size_t i = 0; i < items.size(); ++i) items[i] = keyed[i].second;
  return Status::ok();
}

Result<Value> f_items(const Value& v, const CallArgs&) {
  return generator([&](List& out) -> Status {
    if (v.is_undefined()) return Status::ok();
    if (!v.is_dict()) return invalid_argument("Can only get item pairs from a mapping.");
    for (const auto& [k, val] : v.mapping().entries) out.push_back(Value::tuple({k, val}));
    return Status::ok();
  });
}

Result<Value> f_dictsort(const Value& v, const CallArgs& args) {
  if (!v.is_dict()) return invalid_argument("dictsort: expected a mapping, got " + type_name(v));
  bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
  const Value* by = args.get(1, "by");
  int pos = 0;
  if (by && by->is_string()) {
    if (by->as_string() == "value") pos = 1;
    else if (by->as_string() != "key") return invalid_argument("You can only sort by either \"key\" or \"value\"");
  }
  bool reverse = arg_bool(args, 2, "reverse", false);
  List items;
  for (const auto& [k, val] : v.mapping().entries) items.push_back(Value::tuple({k, val}));
  LADDER_RETURN_IF_ERROR(sort_values(items, reverse, [&](const Value& t) -> Result<Value> {
    return fold(t.items()[static_cast<size_t>(pos)], case_sensitive);
  }));
  return Value::list(std::move(items));
}

Result<Value> f_join(const Value& v, const CallArgs& args) {
  const Value* sep = args.get(0, "d");
  const Value* attribute = args.get(1, "attribute");
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  const Text separator = sep ? sep->to_text() : Text();
  TextBuilder out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (out.size() > kMaxBuiltStringBytes) {
      return out_of_range("join: result would exceed " + std::to_string(kMaxBuiltStringBytes) + " bytes");
    }
    if (i) out.append(separator);
    if (attribute && !attribute->is_none()) {
      LADDER_ASSIGN_OR_RETURN(Value a, attr_path(items[i], *attribute));
      a.append_to(out);
    } else {
      items[i].append_to(out);
    }
  }
  return Value(out.take());
}

// next(iter(seq)): a generator gives its first item even if it fails later.
Result<Value> f_first(const Value& v, const CallArgs&) {
  if (v.is_iterator() && !v.items().empty()) return v.items().front();
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  if (items.empty()) return Value::undefined("first", "No first item, sequence was empty.");
  return items.front();
}

// next(iter(reversed(seq))): a generator cannot be reversed.
Result<Value> f_last(const Value& v, const CallArgs&) {
  if (v.is_iterator()) return invalid_argument("'generator' object is not reversible");
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  if (items.empty()) return Value::undefined("last", "No last item, sequence was empty.");
  return items.back();
}

Result<Value> f_list(const Value& v, const CallArgs&) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  return Value::list(std::move(items));
}

Result<Value> f_map(const Value& v, const CallArgs& args) {
  return generator([&](List& out) -> Status {
    if (!v.truthy()) return Status::ok();
    if (args.positional.empty()) {
      const Value* attribute = args.get(99, "attribute");
      if (!attribute) return invalid_argument("map requires a filter argument");
      const Value* def = args.get(99, "default");
      for (const auto& [k, _] : args.keyword) {
        if (k != "attribute" && k != "default") return invalid_argument("Unexpected keyword argument '" + k + "'");
      }
      LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
      for (const Value& item : items) {
        LADDER_ASSIGN_OR_RETURN(Value a, attr_path(item, *attribute));
        out.push_back(a.is_undefined() && def && !def->is_none() ? *def : a);
      }
      return Status::ok();
    }
    std::string filter = args.positional[0].str();
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
    for (const Value& item : items) {
      LADDER_ASSIGN_OR_RETURN(Value r, apply_filter(filter, item, rest));
      out.push_back(std::move(r));
    }
    return Status::ok();
  });
}

// select / reject / selectattr / rejectattr share one walk.
Result<Value> select_common(const Value& v, const CallArgs& args, bool by_attr, bool keep_when) {
  return generator([&](List& out) -> Status {
    if (!v.truthy()) return Status::ok();
    size_t at = 0;
    const Value* attribute = nullptr;
    if (by_attr) {
      if (args.positional.empty()) return invalid_argument("Missing parameter for attribute name");
      attribute = &args.positional[at++];
    }
    std::string test;
    if (at < args.positional.size()) test = args.positional[at++].str();
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(at), args.positional.end());
    rest.keyword = args.keyword;
    LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
    for (const Value& item : items) {
      Value subject = item;
      if (attribute) {
        LADDER_ASSIGN_OR_RETURN(subject, attr_path(item, *attribute));
      }
      bool pass;
      if (test.empty()) {
        pass = subject.truthy();
      } else {
        LADDER_ASSIGN_OR_RETURN(pass, apply_test(test, subject, rest));
      }
      if (pass == keep_when) out.push_back(item);
    }
    return Status::ok();
  });
}

Result<Value> f_select(const Value& v, const CallArgs& a) { return select_common(v, a, false, true); }
Result<Value> f_reject(const Value& v, const CallArgs& a) { return select_common(v, a, false, false); }
Result<Value> f_selectattr(const Value& v, const CallArgs& a) { return select_common(v, a, true, true); }
Result<Value> f_rejectattr(const Value& v, const CallArgs& a) { return select_common(v, a, true, false); }

Result<Value> f_unique(const Value& v, const CallArgs& args) {
  return generator([&](List& out) -> Status {
    bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
    const Value* attribute = args.get(1, "attribute");
    LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
    List seen;
    for (const Value& item : items) {
      Value key = item;
      if (attribute && !attribute->is_none()) {
        LADDER_ASSIGN_OR_RETURN(key, attr_path(item, *attribute));
      }
      key = fold(key, case_sensitive);
      if (!is_hashable(key)) return invalid_argument("unhashable type: '" + type_name(key) + "'");
      bool dup = false;
      for (const Value& s : seen) dup = dup || s.equals(key);
      if (dup) continue;
      seen.push_back(key);
      out.push_back(item);
    }
    return Status::ok();
  });
}

Result<Value> f_sort(const Value& v, const CallArgs& args) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  bool reverse = arg_bool(args, 0, "reverse", false);
  bool case_sensitive = arg_bool(args, 1, "case_sensitive", false);
  const Value* attribute = args.get(2, "attribute");
  LADDER_RETURN_IF_ERROR(sort_values(
      items, reverse, [&](const Value& item) { return multi_key(item, attribute, case_sensitive); }));
  return Value::list(std::move(items));
}

Result<Value> min_max(const Value& v, const CallArgs& args, bool want_max) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  if (items.empty()) return Value::undefined("", std::string("No aggregated item, sequence was empty."));
  bool case_sensitive = arg_bool(args, 0, "case_sensitive", false);
  const Value* attribute = args.get(1, "attribute");
  Value best = items[0];
  Value best_key;
  for (size_t i = 0; i < items.size(); ++i) {
    Value k = items[i];
    if (attribute && !attribute->is_none()) {
      LADDER_ASSIGN_OR_RETURN(k, attr_path(items[i], *attribute));
    }
    k = fold(k, case_sensitive);
    if (i == 0) {
      best_key = k;
      continue;
    }
    LADDER_ASSIGN_OR_RETURN(bool better, want_max ? less_than(best_key, k) : less_than(k, best_key));
    if (better) {
      best = items[i];
      best_key = k;
    }
  }
  return best;
}

Result<Value> f_min(const Value& v, const CallArgs& a) { return min_max(v, a, false); }
Result<Value> f_max(const Value& v, const CallArgs& a) { return min_max(v, a, true); }

Result<Value> f_sum(const Value& v, const CallArgs& args) {
  LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
  const Value* attribute = args.get(0, "attribute");
  const Value* start = args.get(1, "start");
  if (start && start->is_string()) return invalid_argument("sum() can't sum strings [use ''.join(seq) instead]");
  Value total = start ? *start : Value(int64_t{0});
  for (const Value& item : items) {
    Value x = item;
    if (attribute && !attribute->is_none()) {
      LADDER_ASSIGN_OR_RETURN(x, attr_path(item, *attribute));
    }
    LADDER_ASSIGN_OR_RETURN(total, binary_op("+", total, x));
  }
  return total;
}

// A string reversed; a sequence or mapping as a reversed iterator; anything
// else iterable (a generator) as a reversed list.
Result<Value> f_reverse(const Value& v, const CallArgs&) {
  if (v.is_string()) {
    std::vector<Text> chars = text_chars(v.as_text());
    TextBuilder out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out.append(*it);
    return Value(out.take());
  }
  Result<List> items = iterate(v);
  if (!items.is_ok()) {
    if (v.is_iterator()) return items.status();
    return invalid_argument("argument must be iterable");
  }
  std::reverse(items->begin(), items->end());
  if (v.is_iterator()) return Value::list(std::move(items).value());
  return Value::iterator(std::move(items).value());
}

Result<Value> f_batch(const Value& v, const CallArgs& args) {
  return generator([&](List& out) -> Status {
    const Value* size = args.get(0, "linecount");
    if (!size || !size->is_int() || size->as_int() <= 0) return invalid_argument("batch: linecount must be a positive int");
    const Value* fill = args.get(1, "fill_with");
    LADDER_ASSIGN_OR_RETURN(List items, iterate(v));
    List cur;
    for (const Value& item : items) {
      cur.push_back(item);
      if (static_cast<int64_t>(cur.size()) == size->as_int()) {
        out.push_back(Value::list(std::move(cur)));
        cur.clear();
      }
    }
    if (!cur.empty()) {
      if (fill && !fill->is_none()) {
        while (static_cast<int64_t>(cur.size()) < size->as_int()) cur.push_back(*fill);
      }
      out.push_back(Value::list(std::move(cur)));
    }
    return Status::ok();
  });
}

}  // namespace

Result<Value> attr_path(const Value& item, const Value& attribute) {
  if (!attribute.is_string()) return get_item(item, attribute);
  Value cur = item;
  const std::string& path = attribute.as_string();
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && part.size() < 19 && part.find_first_not_of("0123456789") == std::string::npos;
    Value key = digits ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part);
    if (cur.is_undefined()) return cur;
    LADDER_ASSIGN_OR_RETURN(cur, get_item(cur, key));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

bool is_hashable(const Value& v) {
  switch (v.kind()) {
    case Kind::kList:
    case Kind::kDict:
    case Kind::kDictView: return false;
    case Kind::kTuple:
      for (const Value& x : v.items()) {
        if (!is_hashable(x)) return false;
      }
      return true;
    default: return true;
  }
}

void add_sequence_filters(FilterTable& t) {
  t.insert({{"items", f_items},   {"dictsort", f_dictsort}, {"join", f_join},         {"first", f_first},
            {"last", f_last},     {"list", f_list},         {"map", f_map},           {"select", f_select},
            {"reject", f_reject}, {"selectattr", f_selectattr}, {"rejectattr", f_rejectattr},
            {"unique", f_unique}, {"sort", f_sort},         {"min", f_min},           {"max", f_max},
            {"sum", f_sum},       {"reverse", f_reverse},   {"batch", f_batch}});
}

}  // namespace ladder::jinja
