#include "report/table.h"

#include <algorithm>

namespace evo {

namespace {
// Display width of UTF-8 text: count code points, not bytes.
size_t width(const std::string& s) {
  return size_t(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}
}  // namespace

std::string TextTable::render() const {
  std::vector<size_t> w(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    std::string l;
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      l += cell;
      if (i + 1 < w.size()) l += std::string(w[i] - width(cell) + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header_);
  std::vector<std::string> rule;
  for (size_t x : w) rule.push_back(std::string(x, '-'));
  line(rule);
  for (const auto& r : rows_) line(r);
  return out;
}

std::string short_shape(const std::string& dims) {
  auto parts = dims.substr(0, dims.find(':'));
  size_t p = 0;
  for (int i = 0; i < 3; ++i) p = parts.find('x', p) + 1;
  const std::string sq = parts.substr(p, parts.find('x', p) - p);
  const std::string b = parts.substr(0, parts.find('x'));
  return "B" + b + "·S" + sq;
}

}  // namespace evo
