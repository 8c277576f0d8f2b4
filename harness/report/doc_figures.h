// Figures in the docs (README.md, docs/*.md) generated from the records, never copied by hand.
// A doc marks each figure once:
//
//   <!-- evo:figures NAME key=value ... -->generated text<!-- /evo:figures -->
//
// and `evo docs` rewrites the text between the marks from the same Comparison that COMPARE.md is
// built from (report/compare.h), so a new record (a new stage, a new task, a re-measure) changes
// the docs with one command, and a test fails while a committed doc differs from its records.
// Block figures (tables) put the marks on lines of their own; inline figures sit in a sentence.
// A mark right after a backtick or inside a ``` fence is quoted (an example), not filled.
// The figures and their arguments are listed in docs/architecture.md ("Figures in the docs").
#pragma once
#include <map>
#include <string>
#include <vector>

#include "report/compare.h"

namespace evo {

using FigureArgs = std::map<std::string, std::string>;

// The text of one figure. Throws a usage error naming the figure and what to fix (an unknown
// figure or argument, a task, stage or peer the records do not have).
std::string render_figure(const Comparison& c, const std::string& name, const FigureArgs& args);

struct FilledDoc {
  std::string text;
  int figures = 0;  // how many marked figures it holds
};

// `text` with every marked figure regenerated; `origin` (the file name) starts each error
// message with the line of the mark.
FilledDoc fill_figures(const std::string& text, const Comparison& c, const std::string& origin);

}  // namespace evo
