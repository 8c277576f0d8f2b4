// SHA-256 (FIPS 180-4), for content-addressed cache keys and record source hashes.
// Small enough to own rather than pull in a crypto library for one digest.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace evo {

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view data);
  Sha256& update(const void* data, size_t size);
  std::string hex();  // finalizes; the object must not be updated afterwards

 private:
  void block(const uint8_t* p);
  void blocks(const uint8_t* p, size_t n);  // n whole 64-byte blocks, SHA-NI when the CPU has it
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

inline std::string sha256_hex(std::string_view data) { return Sha256().update(data).hex(); }

}  // namespace evo
