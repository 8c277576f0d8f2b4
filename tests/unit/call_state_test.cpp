// The static check for state a kernel could carry between calls (compile/call_state.h) on nvdisasm
// text, no toolkit needed; on real cubins of every variant, the controls and the bombs in
// tests/nvrtc/call_state_test.cpp.
#include <gtest/gtest.h>

#include "compile/call_state.h"

namespace evo {
namespace {

// Lines of the control pattern's SASS (sm_90a): parameters in bank 0, no global's address read.
const std::string kHonest = R"(
        .text.evo_attn_fwd:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R5, SR_TID.X ;
        /*0020*/                   S2UR UR4, SR_CgaCtaId ;
        /*0050*/                   S2R R7, SR_CTAID.X ;
        /*0090*/                   LDC.64 R2, c[0x0][0x210] ;
        .L_x_1:
)";
const std::vector<std::string> kSections = {"",
                                            ".shstrtab",
                                            ".nv.info",
                                            ".nv.constant4",
                                            ".rela.nv.constant4",
                                            ".nv.constant0.evo_attn_fwd",
                                            ".nv.global.init"};

TEST(CallState, AnHonestKernelReadsNoClockAndNoGlobalsAddress) {
  EXPECT_EQ(carried_state(kHonest, kSections), std::nullopt);
}

TEST(CallState, AClockReadIsRefusedWithTheInstruction) {
  for (const char* reg : {"SR_GLOBALTIMERLO", "SR_GLOBALTIMERHI", "SR_CLOCKLO", "SR_CLOCKHI"}) {
    const std::string sass = kHonest + "        /*0100*/                   CS2R R4, " + reg + " ;\n";
    const auto why = carried_state(sass, kSections);
    ASSERT_TRUE(why) << reg;
    EXPECT_NE(why->find("reads a clock"), std::string::npos) << *why;
    EXPECT_NE(why->find(std::string("CS2R R4, ") + reg + "`"), std::string::npos) << *why;
  }
}

// Hacker round 7: a call into the device heap (heap_leak_bomb.cu) is named by the cubin's symbol
// names (a string table holds them between NULs); a name inside another name is not one.
TEST(CallState, ACallIntoTheDeviceHeapIsNamed) {
  const std::string z(1, '\0');
  const auto why = device_heap_call(
      "\x7f"
      "ELF" +
      z + ".strtab" + z + "evo_attn_fwd" + z + "malloc" + z + "x");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("calls the device heap (malloc)"), std::string::npos) << *why;
  EXPECT_NE(device_heap_call(z + "free" + z).value_or("").find("(free)"), std::string::npos);
  EXPECT_EQ(device_heap_call(z + "evo_attn_fwd" + z + "my_malloc" + z + "freed" + z), std::nullopt);
}

TEST(CallState, AReadOfARelocatedBankIsModuleStateAndOtherBanksAreNot) {
  const std::string global = kHonest + "        /*00d0*/                   LDC.64 R2, c[0x4][RZ] ;\n";
  const auto why = carried_state(global, kSections);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("module-scope __device__ memory"), std::string::npos) << *why;
  EXPECT_NE(why->find("`LDC.64 R2, c[0x4][RZ]`"), std::string::npos) << *why;
  // Bank 4 without relocations (no global's address in it) and bank 3 (__constant__ data): fine.
  EXPECT_EQ(carried_state(global, {".nv.constant4", ".nv.constant3"}), std::nullopt);
  const std::string constant = kHonest + "        /*00d0*/                   LDC R2, c[0x3][0x10] ;\n";
  EXPECT_EQ(carried_state(constant, kSections), std::nullopt);
  // A relocation section of the parameter bank is not a numbered bank: ignored, not misread.
  EXPECT_EQ(carried_state(kHonest, {".rela.nv.constant0.evo_attn_fwd"}), std::nullopt);
}

}  // namespace
}  // namespace evo
