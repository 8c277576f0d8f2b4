// The text of support/support_kernels.cu, embedded at build time (see embed_support.cmake).
#pragma once
#include <string>

namespace evo {
const std::string& support_kernels_source();
}
