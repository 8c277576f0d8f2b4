// The launch ABI the kernels, evo's worker and the exported runtime share (variants/common/
// evo_launch.h): grid, KV split count and workspace size on decode and prefill shapes, and the
// cubin reader's handling of version-1 `evo_launch` symbols.
#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/evo_launch.h"
#include "compile/cubin.h"
#include "core/shape.h"
#include "policy/config.h"
#include "support/test_support.h"

namespace evo {
namespace {

constexpr int kSms = 132;                                      // H100 SXM / H200
constexpr int kSmemPerSm = 233472;                             // 228 KiB
const EvoLaunch kPrefill{384, 165120, 128, 1, 0, 2, 0, 0, 0};  // a stage-7-like kernel
const EvoLaunch kSplit{128, 110000, 16, 1, 0, 2, 64, 64, 1};   // stage 9's default at D=128

EvoShape shape(long long b, long long hq, long long hkv, long long sq, long long skv, int d = 128, int causal = 0) {
  return EvoShape{b, hq, hkv, sq, skv, d, causal};
}

void expect_grid(const EvoGrid& g, unsigned x, unsigned y, unsigned z) {
  EXPECT_EQ(g.x, x);
  EXPECT_EQ(g.y, y);
  EXPECT_EQ(g.z, z);
}

TEST(EvoLaunchAbi, LayoutKeepsTmaAt192AndV1FieldsInPlace) {
  EXPECT_EQ(sizeof(EvoAttnParams), 704u);
  EXPECT_EQ(offsetof(EvoAttnParams, flags), 176u);
  EXPECT_EQ(offsetof(EvoAttnParams, num_splits), 180u);
  EXPECT_EQ(offsetof(EvoAttnParams, workspace), 184u);
  EXPECT_EQ(offsetof(EvoAttnParams, tma), 192u);
  EXPECT_EQ(offsetof(EvoLaunch, abi_version), 20u);  // where version 1 had it
  EXPECT_EQ(EVO_ABI_VERSION, 2);
}

TEST(EvoLaunchAbi, KernelsWithoutSplitsKeepTheirGrid) {
  const EvoShape s = shape(2, 8, 2, 1000, 777);
  EXPECT_EQ(evo_num_splits(kPrefill, s, kSms, kSmemPerSm), 1);
  EXPECT_EQ(evo_workspace_bytes(kPrefill, s, 1), 0);
  expect_grid(evo_grid(kPrefill, s, 1, kSms), 8, 8, 2);  // ceil(1000/128) tiles, heads_q, batch
  EvoLaunch persistent = kPrefill;
  persistent.persistent = 1;
  expect_grid(evo_grid(persistent, s, 1, kSms), 128, 1, 1);  // 8 x 8 x 2 tiles < 132
  expect_grid(evo_grid(persistent, shape(4, 16, 16, 2048, 2048), 1, kSms), 132, 1, 1);
  EvoLaunch cluster = kPrefill;
  cluster.cluster_x = 2;
  expect_grid(evo_grid(cluster, shape(1, 4, 4, 300, 300), 1, kSms), 4, 4, 1);  // 3 tiles rounded up to 4
  // Decode through a prefill kernel: one mostly empty tile per (batch, query head), no split.
  EXPECT_EQ(evo_num_splits(kPrefill, shape(1, 32, 8, 1, 8192), kSms, kSmemPerSm), 1);
  expect_grid(evo_grid(kPrefill, shape(1, 32, 8, 1, 8192), 1, kSms), 1, 32, 1);
  EXPECT_EQ(evo_tiles(kPrefill, s), 8 * 8 * 2);
}

TEST(EvoLaunchAbi, PackGqaPutsAGroupsHeadsInOneTile) {
  const EvoShape llama70b = shape(16, 64, 8, 1, 4096);
  EXPECT_EQ(evo_packed_rows(kSplit, llama70b), 8);
  EXPECT_EQ(evo_q_tiles(kSplit, llama70b), 1);
  EXPECT_EQ(evo_tiles(kSplit, llama70b), 16 * 8);
  // Speculative decode, 16 tokens x G = 4: 64 rows, four 16-row tiles per KV head.
  const EvoShape spec = shape(8, 32, 8, 16, 8192);
  EXPECT_EQ(evo_q_tiles(kSplit, spec), 4);
  EXPECT_EQ(evo_num_splits(kSplit, spec, kSms, kSmemPerSm), 1);  // 256 tiles fill 264 slots
  expect_grid(evo_grid(kSplit, spec, 1, kSms), 4, 8, 8);
  // MHA: G = 1, one row per position.
  expect_grid(evo_grid(kSplit, shape(32, 32, 32, 1, 2048), 1, kSms), 1, 32, 32);
}

TEST(EvoLaunchAbi, SplitsFillOneWaveOfCtaSlots) {
  EXPECT_EQ(evo_ctas_per_sm(kSplit, kSmemPerSm), 2);  // 233472 / (110000 + 1024)
  // Llama-3 8B, B1: 8 tiles; 29 splits fill 88 %, 30 fill 91 %.
  const EvoShape llama8b = shape(1, 32, 8, 1, 8192);
  EXPECT_EQ(evo_num_splits(kSplit, llama8b, kSms, kSmemPerSm), 30);
  expect_grid(evo_grid(kSplit, llama8b, 30, kSms), 30, 8, 1);
  // MQA 16/1, B32: 32 tiles; 8 splits give 256 CTAs.
  EXPECT_EQ(evo_num_splits(kSplit, shape(32, 16, 1, 1, 4096), kSms, kSmemPerSm), 8);
  // 43 sequences of MQA 8/1: 43 tiles, one short of a third of 132 SMs; 6 splits fill 258 of 264.
  EXPECT_EQ(evo_num_splits(kSplit, shape(43, 8, 1, 1, 4096), kSms, kSmemPerSm), 6);
  expect_grid(evo_grid(kSplit, shape(43, 8, 1, 1, 4096), 6, kSms), 6, 1, 43);
}

// A tile for a third of the SMs or more runs unsplit: the unsplit twins of the near-optimal
// stage-9 configurations were as fast or faster there on the H200 (evo_launch.h).
TEST(EvoLaunchAbi, CallsWithATileForAThirdOfTheSmsDoNotSplit) {
  // 44 tiles: 44 x 3 >= 132.
  EXPECT_EQ(evo_num_splits(kSplit, shape(44, 8, 1, 1, 4096), kSms, kSmemPerSm), 1);
  // Falcon-7B's MQA 71/1 at B16 over 2k keys: 5 tiles of 16 packed rows per sequence, 80 tiles.
  EXPECT_EQ(evo_tiles(kSplit, shape(16, 71, 1, 1, 2048)), 80);
  EXPECT_EQ(evo_num_splits(kSplit, shape(16, 71, 1, 1, 2048), kSms, kSmemPerSm), 1);
  // Llama-3 70B, B16: 128 tiles (two splits before: 0.95-1.00x unsplit over split on bf16-d128).
  const EvoShape llama70b = shape(16, 64, 8, 1, 4096);
  EXPECT_EQ(evo_num_splits(kSplit, llama70b, kSms, kSmemPerSm), 1);
  expect_grid(evo_grid(kSplit, llama70b, 1, kSms), 1, 8, 16);
  // B64: 512 tiles, past one wave.
  EXPECT_EQ(evo_num_splits(kSplit, shape(64, 32, 8, 1, 2048), kSms, kSmemPerSm), 1);
  // On a GPU of 66 SMs (a MIG half) the same 32 tiles are a third: unsplit.
  EXPECT_EQ(evo_num_splits(kSplit, shape(32, 16, 1, 1, 4096), 66, kSmemPerSm), 1);
  EXPECT_EQ(evo_num_splits(kSplit, shape(32, 16, 1, 1, 4096), 97, kSmemPerSm), 6);
}

TEST(EvoLaunchAbi, SplitsAreCappedByTheKernelAndTheKvBlocks) {
  const EvoShape llama8b = shape(1, 32, 8, 1, 8192);
  EvoLaunch capped = kSplit;
  capped.kv_splits_max = 16;
  EXPECT_EQ(evo_num_splits(capped, llama8b, kSms, kSmemPerSm), 16);
  capped.kv_splits_max = 1;
  EXPECT_EQ(evo_num_splits(capped, llama8b, kSms, kSmemPerSm), 1);
  // 600 keys = 10 blocks of 64: at most 10 splits.
  EXPECT_EQ(evo_num_splits(kSplit, shape(1, 8, 8, 1, 600), kSms, kSmemPerSm), 10);
  // At most 4 blocks: never split (FA3's rule).
  EXPECT_EQ(evo_num_splits(kSplit, shape(1, 8, 8, 1, 256), kSms, kSmemPerSm), 1);
  // Top-left causal at Sq 1 sees key 0 only: one block.
  EXPECT_EQ(evo_kv_blocks(kSplit, shape(1, 32, 8, 1, 8192, 128, 1)), 1);
  EXPECT_EQ(evo_num_splits(kSplit, shape(1, 32, 8, 1, 8192, 128, 1), kSms, kSmemPerSm), 1);
  EXPECT_EQ(evo_kv_blocks(kSplit, shape(1, 32, 8, 1000, 8192, 128, 1)), 16);  // ceil(1000 / 64)
}

// Hacker round 8 on the H200: a split kernel that kept state in a partial slot only a ragged last
// tile leaves unused was admitted, because no fixed causal case split at all (a causal call reads
// at most Sq keys, and the small shapes' causal rows stop at 300) and the sampled cases that split
// with a ragged tile are a thin slice. Every split kernel must split on some fixed case, causal
// and not, with a last query tile of fewer rows than its tile height: over the tile heights, KV
// blocks (split_kv and split_kv_tma allow BLOCK_N up to 128), GQA packing and CTAs per SM, the
// default small set has one. Its lengths stay under 1024 so that the tricks against long rows
// remain the sampled tier's to catch (tests/gpu/adversarial_test.cpp caught_by_sampled).
TEST(EvoLaunchAbi, TheSmallGateSetSplitsEverySplitKernelWithARaggedLastTile) {
  const GatesConfig gates = load_gates_config(test::source_root() / "gates" / "gates.json");
  const auto& small = gates.shape_sets.at("small");
  for (int d : {64, 128})
    for (unsigned rows : {16u, 32u, 64u, 128u})
      for (unsigned block : {64u, 128u})
        for (unsigned pack : {0u, 1u})
          for (unsigned smem : {40000u, 110000u, 200000u})
            for (unsigned splits_max : {8u, 64u})
              for (int causal : {0, 1}) {
                const EvoLaunch L{128, smem, rows, 1, 0, 2, splits_max, block, pack};
                bool covered = false;
                for (const std::string& text : small) {
                  const Shape s = parse_shape(text, d);
                  const EvoShape es{s.batch, s.heads_q, s.heads_kv, s.seq_q, s.seq_kv, d, causal};
                  covered =
                      covered || (evo_num_splits(L, es, kSms, kSmemPerSm) > 1 && evo_packed_rows(L, es) % rows != 0);
                }
                EXPECT_TRUE(covered) << "no small case splits a kernel of " << rows << " rows, " << block
                                     << "-key blocks, pack_gqa " << pack << ", " << smem << " B smem, causal " << causal
                                     << " (D=" << d << ") with a ragged last tile";
              }
}

TEST(EvoLaunchAbi, WorkspaceHoldsCountersPartialStatsAndRows) {
  // 8 tiles x 33 splits x 16 rows: counters (32 B -> 256), max/sum (33792 B), FP32 rows of D=128.
  const EvoWorkspace w = evo_workspace_layout(8, 33, 16, 128);
  EXPECT_EQ(w.ml_offset, 256);
  EXPECT_EQ(w.o_offset, 256 + 33792);
  EXPECT_EQ(w.bytes, 256 + 33792 + 8LL * 33 * 16 * 128 * 4);
  EXPECT_EQ(evo_workspace_bytes(kSplit, shape(1, 32, 8, 1, 8192), 33), w.bytes);
  EXPECT_EQ(evo_workspace_bytes(kSplit, shape(1, 32, 8, 1, 8192), 1), 0);
  EXPECT_EQ(w.ml_offset % 256, 0);
  EXPECT_EQ(w.o_offset % 256, 0);
}

// A minimal ELF64 with one data section holding `symbol` and a symbol table naming it.
std::string elf_with(const std::string& name, const std::string& symbol) {
  const std::string strtab = std::string("\0", 1) + name + std::string("\0", 1);
  Elf64_Sym syms[2] = {};
  syms[1].st_name = 1;
  syms[1].st_shndx = 1;
  syms[1].st_size = symbol.size();
  const size_t data_at = sizeof(Elf64_Ehdr), sym_at = data_at + 64, str_at = sym_at + sizeof(syms);
  const size_t sh_at = (str_at + strtab.size() + 7) / 8 * 8;
  Elf64_Shdr sh[4] = {};
  sh[1] = {0, SHT_PROGBITS, 0, 0, data_at, symbol.size(), 0, 0, 8, 0};
  sh[2] = {0, SHT_SYMTAB, 0, 0, sym_at, sizeof(syms), 3, 1, 8, sizeof(Elf64_Sym)};
  sh[3] = {0, SHT_STRTAB, 0, 0, str_at, strtab.size(), 0, 0, 1, 0};
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_shoff = sh_at;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = 4;
  std::string out(sh_at + sizeof(sh), '\0');
  std::memcpy(out.data(), &eh, sizeof(eh));
  std::memcpy(out.data() + data_at, symbol.data(), symbol.size());
  std::memcpy(out.data() + sym_at, syms, sizeof(syms));
  std::memcpy(out.data() + str_at, strtab.data(), strtab.size());
  std::memcpy(out.data() + sh_at, sh, sizeof(sh));
  return out;
}

TEST(EvoLaunchAbi, VersionOneCubinsReadWithTheNewFieldsZero) {
  const unsigned v1[6] = {256, 49152, 64, 1, 0, 1};
  std::string why;
  auto g =
      read_launch_geometry(elf_with("evo_launch", std::string(reinterpret_cast<const char*>(v1), sizeof(v1))), &why);
  ASSERT_TRUE(g) << why;
  EXPECT_EQ(g->threads, 256u);
  EXPECT_EQ(g->rows_per_cta, 64u);
  EXPECT_EQ(g->abi_version, 1u);
  EXPECT_EQ(g->kv_splits_max, 0u);
  EXPECT_EQ(g->kv_block, 0u);
  EXPECT_EQ(g->pack_gqa, 0u);
  const unsigned v2[9] = {128, 110000, 16, 1, 0, 2, 64, 64, 1};
  g = read_launch_geometry(elf_with("evo_launch", std::string(reinterpret_cast<const char*>(v2), sizeof(v2))), &why);
  ASSERT_TRUE(g) << why;
  EXPECT_EQ(g->abi_version, 2u);
  EXPECT_EQ(g->kv_splits_max, 64u);
  EXPECT_EQ(g->kv_block, 64u);
  EXPECT_EQ(g->pack_gqa, 1u);
  EXPECT_FALSE(read_launch_geometry(elf_with("evo_launch", std::string(16, '\0')), &why));  // shorter than v1
}

}  // namespace
}  // namespace evo
