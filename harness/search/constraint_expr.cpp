// evaluate_condition (constraint_rules.h): macro expansion by tokens, then precedence climbing
// over optional values, so an undecidable operand stays undecided unless && / || / ?: make it
// irrelevant.
#include <cctype>
#include <set>

#include "search/constraint_rules.h"

namespace evo {

namespace {

using Macros = std::map<std::string, std::optional<std::string>>;
using Value = std::optional<long long>;

struct Token {
  enum Kind { number, ident, op, unknown } kind;
  std::string text;
  long long value = 0;
};

Token number_token(const std::string& text) {
  std::string digits = text;
  while (!digits.empty() &&
         (digits.back() == 'u' || digits.back() == 'U' || digits.back() == 'l' || digits.back() == 'L'))
    digits.pop_back();
  try {
    size_t used = 0;
    const int base = digits.size() > 2 && (digits[1] == 'x' || digits[1] == 'X')   ? 16
                     : digits.size() > 2 && (digits[1] == 'b' || digits[1] == 'B') ? 2
                     : digits.size() > 1 && digits[0] == '0'                       ? 8
                                                                                   : 10;
    const long long v = std::stoll(base == 2 ? digits.substr(2) : digits, &used, base);
    if (used == (base == 2 ? digits.size() - 2 : digits.size())) return {Token::number, text, v};
  } catch (const std::exception&) {
  }
  return {Token::unknown, text};  // a float, a character, an overflow
}

std::vector<Token> tokenize(const std::string& s) {
  static const std::vector<std::string> ops = {"<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
  std::vector<Token> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (std::isdigit(c) ||
               (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' || s[j] == '\'')) ++j;
      out.push_back(number_token(s.substr(i, j - i)));
      i = j;
    } else if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::ident, s.substr(i, j - i)});
      i = j;
    } else {
      std::string two = s.substr(i, 2), op(1, s[i]);
      for (const auto& o : ops)
        if (two == o) op = o;
      // Strings, characters and anything else that is not integer arithmetic: undecidable.
      out.push_back(
          {std::string("+-*/%<>=!~&|^?:()").find(s[i]) == std::string::npos ? Token::unknown : Token::op, op});
      i += op.size();
    }
  }
  return out;
}

