// The EVO_CONSTRAINT rules of a variant, read from its source so a search knows which tunable
// combinations NVRTC would reject before it proposes them (docs/evolve.md, "Search space").
//
// A small C preprocessor: object-like #defines, #undef, #if/#ifdef/#ifndef/#elif/#else/#endif and
// #include of the ABI header, then each EVO_CONSTRAINT(condition, "message") in an active region,
// evaluated as a C integer expression over the task macros (EVO_DTYPE, EVO_HEAD_DIM, EVO_CAUSAL)
// and the params. What it cannot decide (a function-like macro, a name only the compiler or a
// header defines, a float) is `unknown`, never `violated`: the compiler still has the last word.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace evo {

struct ConstraintRule {
  std::string condition;  // as written, whitespace collapsed
  std::string message;
  int line = 0;  // in the variant file
};

enum class RuleResult { holds, violated, unknown };

struct ConstraintCheck {
  RuleResult result = RuleResult::holds;  // violated if one rule is, else unknown if one is
  const ConstraintRule* rule = nullptr;   // the first violated (or undecided) rule
};

class ConstraintRules {
 public:
  // `include` maps a quoted #include name to its text (nullopt: not followed). Never throws on
  // odd source: what it cannot read becomes unknown.
  static ConstraintRules parse(const std::string& source,
                               const std::function<std::optional<std::string>(const std::string&)>& include);
  // Every rule evaluated with these macros defined first (task macros and params, as the
  // compiler's prelude defines them).
  ConstraintCheck check(const std::map<std::string, long long>& predefined) const;
  const std::vector<ConstraintRule>& rules() const { return rules_; }
  // The object-like macros of the variant file itself (name -> body), for a generator to read
  // the rules with.
  const std::map<std::string, std::string>& macros() const { return macros_; }

  struct Item {
    enum Kind { define, undef, if_, ifdef, ifndef, elif, else_, endif, other, constraint } kind;
    std::string name, text;  // define: name and body (function-like: "("); if, elif: the condition
    size_t index = 0;        // constraint: its place in rules_
  };

 private:
  std::vector<Item> items_;
  std::vector<ConstraintRule> rules_;
  std::map<std::string, std::string> macros_;
};

// A C integer constant expression over `macros` (exposed for tests). nullopt when undecidable.
std::optional<long long> evaluate_condition(const std::string& expr,
                                            const std::map<std::string, std::optional<std::string>>& macros);

}  // namespace evo
