#include "cli/arguments.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "core/utf8.h"

namespace evo {

namespace {

// The offset of the first byte that does not start a well-formed character, or npos.
size_t first_invalid_byte(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_char_length(std::string_view(s).substr(i));
    if (n == 0) return i;
    i += n;
  }
  return std::string::npos;
}

bool is_option(const std::string& a) { return a.size() > 1 && a[0] == '-'; }

}  // namespace

void check_arguments_utf8(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const size_t bad = first_invalid_byte(a);
    if (bad == std::string::npos) continue;
    const std::string shown = valid_utf8(a);
    std::string which;
    if (is_option(a) && a.find('=') != std::string::npos && bad > a.find('='))
      which = "the value of " + valid_utf8(a.substr(0, a.find('=')));
    else if (is_option(a))
      which = "option " + shown;
    else if (i > 0 && is_option(args[i - 1]) && args[i - 1].find('=') == std::string::npos)
      which = "the value of " + valid_utf8(args[i - 1]);
    else
      which = fmt::format("argument {}", i + 1);
    throw usage_error(
        fmt::format("{} ('{}') is not valid UTF-8 (byte 0x{:02x} at offset {}): give names, paths and values in UTF-8",
                    which, shown, static_cast<unsigned char>(a[bad]), bad));
  }
}

}  // namespace evo