// Replaces every macro by its body (recursively; a macro is not expanded inside itself), and
// `defined X` / `defined(X)` by 0 or 1. In #if, a name nobody defined is 0 (the preprocessor's
// rule); in a constraint it may be a constexpr the compiler knows: unknown. Names starting with
// "__" are the compiler's: unknown.
void expand(const std::vector<Token>& in, const Macros& macros, bool undefined_is_zero, std::set<std::string>& active,
            std::vector<Token>& out, int depth) {
  for (size_t i = 0; i < in.size(); ++i) {
    const Token& t = in[i];
    if (t.kind != Token::ident) {
      out.push_back(t);
      continue;
    }
    if (t.text == "defined") {
      size_t j = i + 1;
      const bool paren = j < in.size() && in[j].text == "(";
      if (paren) ++j;
      if (j >= in.size() || in[j].kind != Token::ident) return out.push_back({Token::unknown, "defined"});
      const std::string& name = in[j].text;
      auto it = macros.find(name);
      const bool compiler = name.rfind("__", 0) == 0;
      out.push_back(it != macros.end() ? (it->second ? Token{Token::number, "1", 1} : Token{Token::unknown, name})
                    : compiler         ? Token{Token::unknown, name}
                                       : Token{Token::number, "0", 0});
      i = j + (paren && j + 1 < in.size() && in[j + 1].text == ")" ? 1 : 0);
      continue;
    }
    if (t.text == "true" || t.text == "false") {
      out.push_back({Token::number, t.text, t.text == "true" ? 1 : 0});
      continue;
    }
    auto it = macros.find(t.text);
    if (it == macros.end()) {
      const bool zero = undefined_is_zero && t.text.rfind("__", 0) != 0;
      out.push_back(zero ? Token{Token::number, "0", 0} : Token{Token::unknown, t.text});
    } else if (!it->second || active.count(t.text) || depth > 32) {
      out.push_back({Token::unknown, t.text});  // function-like, undecided or recursive
    } else {
      active.insert(t.text);
      expand(tokenize(*it->second), macros, undefined_is_zero, active, out, depth + 1);
      active.erase(t.text);
    }
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> t) : t_(std::move(t)) {}
  // nullopt when the tokens are not one whole expression or any needed operand is undecided.
  Value parse() {
    Value v = ternary();
    return ok_ && at_ == t_.size() ? v : std::nullopt;
  }

 private:
  bool next_is(const char* op) const { return at_ < t_.size() && t_[at_].kind == Token::op && t_[at_].text == op; }

  Value ternary() {
    Value c = binary(0);
    if (!next_is("?")) return c;
    ++at_;
    Value a = ternary();
    if (!next_is(":")) return ok_ = false, std::nullopt;
    ++at_;
    Value b = ternary();
    if (!c) return a && b && *a == *b ? a : std::nullopt;
    return *c ? a : b;
  }

  static int precedence(const std::string& op) {
    static const std::map<std::string, int> p = {{"||", 1}, {"&&", 2}, {"|", 3}, {"^", 4},  {"&", 5},  {"==", 6},
                                                 {"!=", 6}, {"<", 7},  {">", 7}, {"<=", 7}, {">=", 7}, {"<<", 8},
                                                 {">>", 8}, {"+", 9},  {"-", 9}, {"*", 10}, {"/", 10}, {"%", 10}};
    auto it = p.find(op);
    return it == p.end() ? -1 : it->second;
  }

  Value binary(int min_prec) {
    Value lhs = unary();
    while (at_ < t_.size() && t_[at_].kind == Token::op) {
      const std::string op = t_[at_].text;
      const int prec = precedence(op);
      if (prec < 0 || prec < min_prec) break;
      ++at_;
      Value rhs = binary(prec + 1);
      lhs = apply(op, lhs, rhs);
    }
    return lhs;
  }

  static Value apply(const std::string& op, Value a, Value b) {
    if (op == "&&") return (a && !*a) || (b && !*b) ? Value(0) : a && b ? Value(1) : std::nullopt;
    if (op == "||") return (a && *a) || (b && *b) ? Value(1) : a && b ? Value(0) : std::nullopt;
    if (!a || !b) return std::nullopt;
    const long long x = *a, y = *b;
    if ((op == "/" || op == "%") && y == 0) return std::nullopt;
    if ((op == "<<" || op == ">>") && (y < 0 || y > 62)) return std::nullopt;
    if (op == "*") return x * y;
    if (op == "/") return x / y;
    if (op == "%") return x % y;
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "<<") return x << y;
    if (op == ">>") return x >> y;
    if (op == "<") return x < y;
    if (op == ">") return x > y;
    if (op == "<=") return x <= y;
    if (op == ">=") return x >= y;
    if (op == "==") return x == y;
    if (op == "!=") return x != y;
    if (op == "&") return x & y;
    if (op == "^") return x ^ y;
    return x | y;
  }

  Value unary() {
    if (at_ >= t_.size()) return ok_ = false, std::nullopt;
    const Token& t = t_[at_++];
    if (t.kind == Token::number) return t.value;
    if (t.kind == Token::unknown || t.kind == Token::ident) return call_or_unknown();
    if (t.text == "(") {
      Value v = ternary();
      if (!next_is(")")) return ok_ = false, std::nullopt;
      ++at_;
      return v;
    }
    Value v = unary();
    if (!v) return v;
    if (t.text == "-") return -*v;
    if (t.text == "+") return v;
    if (t.text == "!") return !*v;
    if (t.text == "~") return ~*v;
    return ok_ = false, std::nullopt;
  }

  // An undecided name, perhaps called: skip its argument list so the rest still parses.
  Value call_or_unknown() {
    if (next_is("(")) {
      int depth = 0;
      do {
        if (t_[at_].text == "(") ++depth;
        if (t_[at_].text == ")") --depth;
        ++at_;
      } while (at_ < t_.size() && depth > 0);
    }
    return std::nullopt;
  }

  std::vector<Token> t_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace

std::optional<long long> evaluate_expression(const std::string& expr, const Macros& macros, bool undefined_is_zero) {
  std::vector<Token> expanded;
  std::set<std::string> active;
  expand(tokenize(expr), macros, undefined_is_zero, active, expanded, 0);
  if (expanded.empty()) return std::nullopt;
  return Parser(std::move(expanded)).parse();
}

std::optional<long long> evaluate_condition(const std::string& expr, const Macros& macros) {
  return evaluate_expression(expr, macros, false);
}

}  // namespace evo
