// SASS technique counting and requirements on nvdisasm text (no toolkit needed); the tests on
// real cubins are in tests/nvrtc/technique_test.cpp.
#include <gtest/gtest.h>

#include "compile/sass_technique.h"

namespace evo {
namespace {

TEST(SassTechnique, CountsMnemonicsNotOperandsOrComments) {
  const std::string sass = R"(
        .text.evo_attn_fwd:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0090*/                   USETMAXREG.DEALLOC.CTAPOOL 0x18 ;
        /*00a0*/              @!P0 SYNCS.EXCH.64 URZ, [UR4], UR6 ;
        /*0100*/                   UTMALDG.4D [UR8], [UR14] ;
        /*0110*/                   UTMALDG.2D.MULTICAST [UR8], [UR14], UR5 ;
        /*0120*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x8], R3 ;
        /*0710*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8], RZ, !UPT ;
        /*0720*/                   HGMMA.64x128x16.F32 R24, R88, gdesc[UR8], R24 ;
        /*0730*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, gdesc[UR8], RZ, !UPT, gsb0 ;
        /*0800*/                   UTMASTG.4D [UR4], [UR6] ;
        /*0810*/                   MOV R2, 0x1 ;   // HGMMA in a comment does not count
        .L_x_7:
)";
  TechniqueCounts c = count_techniques(sass);
  EXPECT_EQ(c["HGMMA"], 2);
  EXPECT_EQ(c["QGMMA"], 1) << "FP8 wgmma disassembles as QGMMA";
  EXPECT_EQ(c["GMMA"], 3) << "GMMA counts every warpgroup MMA, fp16/bf16 and fp8";
  EXPECT_EQ(c["UTMALDG"], 2);
  EXPECT_EQ(c["MULTICAST"], 1);
  EXPECT_EQ(c["UTMASTG"], 1);
  EXPECT_EQ(c["SYNCS"], 2);
  EXPECT_EQ(c["USETMAXREG"], 1);
  EXPECT_EQ(c.size(), 8u) << "every key is present, zero or not";
  EXPECT_EQ(count_techniques("")["HGMMA"], 0);
}

TEST(SassTechnique, UnmetRequirementNamesTheInstruction) {
  TechniqueCounts c = count_techniques("        /*0000*/                   HGMMA.64x64x16.F32 R24, gdesc[UR8], RZ ;\n");
  EXPECT_FALSE(unmet_requirement(c, {{"HGMMA", 1}}));
  auto why = unmet_requirement(c, {{"HGMMA", 1}, {"UTMALDG", 1}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "the stage requires UTMALDG >= 1 in the SASS, found 0");
  EXPECT_TRUE(unmet_requirement(c, {{"HGMMA", 2}}));
  EXPECT_TRUE(unmet_requirement(c, {{"NOSUCHOP", 1}})) << "an unknown key is never met";
  TechniqueCounts fp8 = count_techniques(
      "        /*0000*/                   QGMMA.64x128x32.F32.E4M3.E4M3 R24, R88, gdesc[UR8], R24 ;\n");
  EXPECT_FALSE(unmet_requirement(fp8, {{"GMMA", 1}})) << "an fp8 wgmma meets a wgmma requirement";
  EXPECT_TRUE(unmet_requirement(fp8, {{"HGMMA", 1}}));
}

}  // namespace
}  // namespace evo
