#include "run/value_cases.h"

#include <fmt/format.h>

#include <cmath>

#include "gpu/value_fill.h"
#include "run/sampler.h"

namespace evo {

// The value cases (run/value_cases.h).
void append_value_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, const std::string& prefix, std::vector<CaseSpec>& out) {
  if (!space.value_cases || task.dtype == DType::fp8) return;
  SplitMix r{rng.state ^ fnv1a("value_cases")};
  const std::vector<std::string>& kinds = value_kinds();
  for (size_t k = 0; k < kinds.size(); ++k) {
    const std::string& kind = kinds[k];
    const std::string inputs = kind == "small_sink" ? "attention_sink" : "normal";
    Shape s;
    s.batch = 2;
    s.heads_q = 4;
    s.heads_kv = 4 >> r.below(3);  // MHA, GQA 2, MQA
    s.head_dim = task.head_dim;
    s.seq_kv = r.uniform(kValueCaseMinKeys, kValueCaseMaxKeys);
    const bool decode = !task.causal && k % 2 == 1;
    const int decode_rows = r.uniform(1, kSharedDecodeRows);
    s.seq_q = decode ? decode_rows : s.seq_kv;
    s.layout = r.below(2) != 0 ? Layout::bshd : Layout::bhsd;
    const uint32_t seed = uint32_t(r.next());
    const auto in = gates.distributions.find(inputs);
    if (in == gates.distributions.end() || !rows.fits(s, "")) continue;
    CaseSpec c;
    c.shape = s;
    c.layout = s.layout == Layout::bshd ? "bshd" : "bhsd";  // plain: every tensor 256-byte aligned, no gaps
    c.seed = seed;
    c.scale = 1 / std::sqrt(double(s.head_dim));
    set_inputs(c, in->second, in->second.v_mean);
    c.massive_sampled = kind.rfind("massive_", 0) == 0;  // its narrow channels (massive_channel_fills)
    c.values = kind;
    c.junk = "finite";
    const char* diag = s.seq_q < s.seq_kv ? "lt" : s.seq_q == s.seq_kv ? "eq" : "gt";
    c.id = fmt::format(
        "{}{}/{}/sq={}/skv={}/diag={}/batch={}/heads={}/{}/ratio={}/layout={}/align=256/junk={}/scale=1/sqrt(D)/{}/"
        "values={}",
        prefix, out.size(), s.dims(), length_class_name(space, s.seq_q), length_class_name(space, s.seq_kv), diag,
        batch_class_name(space, s.batch), s.heads_q, s.heads_kv, head_class_of(space, s.heads_q, s.heads_kv), c.layout,
        c.junk, c.inputs, kind);
    out.push_back(c);
  }
}

}  // namespace evo
