// Text from outside evo (generator programs, their stderr, kernel files) is bytes, not UTF-8:
// these make it storable in JSON, whose writers throw on an invalid sequence.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace evo {

// The length of the well-formed UTF-8 character at s[0] (1 to 4; overlong forms, surrogates
// and code points past U+10FFFF are not well formed), or 0.
size_t utf8_char_length(std::string_view s);

// Every byte that does not start a well-formed character becomes U+FFFD; the rest is kept.
std::string valid_utf8(std::string_view bytes);

// The longest prefix / suffix of valid UTF-8 `text` within max_bytes that cuts no character.
std::string_view utf8_prefix(std::string_view text, size_t max_bytes);
std::string_view utf8_suffix(std::string_view text, size_t max_bytes);

}  // namespace evo
