#include "harness/trace_formats.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ladder::harness {

using nlohmann::json;

namespace {

// Calls fn(line_no, line) for each non-empty line (CR stripped).
template <typename Fn>
void for_each_line(const std::string& text, Fn&& fn) {
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    std::string_view line(text.data() + pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) fn(line_no, line);
    pos = end + 1;
  }
}

std::vector<std::string_view> split_csv(std::string_view line) {
  // The trace CSVs have no quoted fields; a quote is reported as malformed
  // by the field parsers rather than half-understood here.
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t comma = line.find(',', pos);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(pos));
      break;
    }
    out.push_back(line.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, int64_t& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_double(std::string_view s, double& out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out);
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// "2023-11-16 18:17:03.9799600" -> seconds since the epoch.
bool parse_wall_clock(std::string_view s, double& out) {
  s = trim(s);
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' ||
      s[16] != ':') {
    return false;
  }
  int64_t y, mo, d, h, mi;
  double sec;
  if (!parse_int(s.substr(0, 4), y) || !parse_int(s.substr(5, 2), mo) || !parse_int(s.substr(8, 2), d) ||
      !parse_int(s.substr(11, 2), h) || !parse_int(s.substr(14, 2), mi) || !parse_double(s.substr(17), sec)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61) return false;
  out = static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d))) * 86400.0 +
        static_cast<double>(h * 3600 + mi * 60) + sec;
  return true;
}

// Shared by the parsers: record a bad line or, when strict, stop.
struct LineSink {
  bool strict;
  ParsedTrace trace;
  std::optional<Status> error;

  void bad(int line, const std::string& msg) {
    if (error) return;
    if (strict) {
      error = invalid_argument(fmt::format("line {}: {}", line, msg));
    } else {
      trace.skipped.push_back({line, msg});
    }
  }
  Result<ParsedTrace> finish() {
    if (error) return *error;
    // Times relative to the first row (earliest), as all formats are replayed from 0.
    if (!trace.rows.empty()) {
      double t0 = std::numeric_limits<double>::infinity();
      for (const auto& r : trace.rows) t0 = std::min(t0, r.t_s);
      for (auto& r : trace.rows) r.t_s -= t0;
    }
    return std::move(trace);
  }
};

// Header -> column index for the named columns; false when one is missing.
bool map_header(std::string_view header, const std::vector<std::string>& names, std::vector<size_t>& idx) {
  auto cols = split_csv(header);
  idx.assign(names.size(), SIZE_MAX);
  for (size_t c = 0; c < cols.size(); ++c) {
    for (size_t n = 0; n < names.size(); ++n) {
      if (trim(cols[c]) == names[n]) idx[n] = c;
    }
  }
  return std::none_of(idx.begin(), idx.end(), [](size_t i) { return i == SIZE_MAX; });
}

}  // namespace

Result<ParsedTrace> parse_mooncake(const std::string& text, bool strict) {
  LineSink sink{strict, {}, {}};
  for_each_line(text, [&](int line_no, std::string_view line) {
    json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return sink.bad(line_no, "not a JSON object");
    for (const char* k : {"timestamp", "input_length", "output_length"}) {
      if (!j.contains(k) || !j[k].is_number()) return sink.bad(line_no, fmt::format("'{}' missing or not a number", k));
    }
    TraceRow row;
    row.line = line_no;
    row.t_s = j["timestamp"].get<double>() / 1000.0;
    row.input_tokens = j["input_length"].get<int64_t>();
    row.output_tokens = j["output_length"].get<int64_t>();
    if (row.t_s < 0 || row.input_tokens < 1 || row.output_tokens < 0) {
      return sink.bad(line_no, "negative timestamp or length, or empty input");
    }
    if (j.contains("hash_ids")) {
      if (!j["hash_ids"].is_array()) return sink.bad(line_no, "'hash_ids' is not an array");
      for (const auto& h : j["hash_ids"]) {
        if (!h.is_number_integer()) return sink.bad(line_no, "'hash_ids' holds a non-integer");
        row.hash_ids.push_back(h.get<int64_t>());
      }
    }
    sink.trace.rows.push_back(std::move(row));
  });
  return sink.finish();
}

