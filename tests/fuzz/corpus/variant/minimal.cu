/*evo
{
  "summary": "a seed for the fuzzer",
  "parent": "0-baseline/wmma_scalar_pv",
  "params": {"BLOCK_M": [64, 32], "BLOCK_N": [64, 32], "NWARPS": [4]},
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 80,
  "notes": "text"
}
*/
#include "evo_attn.cuh"
