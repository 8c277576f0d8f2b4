#include "search/constraint_rules.h"

#include <cctype>

namespace evo {

std::optional<long long> evaluate_expression(const std::string& expr,
                                             const std::map<std::string, std::optional<std::string>>& macros,
                                             bool undefined_is_zero);

namespace {

using Include = std::function<std::optional<std::string>(const std::string&)>;

// Comments become spaces (newlines kept, so line numbers hold); string and character literals
// are left as they are.
std::string without_comments(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' || s[i] == '\'') {
      const char q = s[i];
      out += s[i];
      for (++i; i < s.size() && s[i] != q && s[i] != '\n'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) out += s[i++];
        out += s[i];
      }
      if (i < s.size()) out += s[i];
    } else if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
      if (i < s.size()) out += '\n';
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? s.size() : end + 2;
      for (; i < stop; ++i) out += s[i] == '\n' ? '\n' : ' ';
      --i;
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string collapse(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// The text of a string literal (adjacent literals joined); the raw text when it is not one.
std::string literal_text(const std::string& arg) {
  std::string out;
  bool any = false;
  for (size_t i = 0; i < arg.size(); ++i) {
    if (arg[i] != '"') continue;
    any = true;
    for (++i; i < arg.size() && arg[i] != '"'; ++i) {
      if (arg[i] == '\\' && i + 1 < arg.size()) ++i;
      out += arg[i];
    }
  }
  return any ? out : collapse(arg);
}

struct Scanner {
  std::string text;  // without comments
  size_t at = 0;
  int line = 1;

  // The logical line from `at` (a directive may continue over backslash-newlines).
  std::string directive_line() {
    std::string out;
    while (at < text.size() && text[at] != '\n') {
      if (text[at] == '\\' && at + 1 < text.size() && text[at + 1] == '\n') {  // continued
        out += ' ';
        at += 2;
        ++line;
        continue;
      }
      out += text[at++];
    }
    return out;
  }

  // From just after "EVO_CONSTRAINT": the balanced argument list, split at top-level commas.
  std::optional<std::vector<std::string>> arguments() {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) line += text[at++] == '\n';
    if (at >= text.size() || text[at] != '(') return std::nullopt;
    std::vector<std::string> args{""};
    int depth = 0;
    for (; at < text.size(); ++at) {
      const char c = text[at];
      if (c == '\n') ++line;
      if (c == '"') {
        const size_t end = text.find('"', at + 1);
        args.back() += text.substr(at, end == std::string::npos ? std::string::npos : end - at + 1);
        at = end == std::string::npos ? text.size() : end;
        continue;
      }
      if (c == '(' && depth++ == 0) continue;
      if (c == ')' && --depth == 0) return ++at, args;
      if (c == ',' && depth == 1) {
        args.emplace_back();
        continue;
      }
      args.back() += c;
    }
    return std::nullopt;
  }
};

ConstraintRules::Item directive(const std::string& body) {
  using Item = ConstraintRules::Item;
  size_t i = 0;
  auto word = [&] {
    while (i < body.size() && std::isspace(static_cast<unsigned char>(body[i]))) ++i;
    size_t j = i;
    while (j < body.size() && (std::isalnum(static_cast<unsigned char>(body[j])) || body[j] == '_')) ++j;
    std::string w = body.substr(i, j - i);
    i = j;
    return w;
  };
  const std::string kind = word();
  if (kind == "define") {
    const std::string name = word();
    if (i < body.size() && body[i] == '(') return {Item::define, name, "("};  // function-like
    return {Item::define, name, collapse(body.substr(i))};
  }
  if (kind == "undef") return {Item::undef, word(), ""};
  if (kind == "ifdef" || kind == "ifndef") return {kind == "ifdef" ? Item::ifdef : Item::ifndef, word(), ""};
  if (kind == "if" || kind == "elif") return {kind == "if" ? Item::if_ : Item::elif, "", collapse(body.substr(i))};
  if (kind == "else") return {Item::else_, "", ""};
  if (kind == "endif") return {Item::endif, "", ""};
  return {Item::other, kind, collapse(body.substr(i))};  // include, pragma, error...: the caller decides
}

void scan(const std::string& source, const Include& include, int depth, std::vector<ConstraintRules::Item>& items,
          std::vector<ConstraintRule>* rules) {
  using Item = ConstraintRules::Item;
  Scanner sc{without_comments(source)};
  static const std::string key = "EVO_CONSTRAINT";
  while (sc.at < sc.text.size()) {
    size_t first = sc.at;
    while (first < sc.text.size() && (sc.text[first] == ' ' || sc.text[first] == '\t')) ++first;
    if (first < sc.text.size() && sc.text[first] == '#') {
      sc.at = first + 1;
      Item it = directive(sc.directive_line());
      if (it.kind != Item::other) {
        items.push_back(std::move(it));
      } else if (it.name == "include" && depth < 4 && it.text.size() > 2 && it.text.front() == '"') {
        if (auto text = include(it.text.substr(1, it.text.find('"', 1) - 1)))
          scan(*text, include, depth + 1, items, nullptr);  // the header's rules are not the variant's
      }
    }
    // Rules anywhere on the line (possibly running over several lines).
    const size_t end = sc.text.find('\n', sc.at);
    for (size_t p = sc.text.find(key, sc.at); p != std::string::npos && p < end; p = sc.text.find(key, sc.at)) {
      const bool word =
          (p == 0 || !(std::isalnum(static_cast<unsigned char>(sc.text[p - 1])) || sc.text[p - 1] == '_'));
      sc.at = p + key.size();
      if (!word) continue;
      const int line = sc.line;
      auto args = sc.arguments();
      if (!args || args->size() != 2 || !rules) continue;
      rules->push_back({collapse((*args)[0]), literal_text((*args)[1]), line});
      items.push_back({Item::constraint, "", "", rules->size() - 1});
    }
    const size_t nl = sc.text.find('\n', sc.at);
    if (nl == std::string::npos) break;
    sc.at = nl + 1;
    ++sc.line;
  }
}

// Three-valued region state of the conditional stack.
enum class On { yes, no, maybe };

On both(On region, std::optional<long long> cond) {
  if (region == On::no || (cond && !*cond)) return On::no;
  return region == On::yes && cond ? On::yes : On::maybe;
}

struct Frame {
  On parent, now;
  On taken;  // yes: a branch was taken; maybe: perhaps one was
};

// The macro table and the conditional stack while the items are walked in order.
struct Walk {
  using Item = ConstraintRules::Item;
  std::map<std::string, std::optional<std::string>> macros;
  std::vector<Frame> stack;

