// What a candidate's source may contain before it reaches NVRTC. Candidates are untrusted:
// headers come only from evo's own include set, so `#include "/etc/passwd"` cannot pull a host
// file into a compile log or record.
#pragma once
#include <optional>
#include <string>

namespace evo {

struct SourcePolicy {
  long max_bytes = 256 * 1024;
};

// nullopt when acceptable; otherwise a one-line reason that quotes nothing from outside the
// source itself.
std::optional<std::string> check_source(const std::string& source, const SourcePolicy& policy);

// Makes text safe to store: invalid UTF-8 bytes become U+FFFD, other control characters
// except \n and \t are dropped, and it is cut to max_bytes with a marker.
std::string sanitize_log(const std::string& text, size_t max_bytes);

}  // namespace evo
