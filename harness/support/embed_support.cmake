# Writes OUT: a C++ file defining evo::support_kernels_source() with the kernels' text.
file(READ ${KERNELS} EVO_KERNELS)
set(EVO_DELIM "EVO_SUPPORT_SRC")
file(WRITE ${OUT} "// Generated from harness/support/support_kernels.cu; do not edit.\n#include <string>\nnamespace evo {\nconst std::string& support_kernels_source() {\n  static const std::string s = R\"${EVO_DELIM}(${EVO_KERNELS})${EVO_DELIM}\";\n  return s;\n}\n}  // namespace evo\n")
