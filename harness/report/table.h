// Plain-text tables for the terminal: columns sized to their widest cell.
#pragma once
#include <string>
#include <vector>

namespace evo {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const;
  bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "8x16x16x2048x2048x128" -> "B8·S2048": a shape in a narrow column header.
std::string short_shape(const std::string& dims);

}  // namespace evo
