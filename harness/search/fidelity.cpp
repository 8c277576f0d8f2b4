#include "search/fidelity.h"

namespace evo {

const char* to_string(Fidelity f) {
  switch (f) {
    case Fidelity::screen: return "screen";
    case Fidelity::full: return "full";
    case Fidelity::promote: return "promote";
    case Fidelity::unset: break;
  }
  return "";
}

}  // namespace evo
