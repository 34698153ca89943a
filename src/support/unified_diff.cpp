#include "support/unified_diff.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace spgen {

namespace {

// Lines with their terminator, so that a missing final newline is a difference too.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

enum class Edit { Keep, Remove, Insert };

// Myers' O((N + M) D) shortest edit script, kept as one frontier per step D to walk back.
std::vector<Edit> edit_script(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const int64_t n = static_cast<int64_t>(a.size()), m = static_cast<int64_t>(b.size()), offset = n + m + 1;
  std::vector<int64_t> frontier(static_cast<size_t>(2 * offset + 1), 0);
  std::vector<std::vector<int64_t>> trace;
  int64_t steps = 0;
  for (int64_t d = 0; d <= n + m; ++d) {
    trace.push_back(frontier);
    bool done = false;
    for (int64_t k = -d; k <= d && !done; k += 2) {
      int64_t x = (k == -d || (k != d && frontier[static_cast<size_t>(offset + k - 1)] < frontier[static_cast<size_t>(offset + k + 1)]))
                      ? frontier[static_cast<size_t>(offset + k + 1)]
                      : frontier[static_cast<size_t>(offset + k - 1)] + 1;
      int64_t y = x - k;
      while (x < n && y < m && a[static_cast<size_t>(x)] == b[static_cast<size_t>(y)]) ++x, ++y;
      frontier[static_cast<size_t>(offset + k)] = x;
      done = x >= n && y >= m;
    }
    if (done) {
      steps = d;
      break;
    }
  }
  std::vector<Edit> script;
  int64_t x = n, y = m;
  for (int64_t d = steps; d > 0; --d) {
    const std::vector<int64_t>& before = trace[static_cast<size_t>(d)];
    const int64_t k = x - y;
    const bool down = k == -d || (k != d && before[static_cast<size_t>(offset + k - 1)] < before[static_cast<size_t>(offset + k + 1)]);
    const int64_t prev_k = down ? k + 1 : k - 1;
    const int64_t prev_x = before[static_cast<size_t>(offset + prev_k)], prev_y = prev_x - prev_k;
    while (x > prev_x && y > prev_y) script.push_back(Edit::Keep), --x, --y;
    script.push_back(down ? Edit::Insert : Edit::Remove);
    x = prev_x, y = prev_y;
  }
  while (x > 0 && y > 0) script.push_back(Edit::Keep), --x, --y;
  std::reverse(script.begin(), script.end());
  return script;
}

std::string line_out(char mark, const std::string& line) {
  std::string out = mark + line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
  return out;
}

std::string range(int64_t start, int64_t count) {
  // diff -u numbers lines from 1; an empty range names the line before it.
  std::string out = std::to_string(count == 0 ? start : start + 1);
  return count == 1 ? out : out + "," + std::to_string(count);
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_name,
                         const std::string& after_name, int context) {
  if (before == after) return "";
  const std::vector<std::string> a = lines_of(before), b = lines_of(after);
  const std::vector<Edit> script = edit_script(a, b);
  // Positions in a and b before each edit, to cut hunks.
  std::vector<int64_t> at_a(script.size() + 1), at_b(script.size() + 1);
  for (size_t e = 0; e < script.size(); ++e) {
    at_a[e + 1] = at_a[e] + (script[e] != Edit::Insert);
    at_b[e + 1] = at_b[e] + (script[e] != Edit::Remove);
  }
  std::string out = "--- " + before_name + "\n+++ " + after_name + "\n";
  size_t e = 0;
  while (e < script.size()) {
    while (e < script.size() && script[e] == Edit::Keep) ++e;
    if (e == script.size()) break;
    // A hunk: from `context` kept lines before the change to `context` after the last change
    // that lies within 2 * context kept lines of the previous one.
    size_t first = e >= static_cast<size_t>(context) ? e - static_cast<size_t>(context) : 0;
    while (first < e && script[first] != Edit::Keep) ++first;
    size_t last = e;
    for (size_t kept = 0; last < script.size(); ++last) {
      kept = script[last] == Edit::Keep ? kept + 1 : 0;
      if (kept > static_cast<size_t>(2 * context)) break;
    }
    size_t end = last;
    while (end > e && script[end - 1] == Edit::Keep) --end;
    end = std::min(script.size(), end + static_cast<size_t>(context));
    out += "@@ -" + range(at_a[first], at_a[end] - at_a[first]) + " +" + range(at_b[first], at_b[end] - at_b[first]) + " @@\n";
    for (size_t h = first; h < end; ++h) {
      if (script[h] == Edit::Keep) out += line_out(' ', a[static_cast<size_t>(at_a[h])]);
      else if (script[h] == Edit::Remove) out += line_out('-', a[static_cast<size_t>(at_a[h])]);
      else out += line_out('+', b[static_cast<size_t>(at_b[h])]);
    }
    e = end;
  }
  return out;
}

}  // namespace spgen
