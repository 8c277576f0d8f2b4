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

// Hacker round 11 (grid_id_after_2p26.cu): what a kernel may read besides its parameters is an
// allowlist. Every special register and launch constant below the parameter block the committed
// variants read (sm_90a, every stage and task) passes.
TEST(CallState, TheLaunchGeometryAndMemoryWindowsMayBeRead) {
  const std::string sass = kHonest + R"(
        /*0100*/                   S2UR UR5, SR_CTAID.Y ;
        /*0110*/                   S2R R3, SR_LANEID ;
        /*0120*/                   S2R R4, SR_LTMASK ;
        /*0130*/                   S2R R7, SR_SWINHI ;
        /*0140*/                   LDC R14, c[0x0][0xc] ;
        /*0150*/                   ULDC UR5, c[0x0][0x14] ;
        /*0160*/                   LDC R5, c[0x0][RZ] ;
        /*0170*/                   LDC R2, c[0x0][0x140] ;
        /*0180*/               @!P0 ULDC.64 UR14, c[0x0][0x198] ;
        /*0190*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*01a0*/                   IMAD R5, R4, c[0x0][0x2f4], R3 ;
)";
  EXPECT_EQ(carried_state(sass, kSections), std::nullopt);
}

TEST(CallState, ASpecialRegisterOutsideTheAllowlistIsRefused) {
  for (const char* ins :
       {"S2UR UR4, SR_PM0", "CS2R.32 R5, SR_PM7", "S2R R5, SR_VIRTUALSMID", "S2R R5, SR_VIRTID", "S2R R5, SR_SMEMSZ"}) {
    const std::string reg = std::string(ins).substr(std::string(ins).find("SR_"));
    const auto why = carried_state(kHonest + "        /*0100*/                   " + ins + " ;\n", kSections);
    ASSERT_TRUE(why) << ins;
    EXPECT_NE(why->find("reads special register " + reg + " "), std::string::npos) << *why;
    EXPECT_NE(why->find(std::string("`") + ins + "`"), std::string::npos) << *why;
  }
}

// %gridid (0x30, the context's launch count), %envreg0 (0x40), %nsmid (0x10c),
// %current_graph_exec (0x190); a 64-bit read from 0x2c (%dynamic_smem_size) reaches 0x30.
TEST(CallState, ALaunchConstantOutsideTheAllowlistIsRefused) {
  for (const auto& [ins, word] :
       std::vector<std::pair<std::string, std::string>>{{"ULDC.64 UR4, c[0x0][0x30]", "c[0x0][0x30]"},
                                                        {"LDC R5, c[0x0][0x40]", "c[0x0][0x40]"},
                                                        {"LDC R5, c[0x0][0x10c]", "c[0x0][0x10c]"},
                                                        {"LDC.64 R4, c[0x0][0x190]", "c[0x0][0x190]"},
                                                        {"LDC.64 R4, c[0x0][0x2c]", "c[0x0][0x2c]"},
                                                        {"IADD3 R4, R4, c[0x0][0x44], RZ", "c[0x0][0x44]"}}) {
    const auto why = carried_state(kHonest + "        /*0100*/                   " + ins + " ;\n", kSections);
    ASSERT_TRUE(why) << ins;
    EXPECT_NE(why->find("reads launch constant " + word + " "), std::string::npos) << *why;
    EXPECT_NE(why->find("`" + ins + "`"), std::string::npos) << *why;
  }
  EXPECT_EQ(carried_state(kHonest + "        /*0100*/      LDC R5, c[0x0][0x2c] ;\n", kSections), std::nullopt);
  // A register's offset could be anything: refused, whatever the immediate.
  const auto why = carried_state(kHonest + "        /*0100*/      LDC.64 R8, c[0x0][R8+0x210] ;\n", kSections);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("computed offset c[0x0][R8+0x210]"), std::string::npos) << *why;
}

// The parameter block's start is the cubin's (EIATTR_PARAM_CBANK): words from it on are parameters.
TEST(CallState, WordsFromTheParameterBlockOnAreParameters) {
  const std::string sass = kHonest + "        /*0100*/      LDC R5, c[0x0][0x1a0] ;\n";
  EXPECT_EQ(carried_state(sass, kSections, 0x160), std::nullopt);
  EXPECT_NE(carried_state(sass, kSections, 0x210).value_or("").find("c[0x0][0x1a0]"), std::string::npos);
}

// Hacker round 12: the block has an end too (EIATTR_PARAM_CBANK's size). A word past it is the
// driver's, whatever it holds, and a read straddling the end is refused with it.
TEST(CallState, WordsPastTheParameterBlockAreRefused) {
  const std::string last = kHonest + "        /*0100*/      LDC R5, c[0x0][0x38c] ;\n";
  EXPECT_EQ(carried_state(last, kSections, 0x210, 0x390), std::nullopt);
  const std::string past = kHonest + "        /*0100*/      LDC R5, c[0x0][0x390] ;\n";
  const auto why = carried_state(past, kSections, 0x210, 0x390);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("c[0x0][0x390]"), std::string::npos) << *why;
  EXPECT_NE(why->find("past their end (0x390)"), std::string::npos) << *why;
  const std::string straddle = kHonest + "        /*0100*/      LDC.64 R4, c[0x0][0x38c] ;\n";
  EXPECT_TRUE(carried_state(straddle, kSections, 0x210, 0x390));
}

}  // namespace
}  // namespace evo