Result<ParsedTrace> parse_azure_csv(const std::string& text, bool strict) {
  LineSink sink{strict, {}, {}};
  std::vector<size_t> idx;
  bool have_header = false;
  for_each_line(text, [&](int line_no, std::string_view line) {
    if (!have_header) {
      have_header = true;
      if (!map_header(line, {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, idx)) {
        sink.error = invalid_argument("Azure trace header must name TIMESTAMP, ContextTokens, GeneratedTokens");
      }
      return;
    }
    auto cols = split_csv(line);
    if (cols.size() <= *std::max_element(idx.begin(), idx.end())) return sink.bad(line_no, "too few columns");
    TraceRow row;
    row.line = line_no;
    if (!parse_wall_clock(cols[idx[0]], row.t_s)) return sink.bad(line_no, "TIMESTAMP is not YYYY-MM-DD HH:MM:SS[.f]");
    if (!parse_int(cols[idx[1]], row.input_tokens) || row.input_tokens < 1) {
      return sink.bad(line_no, "ContextTokens is not a positive integer");
    }
    if (!parse_int(cols[idx[2]], row.output_tokens) || row.output_tokens < 0) {
      return sink.bad(line_no, "GeneratedTokens is not a non-negative integer");
    }
    sink.trace.rows.push_back(std::move(row));
  });
  if (!have_header && !sink.error) sink.error = invalid_argument("Azure trace is empty");
  return sink.finish();
}

Result<ParsedTrace> parse_burstgpt_csv(const std::string& text, bool strict) {
  LineSink sink{strict, {}, {}};
  std::vector<size_t> idx;
  bool have_header = false;
  for_each_line(text, [&](int line_no, std::string_view line) {
    if (!have_header) {
      have_header = true;
      if (!map_header(line, {"Timestamp", "Model", "Request tokens", "Response tokens"}, idx)) {
        sink.error = invalid_argument("BurstGPT header must name Timestamp, Model, Request tokens, Response tokens");
      }
      return;
    }
    auto cols = split_csv(line);
    if (cols.size() <= *std::max_element(idx.begin(), idx.end())) return sink.bad(line_no, "too few columns");
    TraceRow row;
    row.line = line_no;
    if (!parse_double(cols[idx[0]], row.t_s) || row.t_s < 0) return sink.bad(line_no, "Timestamp is not a number >= 0");
    row.model = std::string(trim(cols[idx[1]]));
    if (!parse_int(cols[idx[2]], row.input_tokens) || row.input_tokens < 1) {
      return sink.bad(line_no, "Request tokens is not a positive integer");
    }
    if (!parse_int(cols[idx[3]], row.output_tokens) || row.output_tokens < 0) {
      return sink.bad(line_no, "Response tokens is not a non-negative integer");
    }
    sink.trace.rows.push_back(std::move(row));
  });
  if (!have_header && !sink.error) sink.error = invalid_argument("BurstGPT trace is empty");
  return sink.finish();
}

namespace {

int64_t scale_len(int64_t n, double f) { return std::max<int64_t>(1, std::llround(static_cast<double>(n) * f)); }

}  // namespace

std::vector<WorkloadRequest> trace_to_requests(const ParsedTrace& trace, const std::string& format,
                                               const TraceConversion& conv, const TextSynthesizer& synth,
                                               std::vector<std::string>& notes) {
  std::vector<WorkloadRequest> out;
  out.reserve(trace.rows.size());
  int64_t capped_in = 0, capped_out = 0, zero_out = 0;
  for (const auto& row : trace.rows) {
    WorkloadRequest r;
    r.t = row.t_s;
    r.slice = conv.slice.empty() ? format : conv.slice;
    if (!row.model.empty()) r.tenant = row.model;
    r.input_tokens = scale_len(row.input_tokens, conv.length_scale);
    if (conv.max_input_tokens > 0 && r.input_tokens > conv.max_input_tokens) {
      r.input_tokens = conv.max_input_tokens;
      ++capped_in;
    }
    if (row.output_tokens == 0) ++zero_out;
    int64_t out_tokens = scale_len(std::max<int64_t>(row.output_tokens, 1), conv.length_scale);
    if (conv.max_output_tokens > 0 && out_tokens > conv.max_output_tokens) {
      out_tokens = conv.max_output_tokens;
      ++capped_out;
    }
    r.max_tokens = static_cast<int>(std::min<int64_t>(out_tokens, std::numeric_limits<int>::max()));
    r.hash_ids = row.hash_ids;
    r.source_line = row.line;
    out.push_back(std::move(r));
  }
  if (conv.length_scale != 1.0) {
    notes.push_back(fmt::format("length scale {}: input and output lengths (and the {}-token hash block) multiplied by {}",
                                conv.length_scale, conv.block_tokens, conv.length_scale));
  }
  if (capped_in > 0) {
    notes.push_back(fmt::format("{} of {} requests had their input capped at {} tokens", capped_in, out.size(),
                                conv.max_input_tokens));
  }
  if (capped_out > 0) {
    notes.push_back(fmt::format("{} of {} requests had their output capped at {} tokens", capped_out, out.size(),
                                conv.max_output_tokens));
  }
  if (zero_out > 0) notes.push_back(fmt::format("{} rows with 0 output tokens are sent with 1", zero_out));
  notes.push_back(fmt::format("prompts synthesized from real text at {} characters per token", synth.chars_per_token()));
  const int64_t block = scale_len(conv.block_tokens, conv.length_scale);
  synthesize_prompts(out, block, synth);
  return out;
}

void synthesize_prompts(std::vector<WorkloadRequest>& requests, int64_t block_tokens, const TextSynthesizer& synth) {
  for (size_t i = 0; i < requests.size(); ++i) {
    auto& r = requests[i];
    if (r.input_tokens < 0 || !r.prompt.empty() || r.is_chat()) continue;
    r.prompt = synth.for_blocks(r.hash_ids, block_tokens, r.input_tokens, 0x5eed0000ULL + i);
  }
}

std::string detect_workload_format(std::string_view head) {
  head = head.substr(0, 200);
  if (head.starts_with("TIMESTAMP,")) return "azure";
  if (head.find("Request tokens") != std::string_view::npos) return "burstgpt";
  if (head.find("\"input_length\"") != std::string_view::npos) return "mooncake";
  return "ladder";
}

Result<Workload> load_workload(const std::string& path, const LoadOptions& opts, const TextSynthesizer& synth) {
  LADDER_ASSIGN_OR_RETURN(std::string text, read_file(path));
  const std::string format =
      opts.format.empty() || opts.format == "auto" ? detect_workload_format(text) : opts.format;
  Workload w;
  if (format == "ladder") {
    LADDER_ASSIGN_OR_RETURN(w, parse_native_workload(text, opts.strict));
    int64_t capped = 0;
    const size_t cap_chars = synth.chars_for_tokens(opts.conv.max_input_tokens);
    for (auto& r : w.requests) {
      if (opts.conv.length_scale != 1.0) {
        r.max_tokens = static_cast<int>(scale_len(r.max_tokens, opts.conv.length_scale));
        if (r.input_tokens > 0) r.input_tokens = scale_len(r.input_tokens, opts.conv.length_scale);
      }
      if (opts.conv.max_output_tokens > 0 && r.max_tokens > opts.conv.max_output_tokens) {
        r.max_tokens = static_cast<int>(opts.conv.max_output_tokens);
      }
      if (opts.conv.max_input_tokens > 0) {
        if (r.input_tokens > opts.conv.max_input_tokens) {
          r.input_tokens = opts.conv.max_input_tokens;
          ++capped;
        } else if (r.prompt.size() > cap_chars) {
          r.prompt.resize(cap_chars);
          ++capped;
        }
      }
    }
    if (opts.conv.length_scale != 1.0) {
      w.notes.push_back(fmt::format("length scale {}: max_tokens and input_tokens multiplied", opts.conv.length_scale));
    }
    if (capped > 0) {
      w.notes.push_back(fmt::format("{} prompts cut to {} tokens (~{} characters); chat messages are never cut",
                                    capped, opts.conv.max_input_tokens, cap_chars));
    }
    if (opts.conv.max_output_tokens > 0) {
      w.notes.push_back(fmt::format("max_tokens capped at {}", opts.conv.max_output_tokens));
    }
    synthesize_prompts(w.requests, scale_len(opts.conv.block_tokens, opts.conv.length_scale), synth);
  } else {
    Result<ParsedTrace> parsed = format == "mooncake"   ? parse_mooncake(text, opts.strict)
                                 : format == "azure"    ? parse_azure_csv(text, opts.strict)
                                 : format == "burstgpt" ? parse_burstgpt_csv(text, opts.strict)
                                                        : Result<ParsedTrace>(invalid_argument(
                                                              "unknown format '" + format +
                                                              "' (ladder, mooncake, azure, burstgpt)"));
    if (!parsed.is_ok()) return parsed.status();
    w.skipped = parsed->skipped;
    w.requests = trace_to_requests(*parsed, format, opts.conv, synth, w.notes);
  }
  w.format = format;
  w.source = path;
  w.digest_sha256 = sha256_hex(text);
  if (!w.skipped.empty()) {
    w.notes.push_back(fmt::format("{} malformed lines skipped (first: line {}: {})", w.skipped.size(),
                                  w.skipped.front().line, w.skipped.front().message));
  }
  return w;
}

}  // namespace ladder::harness