  On region() const { return stack.empty() ? On::yes : stack.back().now; }

  void define(const Item& it) {
    const On here = region();
    if (here == On::no) return;
    if (here == On::maybe || it.text == "(")
      macros[it.name] = std::nullopt;  // perhaps defined, value unknown (or function-like)
    else if (it.kind == Item::define)
      macros[it.name] = it.text;
    else
      macros.erase(it.name);
  }

  void open(const Item& it) {  // #if, #ifdef, #ifndef
    std::optional<long long> cond;
    if (it.kind == Item::if_) {
      cond = evaluate_expression(it.text, macros, true);
    } else {
      cond = evaluate_expression("defined(" + it.name + ")", macros, true);
      if (cond && it.kind == Item::ifndef) cond = !*cond;
    }
    const On now = both(region(), cond);
    stack.push_back({region(), now, now});
  }

  void branch(std::optional<long long> cond) {  // #elif, #else
    if (stack.empty()) return;
    Frame& f = stack.back();
    if (f.taken == On::yes) return void(f.now = On::no);
    f.now = f.taken == On::no ? both(f.parent, cond) : (cond && !*cond ? On::no : On::maybe);
    if (f.now != On::no) f.taken = f.now;
  }
};

}  // namespace

ConstraintCheck ConstraintRules::check(const std::map<std::string, long long>& predefined) const {
  Walk w;
  for (const auto& [k, v] : predefined) w.macros[k] = std::to_string(v);
  ConstraintCheck out;
  for (const Item& it : items_) {
    switch (it.kind) {
      case Item::define:
      case Item::undef: w.define(it); break;
      case Item::if_:
      case Item::ifdef:
      case Item::ifndef: w.open(it); break;
      case Item::elif: w.branch(evaluate_expression(it.text, w.macros, true)); break;
      case Item::else_: w.branch(1); break;
      case Item::endif:
        if (!w.stack.empty()) w.stack.pop_back();
        break;
      case Item::constraint: {
        if (w.region() != On::yes) break;  // a rule that may not apply decides nothing
        const auto v = evaluate_expression(rules_[it.index].condition, w.macros, false);
        if (v && *v) break;
        if (v) return {RuleResult::violated, &rules_[it.index]};
        if (out.result == RuleResult::holds) out = {RuleResult::unknown, &rules_[it.index]};
        break;
      }
      case Item::other: break;
    }
  }
  return out;
}

ConstraintRules ConstraintRules::parse(const std::string& source, const Include& include) {
  ConstraintRules r;
  scan(source, include, 0, r.items_, &r.rules_);
  // The variant's own macros (after its #include line): what a reader of the rules needs.
  std::vector<Item> own;
  scan(
      source, [](const std::string&) { return std::nullopt; }, 0, own, nullptr);
  for (const auto& it : own)
    if (it.kind == Item::define && it.text != "(") r.macros_[it.name] = it.text;
  return r;
}

}  // namespace evo
