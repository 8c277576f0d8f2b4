// core/sha256: the digest behind cache keys and records' source hashes (FIPS 180-4 vectors).
#include "core/sha256.h"

#include <gtest/gtest.h>

namespace evo {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding needs a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecewiseUpdatesEqualOneShot) {
  const std::string text =
      "evo evolves CUDA attention kernels stage by stage, across block boundaries: " + std::string(200, 'x');
  for (size_t cut : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65), size_t(130)}) {
    Sha256 h;
    h.update(std::string_view(text).substr(0, cut)).update(text.data() + cut, text.size() - cut);
    EXPECT_EQ(h.hex(), sha256_hex(text)) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace evo
